import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { WikiCommentEntity, type WikiCommentRow } from '../db/entities/index.js';
import { toIso } from '../dates.js';
import { ForbiddenError, NotFoundError } from '../errors.js';
import { renderMarkdown } from './wiki-render.js';

/**
 * Commentary on team-wiki pages (table `wiki_comments`, keyed by the page's qualified name): listed
 * oldest first; deleting is soft (the body emptied) and only by the author.
 */
export function commentView(row: WikiCommentRow) {
  const deleted = row.deletedAt !== null;
  return {
    comment_id: row.id,
    qualified_name: row.qualifiedName,
    author: { id: row.authorId, display_name: row.authorName },
    body_markdown: deleted ? '' : row.bodyMarkdown,
    body_html: deleted ? '' : renderMarkdown(row.bodyMarkdown),
    created_at: toIso(row.createdAt),
    deleted,
    deleted_at: row.deletedAt ? toIso(row.deletedAt) : null,
  };
}

/** The page's comments, oldest first (the page is checked by the caller). */
export async function listComments(em: EntityManager, tenant: string, qualifiedName: string) {
  const rows = await em.find(
    WikiCommentEntity,
    { tenant, qualifiedName },
    { orderBy: { createdAt: 'asc', id: 'asc' } },
  );
  return rows.map(commentView);
}

/** Adds the principal's Markdown comment to a page (the page is checked by the caller). */
export async function addComment(em: EntityManager, principal: Principal, qualifiedName: string, body: string) {
  const row = em.create(WikiCommentEntity, {
    id: randomUUID(),
    tenant: principal.tenant,
    qualifiedName,
    authorId: principal.id,
    authorName: principal.displayName,
    bodyMarkdown: body,
    createdAt: new Date(),
    deletedAt: null,
  });
  await em.flush();
  return commentView(row);
}

/** Deletes the principal's own comment (soft; 403 for another's, 404 when not on that page). */
export async function deleteComment(em: EntityManager, principal: Principal, qualifiedName: string, id: string) {
  const row = await em.findOne(WikiCommentEntity, { id, tenant: principal.tenant, qualifiedName });
  if (!row) throw new NotFoundError(`No comment ${id} on wiki page ${qualifiedName}.`);
  if (row.authorId !== principal.id)
    throw new ForbiddenError('Only the author of a comment may delete it.', { author_only: true });
  if (!row.deletedAt) {
    row.deletedAt = new Date();
    row.bodyMarkdown = '';
    await em.flush();
  }
  return commentView(row);
}
