import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 28: every model call is recorded by the metered client, with what started it (`purpose`: thread
 * turn, ASK, wizard, skill, embedding, connection test), the `purpose` label of the model-call metrics.
 * Rows from before name thread turns by their thread; the rest cannot be told apart (`other`).
 */
export class Migration20261126002800LlmUsagePurpose extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table llm_usage add column purpose text not null default 'other'`);
    this.addSql(`update llm_usage set purpose = 'thread_turn' where thread_id is not null`);
    this.addSql(`alter table llm_usage alter column purpose drop default`);
  }

  override async down(): Promise<void> {
    this.addSql('alter table llm_usage drop column if exists purpose');
  }
}
