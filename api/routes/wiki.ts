import { z } from 'zod';
import { defineRoute, successEnvelope, type RouteContext } from '../http/route.js';
import { addComment, deleteComment, listComments } from '../../shared/managed-sources/wiki-comments.js';
import {
  checkWikiPage,
  wikiNeighbourhood,
  wikiPage,
  wikiSubgraphs,
  wikiTree,
} from '../../shared/managed-sources/wiki-pages.js';

const QualifiedName = z
  .string()
  .min(1)
  .max(1000)
  .describe('Qualified name: `<source_id>/<path under documents_root without extension>`');
const CommentId = z.string().regex(/^[0-9a-f-]{36}$/, 'a comment id');

const TreeNode = z
  .object({
    qualified_name: z.string(),
    kind: z.enum(['source', 'folder', 'page']),
    name: z.string(),
    title: z.string(),
    source_id: z.string(),
    has_children: z.boolean(),
  })
  .meta({ id: 'WikiTreeNode' });

const PageLink = z.object({ qualified_name: z.string(), title: z.string(), url: z.string() });

const PageView = z
  .object({
    qualified_name: z.string(),
    source_id: z.string(),
    source_name: z.string(),
    commit_sha: z.string().describe('The synced commit the page was read from'),
    path: z.string().describe('Path of the document in the repository'),
    title: z.string(),
    markdown: z.string(),
    html: z.string().describe('Rendered with markdown-it, sanitized (no scripts, event handlers or javascript: URLs)'),
    links: z.array(PageLink).describe('Pages of the wiki this page links to'),
    backlinks: z.array(PageLink).describe('Pages of the wiki linking to this page'),
  })
  .meta({ id: 'WikiPage' });

const SubgraphSummary = z.object({
  qualified_name: z.string(),
  source_id: z.string(),
  source_name: z.string(),
  commit_sha: z.string(),
  title: z.string(),
  page_count: z.number(),
  link_count: z.number(),
});

const SubgraphDocument = z
  .object({
    qualified_name: z.string().describe('The centre page'),
    source_id: z.string(),
    commit_sha: z.string(),
    nodes: z.array(
      z.object({
        qualified_name: z.string(),
        title: z.string(),
        relation: z.enum(['center', 'links_to', 'linked_from', 'both']),
      }),
    ),
    edges: z.array(z.object({ from: z.string(), to: z.string() })),
    markdown: z.string().describe('The generated neighbourhood document'),
    html: z.string(),
  })
  .meta({ id: 'WikiSubgraph' });

const CommentView = z
  .object({
    comment_id: z.string(),
    qualified_name: z.string(),
    author: z.object({ id: z.string(), display_name: z.string() }),
    body_markdown: z.string().describe('Empty once deleted'),
    body_html: z.string(),
    created_at: z.string(),
    deleted: z.boolean(),
    deleted_at: z.string().nullable(),
  })
  .meta({ id: 'WikiComment' });

const base = {
  tags: ['wiki'],
  access: { kind: 'authenticated' as const, permission: 'view_git' as const },
};
const UNAVAILABLE = 'A synced source’s working tree is missing or unreadable (`service_unavailable`)';
const pageParams = z.object({ qualified_name: QualifiedName });

/** The tenant whose wiki a request reads. */
const wikiOf = ({
  em,
  deps,
  principal,
}: Pick<RouteContext<unknown, unknown, unknown>, 'em' | 'deps' | 'principal'>) => ({
  em,
  config: deps.config,
  tenant: principal.tenant,
});

