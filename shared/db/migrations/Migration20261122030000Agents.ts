import { Migration } from '@mikro-orm/migrations';

/**
 * The agent registry (built-in Eve and Adam are seeded per tenant on first use), and what the
 * gateway records on a thread: its origin tag, the caller's persona and goal.
 */
export class Migration20261122030000Agents extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table agents (
      id text primary key,
      tenant text not null,
      name text not null,
      description text null,
      instructions text not null,
      tool_groups jsonb not null default '[]',
      access jsonb not null default '{"roles": [], "users": []}',
      source text not null check (source in ('builtin', 'api', 'managed')),
      is_editable boolean not null default true,
      created_by text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`);
    this.addSql(`create unique index agents_tenant_name_idx on agents (tenant, lower(name))`);
    this.addSql(`alter table conversation_threads
      add column origin text null,
      add column caller_persona text null,
      add column caller_goal text null`);
  }

  override async down(): Promise<void> {
    this.addSql(
      'alter table conversation_threads drop column origin, drop column caller_persona, drop column caller_goal',
    );
    this.addSql('drop table if exists agents');
  }
}
