import { Migration } from '@mikro-orm/migrations';

/**
 * The awaiting-input view (issue 15, flat waiting cost) reads, per waiting status, the newest 501
 * open missions of a tenant in `updated_at desc, id` order. This partial index holds exactly the open
 * missions in that order, so each status is a bounded index range scan with no sort; it replaces
 * `projects_waiting_idx` (which lacked `id` and covered ended missions too).
 */
export class Migration20261126000400MissionWaitingIndex extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create index projects_waiting_open_idx on projects (tenant, waiting_state, updated_at desc, id)
       where status in ('running', 'paused')`,
    );
    this.addSql('drop index if exists projects_waiting_idx');
  }

  override async down(): Promise<void> {
    this.addSql('create index projects_waiting_idx on projects (tenant, waiting_state, updated_at desc)');
    this.addSql('drop index if exists projects_waiting_open_idx');
  }
}
