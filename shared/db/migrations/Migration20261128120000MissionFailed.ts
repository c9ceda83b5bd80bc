import { Migration } from '@mikro-orm/migrations';

/**
 * Mission status `failed` (issue 28): a phase that cannot run (no agent, agent gone, no model
 * provider, model failure) ends the mission `failed` with the reason in `closed_reason`, instead of
 * `completed` with goals met that nothing proved.
 */
export class Migration20261128120000MissionFailed extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table projects drop constraint projects_status_check');
    this.addSql(
      `alter table projects add constraint projects_status_check
       check (status in ('running', 'paused', 'completed', 'cancelled', 'closed', 'failed'))`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`update projects set status = 'closed' where status = 'failed'`);
    this.addSql('alter table projects drop constraint projects_status_check');
    this.addSql(
      `alter table projects add constraint projects_status_check
       check (status in ('running', 'paused', 'completed', 'cancelled', 'closed'))`,
    );
  }
}
