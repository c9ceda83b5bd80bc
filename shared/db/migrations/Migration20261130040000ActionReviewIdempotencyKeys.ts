import { Migration } from '@mikro-orm/migrations';

/**
 * Idempotency keys of proposal creates (`Idempotency-Key` on `POST /api/action-review/proposals`): the proposal
 * id a key names and the digest of the create it was first used for, claimed before anything else of the create
 * is written, so a concurrent create under the same key with another proposal is refused (409) before it writes.
 */
export class Migration20261130040000ActionReviewIdempotencyKeys extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table action_review_idempotency_keys (
      proposal_id uuid primary key,
      tenant text not null,
      request_digest text not null,
      created_at timestamptz not null default now()
    )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists action_review_idempotency_keys');
  }
}
