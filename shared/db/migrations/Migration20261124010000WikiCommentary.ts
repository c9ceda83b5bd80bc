import { Migration } from '@mikro-orm/migrations';

/** Team-wiki commentary (issue 12): Markdown comments on pages by qualified name; deletion is soft. */
export class Migration20261124010000WikiCommentary extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table wiki_comments (
      id text primary key,
      tenant text not null,
      qualified_name text not null,
      author_id text not null,
      author_name text not null,
      body_markdown text not null,
      created_at timestamptz not null,
      deleted_at timestamptz null
    )`);
    this.addSql('create index wiki_comments_page on wiki_comments (tenant, qualified_name, created_at)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists wiki_comments');
  }
}