export const wikiRoutes = [
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/wiki/v1/tree',
    operationId: 'getWikiTree',
    summary: 'The wiki tree: sources at the top; with `parent`, the folders and pages under it',
    query: z.object({ parent: QualifiedName.optional().describe('A source id or a folder’s qualified name') }),
    responses: {
      200: {
        description: 'Children of the parent (sources without one)',
        schema: successEnvelope(z.object({ parent: z.string().nullable(), nodes: z.array(TreeNode) })),
      },
      404: { description: 'No such source or folder in the wiki' },
      503: { description: UNAVAILABLE },
    },
    handler: async (ctx) => ({ success: true, data: await wikiTree(wikiOf(ctx), ctx.query.parent) }),
  }),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/wiki/v1/subgraphs',
    operationId: 'listWikiSubgraphs',
    summary: 'The wiki’s subgraphs: each first-level folder of a source’s documents (root pages under the source)',
    responses: {
      200: {
        description: 'Subgraphs with their page and link counts',
        schema: successEnvelope(z.object({ subgraphs: z.array(SubgraphSummary) })),
      },
      503: { description: 'The documents cannot be enumerated (a synced source’s working tree is missing)' },
    },
    handler: async (ctx) => ({ success: true, data: await wikiSubgraphs(wikiOf(ctx)) }),
  }),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/wiki/v1/subgraph/*qualified_name_tail',
    operationId: 'getWikiSubgraph',
    summary: 'A generated document of a page’s neighbourhood (its links and backlinks)',
    params: z.object({
      qualified_name_tail: QualifiedName.describe('A qualified name, or its tail when that names one page'),
    }),
    responses: {
      200: { description: 'The neighbourhood document', schema: successEnvelope(SubgraphDocument) },
      404: { description: 'No page has that qualified name or tail' },
      409: { description: 'The tail names several pages; `payload.candidates` lists them' },
      503: { description: UNAVAILABLE },
    },
    handler: async (ctx) => ({
      success: true,
      data: await wikiNeighbourhood(wikiOf(ctx), ctx.params.qualified_name_tail),
    }),
  }),
  // Commentary routes come before the page route: `…/commentary` is not part of a page's name.
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/wiki/v1/pages/*qualified_name/commentary',
    operationId: 'listWikiCommentary',
    summary: 'Comments on a page, oldest first (deleted ones with an empty body_markdown)',
    params: pageParams,
    responses: {
      200: { description: 'Comments', schema: successEnvelope(z.object({ comments: z.array(CommentView) })) },
      404: { description: 'No such page' },
      503: { description: UNAVAILABLE },
    },
    handler: async (ctx) => {
      await checkWikiPage(wikiOf(ctx), ctx.params.qualified_name);
      const comments = await listComments(ctx.em, ctx.principal.tenant, ctx.params.qualified_name);
      return { success: true, data: { comments } };
    },
  }),
  defineRoute({
    ...base,
    method: 'post',
    path: '/api/wiki/v1/pages/*qualified_name/commentary',
    operationId: 'addWikiComment',
    summary: 'Add a Markdown comment to a page',
    params: pageParams,
    body: z.object({ body_markdown: z.string().min(1).max(20_000).regex(/\S/, 'not blank') }).strict(),
    successStatus: 201,
    responses: {
      201: { description: 'Created', schema: successEnvelope(CommentView) },
      404: { description: 'No such page' },
      503: { description: UNAVAILABLE },
    },
    handler: async (ctx) => {
      await checkWikiPage(wikiOf(ctx), ctx.params.qualified_name);
      return {
        success: true,
        data: await addComment(ctx.em, ctx.principal, ctx.params.qualified_name, ctx.body.body_markdown),
      };
    },
  }),
  defineRoute({
    ...base,
    method: 'delete',
    path: '/api/wiki/v1/pages/*qualified_name/commentary/:comment_id',
    operationId: 'deleteWikiComment',
    summary: 'Delete your own comment (soft: it stays listed with an empty body_markdown)',
    params: z.object({ qualified_name: QualifiedName, comment_id: CommentId }),
    responses: {
      200: { description: 'Deleted', schema: successEnvelope(CommentView) },
      403: { description: 'Only the comment’s author may delete it' },
      404: { description: 'No such comment on that page' },
    },
    handler: async ({ params, principal, em }) => ({
      success: true,
      data: await deleteComment(em, principal, params.qualified_name, params.comment_id),
    }),
  }),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/wiki/v1/pages/*qualified_name',
    operationId: 'getWikiPage',
    summary: 'A page at the synced commit: Markdown, sanitized HTML, links and backlinks',
    params: pageParams,
    responses: {
      200: { description: 'The page', schema: successEnvelope(PageView) },
      404: { description: 'No such page' },
      503: { description: UNAVAILABLE },
    },
    handler: async (ctx) => ({ success: true, data: await wikiPage(wikiOf(ctx), ctx.params.qualified_name) }),
  }),
];
