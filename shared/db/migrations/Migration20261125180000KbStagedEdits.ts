import { Migration } from '@mikro-orm/migrations';

/**
 * Knowledge-base edits (issue 13): changes staged with `propose_kb_edit`, per managed source and
 * proposer, one row per path (re-staging a path replaces it), until `open_kb_pull_request`'s
 * proposal is executed and clears them.
 */
export class Migration20261125180000KbStagedEdits extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table kb_staged_edits (
      tenant text not null,
      source_id text not null,
      proposer text not null,
      path text not null,
      index_name text null,
      base_commit text not null,
      status text not null check (status in ('A', 'M', 'D', 'R')),
      previous_path text null,
      content text not null,
      note text not null default '',
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (tenant, source_id, proposer, path)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists kb_staged_edits');
  }
}
