import { column, table, type Row } from './table.js';

/**
 * A Markdown comment on a team-wiki page (issue 12). Pages live in Git; comments live here, keyed by
 * the page's qualified name. Deleting is soft: `deletedAt` is set and the body emptied.
 */
export const WikiCommentEntity = table('WikiCommentRow', 'wiki_comments', {
  id: column.string().primary(),
  tenant: column.string(),
  qualifiedName: column.text(),
  authorId: column.string(),
  authorName: column.string(),
  bodyMarkdown: column.text(),
  createdAt: column.date(),
  deletedAt: column.date().nullable(),
});
export type WikiCommentRow = Row<typeof WikiCommentEntity>;
