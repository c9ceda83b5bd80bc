import { Migration } from '@mikro-orm/migrations';

/**
 * Knowledge bases (issue 31, item 2): a named bundle of document-index names, assigned to agents. An
 * agent's `_document_index` SEARCH and ASK see only the indexes of its knowledge bases; the
 * assignment is read from here on every call, so a change is seen at once by every API process.
 */
export class Migration20261129220000KnowledgeBases extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table knowledge_bases (
      id text primary key,
      tenant text not null,
      name text not null,
      description text not null default '',
      index_names text[] not null default '{}',
      created_by text not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      constraint knowledge_bases_tenant_name_key unique (tenant, name)
    )`);
    this.addSql(`create table agent_knowledge_bases (
      tenant text not null,
      agent_id text not null,
      knowledge_base_id text not null references knowledge_bases (id) on delete cascade,
      assigned_by text not null,
      assigned_at timestamptz not null default now(),
      primary key (tenant, agent_id, knowledge_base_id)
    )`);
    this.addSql('create index agent_knowledge_bases_kb_idx on agent_knowledge_bases (knowledge_base_id)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists agent_knowledge_bases');
    this.addSql('drop table if exists knowledge_bases');
  }
}
