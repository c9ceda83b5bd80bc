import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 31 item 5: a long requested statement is stored by reference (spec, Errors:
 * `proposal_text_unavailable`): the text once in `action_review_statements` under its SHA-256, the
 * proposal naming it in `statement_ref`. Reads rejoin it; text that cannot be rejoined (missing, or no
 * longer matching its digest) refuses approval and a statement read with 409, and the proposal may
 * still be rejected.
 */
export class Migration20261129440100ActionReviewStatementRefs extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table action_review_statements (
      digest text primary key,
      text text not null,
      created_at timestamptz not null default now()
    )`);
    this.addSql('alter table action_review_proposals add column statement_ref text null');
  }

  override async down(): Promise<void> {
    this.addSql('alter table action_review_proposals drop column if exists statement_ref');
    this.addSql('drop table if exists action_review_statements');
  }
}
