import { Migration } from '@mikro-orm/migrations';

/**
 * An agent's knowledge-base assignments go with the agent: `agent_knowledge_bases.agent_id` now
 * references `agents (id)` on delete cascade. Rows left behind by agents deleted before this
 * migration are removed first (they could never be read: the routes 404 on a missing agent).
 */
export class Migration20261129990000AgentKnowledgeBasesCascade extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      'delete from agent_knowledge_bases a where not exists (select 1 from agents g where g.id = a.agent_id)',
    );
    this.addSql(`alter table agent_knowledge_bases add constraint agent_knowledge_bases_agent_fkey
      foreign key (agent_id) references agents (id) on delete cascade`);
    this.addSql('create index agent_knowledge_bases_agent_idx on agent_knowledge_bases (agent_id)');
  }

  override async down(): Promise<void> {
    this.addSql('drop index if exists agent_knowledge_bases_agent_idx');
    this.addSql('alter table agent_knowledge_bases drop constraint if exists agent_knowledge_bases_agent_fkey');
  }
}
