import { EntitySchema } from '@mikro-orm/core';

/**
 * A Markdown comment on a team-wiki page (issue 12). Pages live in Git; comments live here, keyed by
 * the page's qualified name. Deleting is soft: `deletedAt` is set and the body emptied.
 */
export interface WikiCommentRow {
  id: string;
  tenant: string;
  qualifiedName: string;
  authorId: string;
  authorName: string;
  bodyMarkdown: string;
  createdAt: Date;
  deletedAt: Date | null;
}

export const WikiCommentEntity = new EntitySchema<WikiCommentRow>({
  name: 'WikiCommentRow',
  tableName: 'wiki_comments',
  properties: {
    id: { type: 'string', primary: true },
    tenant: { type: 'string' },
    qualifiedName: { type: 'text' },
    authorId: { type: 'string' },
    authorName: { type: 'string' },
    bodyMarkdown: { type: 'text' },
    createdAt: { type: 'Date' },
    deletedAt: { type: 'Date', nullable: true },
  },
});
