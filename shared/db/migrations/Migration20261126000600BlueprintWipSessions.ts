import { Migration } from '@mikro-orm/migrations';

/**
 * Blueprint work-in-progress sessions (issue 14): an edit session on one blueprint whose edits are
 * commits on the branch `wip/<session_id>` of the blueprint repository; `commit` applies them to the
 * working copy as one commit, `discard` drops them, and the workflow `blueprint-wip/<session_id>`
 * expires the session at `expires_at`. While one is `open`, rename and create_version import answer 409.
 */
export class Migration20261126000600BlueprintWipSessions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table blueprint_wip_sessions (
      session_id text primary key,
      blueprint_id text not null references blueprints (blueprint_id) on delete cascade,
      tenant text not null,
      opened_by text not null,
      base_commit text not null,
      status text not null default 'open' check (status in ('open', 'committed', 'discarded', 'expired')),
      note text null,
      edit_count integer not null default 0,
      expires_at timestamptz not null,
      closed_at timestamptz null,
      closed_by text null,
      commit_sha text null,
      created_at timestamptz not null default now()
    )`);
    this.addSql(
      `create index blueprint_wip_sessions_open on blueprint_wip_sessions (blueprint_id) where status = 'open'`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table blueprint_wip_sessions`);
  }
}
