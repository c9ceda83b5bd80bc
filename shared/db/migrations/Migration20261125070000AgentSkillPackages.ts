import { Migration } from '@mikro-orm/migrations';

/**
 * Imported agent-skill packages (issue 12): a managed source with scan type `skills` imports each
 * `skills/<skill_name>/SKILL.md` folder of its working tree. The files stay in the source's working
 * tree (`path`); the row names the package, its description (SKILL.md front matter), the commit and
 * a content hash of the folder. `removed_at` is a tombstone left by `DELETE /api/agent-skills/{name}`:
 * the package stays removed until the source changes that skill folder (another `content_hash`).
 */
export class Migration20261125070000AgentSkillPackages extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table agent_skill_packages (
      tenant text not null,
      name text not null,
      managed_source_id text not null references managed_sources(id) on delete cascade,
      path text not null,
      description text not null,
      commit_sha text not null,
      content_hash text not null,
      imported_at timestamptz not null,
      removed_at timestamptz null,
      removed_by text null,
      primary key (tenant, name)
    )`);
    this.addSql('create index agent_skill_packages_source_idx on agent_skill_packages (managed_source_id)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists agent_skill_packages');
  }
}
