import { Migration } from '@mikro-orm/migrations';

/**
 * Laptop mode (issue 18): coding CLIs found on the laptop's PATH (`POST /api/desktop/local-cli/detect`).
 * A candidate's id is derived from its name and path, so detecting again finds the same row; `state`
 * is `new` until imported (an agent-CLI code-agent backend, `command` its argv) or declined (detect
 * stops offering it).
 */
export class Migration20261126000300DesktopLocalClis extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table desktop_local_clis (
      id text primary key,
      name text not null,
      path text not null,
      version text,
      state text not null default 'new' check (state in ('new', 'imported', 'declined')),
      backend text not null default 'agent_cli',
      command jsonb not null,
      detected_at timestamptz not null,
      imported_at timestamptz,
      imported_by text,
      declined_at timestamptz,
      updated_at timestamptz not null default now()
    )`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table desktop_local_clis`);
  }
}
