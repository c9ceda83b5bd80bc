import { Migration } from '@mikro-orm/migrations';

/**
 * Decisions with an effect (issue 31, item 4). A Prover subject (a finding, a view, a disposition
 * package, a composite bundle, an improvement-docket entry) is registered by the first proposal that
 * names it, owned by its requester (a person) or its requesting agent (a bot); later Prover
 * proposals must be able to see it, and its state (the decisions executed on it) is readable by
 * them. An adopted learning names the agents it was adopted for (null: every agent of the tenant).
 */
export class Migration20261129220100ProverSubjects extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table prover_subjects (
      tenant text not null,
      kind text not null,
      subject_id text not null,
      owner_id text null,
      bot_id text null,
      created_by_proposal uuid null,
      created_at timestamptz not null default now(),
      primary key (tenant, kind, subject_id)
    )`);
    this.addSql('create index prover_decisions_subject_idx on prover_decisions (tenant, subject_id)');
    this.addSql('alter table adopted_learnings add column agent_ids text[] null');
    this.addSql('create index adopted_learnings_tenant_idx on adopted_learnings (tenant, adopted_at)');
  }

  override async down(): Promise<void> {
    this.addSql('drop index if exists adopted_learnings_tenant_idx');
    this.addSql('alter table adopted_learnings drop column if exists agent_ids');
    this.addSql('drop index if exists prover_decisions_subject_idx');
    this.addSql('drop table if exists prover_subjects');
  }
}
