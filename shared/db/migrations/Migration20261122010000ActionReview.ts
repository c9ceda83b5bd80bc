import { Migration } from '@mikro-orm/migrations';

/**
 * Action Review projections (proposals, event trail, hand-backs), the tables internal action types
 * apply their effect to, and the conversation store (threads, messages) hand-backs are delivered into.
 */
export class Migration20261122010000ActionReview extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table conversation_threads (
      id text primary key,
      tenant text not null,
      bot_id text null,
      owner_id text null,
      visibility text not null default 'tenant' check (visibility in ('private', 'tenant')),
      title text null,
      created_at timestamptz not null default now()
    )`);
    this.addSql(`create table conversation_messages (
      id uuid primary key,
      thread_id text not null references conversation_threads (id) on delete cascade,
      role text not null,
      author_kind text not null,
      author_id text not null,
      content text not null,
      metadata jsonb not null default '{}',
      idempotency_key text null unique,
      created_at timestamptz not null default now()
    )`);
    this.addSql(`create index conversation_messages_thread_idx on conversation_messages (thread_id, created_at)`);
    this.addSql(`create table action_review_proposals (
      proposal_id uuid primary key,
      tenant text not null,
      action_type text not null,
      status text not null,
      version integer not null,
      payload jsonb not null,
      payload_digest text not null,
      expected_effect text not null,
      requested_statement text null,
      requester jsonb not null,
      requester_kind text not null,
      bot_id text null,
      thread_id text null,
      subject_kind text null,
      subject_id text null,
      execution_origin text not null,
      decided_by jsonb null,
      decision_reason text null,
      decided_at timestamptz null,
      claimed boolean not null default false,
      final_status text null,
      execution_receipt jsonb null,
      execution_refusal_reason text null,
      execution_refusal_detail text null,
      execution_error_detail text null,
      resolved_by jsonb null,
      resolution_note text null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`);
    this.addSql(`create index action_review_proposals_inbox_idx on action_review_proposals (tenant, created_at desc)`);
    this.addSql(`create index action_review_proposals_bot_idx on action_review_proposals (tenant, bot_id)`);
    this.addSql(`create table action_review_events (
      proposal_id uuid not null references action_review_proposals (proposal_id) on delete cascade,
      seq integer not null,
      type text not null,
      actor jsonb not null,
      reason text null,
      detail jsonb null,
      occurred_at timestamptz not null,
      primary key (proposal_id, seq)
    )`);
    this.addSql(`create table action_review_handbacks (
      proposal_id uuid primary key references action_review_proposals (proposal_id) on delete cascade,
      tenant text not null,
      thread_id text not null,
      decision text not null,
      reason text null,
      decided_by_label text not null,
      status text not null default 'pending' check (status in ('pending', 'delivered')),
      attempts integer not null default 0,
      last_error text null,
      message_id uuid null,
      created_at timestamptz not null,
      delivered_at timestamptz null
    )`);
    this.addSql(
      `create index action_review_handbacks_pending_idx on action_review_handbacks (created_at) where status = 'pending'`,
    );
    this.addSql(`create table adopted_learnings (
      proposal_id uuid primary key,
      tenant text not null,
      learning_id text not null,
      title text not null,
      content text not null,
      adopted_by text not null,
      adopted_at timestamptz not null default now()
    )`);
    this.addSql(`create table prover_decisions (
      proposal_id uuid primary key,
      tenant text not null,
      action_type text not null,
      subject_id text not null,
      decision jsonb not null,
      decided_by text not null,
      decided_at timestamptz not null default now()
    )`);
  }

  override async down(): Promise<void> {
    for (const table of [
      'prover_decisions',
      'adopted_learnings',
      'action_review_handbacks',
      'action_review_events',
      'action_review_proposals',
      'conversation_messages',
      'conversation_threads',
    ]) {
      this.addSql(`drop table if exists ${table}`);
    }
  }
}
