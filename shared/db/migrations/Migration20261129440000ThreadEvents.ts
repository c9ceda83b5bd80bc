import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 31 item 6: a thread's turn events (the user's message, model output as it arrives, tool results,
 * the turn's end or its `llm_failure`), written by the worker and read by any API process to serve
 * `GET /api/threads/{thread_id}/events` (Server-Sent Events). `seq` is the event id, monotonic per thread:
 * it comes from the thread's counter row, locked until the event commits, so events commit in id order
 * and a reader that asks for ids above the last it saw never skips one. `key` makes a retried write a no-op.
 */
export class Migration20261129440000ThreadEvents extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table thread_event_counters (
      thread_id text primary key references conversation_threads (id) on delete cascade,
      last_seq bigint not null
    )`);
    this.addSql(`create table thread_events (
      thread_id text not null references conversation_threads (id) on delete cascade,
      seq bigint not null,
      key text not null,
      turn_id text not null,
      kind text not null,
      data jsonb not null,
      created_at timestamptz not null default now(),
      primary key (thread_id, seq),
      unique (thread_id, key)
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists thread_events');
    this.addSql('drop table if exists thread_event_counters');
  }
}
