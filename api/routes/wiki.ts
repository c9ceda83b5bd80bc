import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { WikiCommentEntity, type WikiCommentRow } from '../../shared/db/entities/index.js';
import { toIso } from '../../shared/dates.js';
import { ConflictError, ForbiddenError, NotFoundError } from '../../shared/errors.js';
import { defineRoute, successEnvelope } from '../http/route.js';
import {
  buildWikiIndex,
  getPage,
  loadPage,
  loadSourcePages,
  resolveTail,
  wikiPageUrl,
  type LoadedPage,
  type WikiIndex,
} from '../../shared/managed-sources/wiki-documents.js';
import { renderMarkdown } from '../../shared/managed-sources/wiki-render.js';
import { ManagedSourceCodes } from '../../shared/managed-sources/error-codes.js';

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

function commentView(row: WikiCommentRow) {
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

const linkOf = (pages: Map<string, LoadedPage>, qn: string) => ({
  qualified_name: qn,
  title: pages.get(qn)?.title ?? qn,
  url: wikiPageUrl(qn),
});

async function titleOf(index: WikiIndex, qn: string): Promise<string> {
  return (await loadPage(index, getPage(index, qn))).title;
}

/** The neighbourhood of one page: the pages it links to and the pages linking to it, as a generated document. */
function neighbourhood(pages: Map<string, LoadedPage>, center: LoadedPage) {
  const out = center.links.filter((qn) => qn !== center.ref.qualifiedName);
  const inc = [...pages.values()]
    .filter((p) => p.ref.qualifiedName !== center.ref.qualifiedName && p.links.includes(center.ref.qualifiedName))
    .map((p) => p.ref.qualifiedName);
  const relation = (qn: string) =>
    out.includes(qn) && inc.includes(qn)
      ? ('both' as const)
      : out.includes(qn)
        ? ('links_to' as const)
        : ('linked_from' as const);
  const others = [...new Set([...out, ...inc])];
  const title = (qn: string) => pages.get(qn)?.title ?? qn;
  const item = (qn: string) => `- [${escapeText(title(qn))}](${wikiPageUrl(qn)})`;
  const lines = [
    `# Neighbourhood of ${escapeText(center.title)}`,
    '',
    `Centre: [${escapeText(center.title)}](${wikiPageUrl(center.ref.qualifiedName)}) (\`${center.ref.qualifiedName}\`)`,
    '',
    '## Links from this page',
    '',
    ...(out.length ? out.map(item) : ['_None._']),
    '',
    '## Pages linking here',
    '',
    ...(inc.length ? inc.map(item) : ['_None._']),
    '',
  ];
  const markdown = lines.join('\n');
  return {
    qualified_name: center.ref.qualifiedName,
    source_id: center.ref.source.sourceId,
    commit_sha: center.ref.source.commitSha,
    nodes: [
      { qualified_name: center.ref.qualifiedName, title: center.title, relation: 'center' as const },
      ...others.map((qn) => ({ qualified_name: qn, title: title(qn), relation: relation(qn) })),
    ],
    edges: [
      ...out.map((to) => ({ from: center.ref.qualifiedName, to })),
      ...inc.map((from) => ({ from, to: center.ref.qualifiedName })),
    ],
    markdown,
    html: renderMarkdown(markdown),
  };
}

/** Markdown-escapes text placed in a generated document. */
const escapeText = (s: string) => s.replace(/[\\`*_[\]<>#|]/g, (c) => `\\${c}`);

async function loadComment(em: Parameters<typeof buildWikiIndex>[0], tenant: string, qn: string, id: string) {
  const row = await em.findOne(WikiCommentEntity, { id, tenant, qualifiedName: qn });
  if (!row) throw new NotFoundError(`No comment ${id} on wiki page ${qn}.`);
  return row;
}

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
    handler: async ({ query, principal, deps, em }) => {
      const index = await buildWikiIndex(em, deps.config, principal.tenant);
      if (!query.parent) {
        const nodes = index.sources.map((s) => {
          const c = index.children.get(s.sourceId)!;
          return {
            qualified_name: s.sourceId,
            kind: 'source' as const,
            name: s.sourceId,
            title: s.name,
            source_id: s.sourceId,
            has_children: c.folders.size + c.pages.size > 0,
          };
        });
        return { success: true, data: { parent: null, nodes } };
      }
      const children = index.children.get(query.parent);
      if (!children) throw new NotFoundError(`No wiki folder ${query.parent}.`);
      const sourceId = query.parent.split('/')[0]!;
      const nodes = [];
      for (const qn of [...children.folders].sort()) {
        const name = path.posix.basename(qn);
        nodes.push({
          qualified_name: qn,
          kind: 'folder' as const,
          name,
          title: name,
          source_id: sourceId,
          has_children: true,
        });
      }
      for (const qn of [...children.pages].sort())
        nodes.push({
          qualified_name: qn,
          kind: 'page' as const,
          name: path.posix.basename(qn),
          title: await titleOf(index, qn),
          source_id: sourceId,
          has_children: false,
        });
      return { success: true, data: { parent: query.parent, nodes } };
    },
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
    handler: async ({ principal, deps, em }) => {
      const index = await buildWikiIndex(em, deps.config, principal.tenant);
      const subgraphs = [];
      for (const source of index.sources) {
        const pages = await loadSourcePages(index, source.sourceId);
        const groups = new Map<string, LoadedPage[]>();
        for (const p of pages.values()) {
          const segs = p.ref.relPath.split('/');
          const key = segs.length > 1 ? `${source.sourceId}/${segs[0]}` : source.sourceId;
          groups.set(key, [...(groups.get(key) ?? []), p]);
        }
        for (const [qn, members] of [...groups].sort(([a], [b]) => a.localeCompare(b)))
          subgraphs.push({
            qualified_name: qn,
            source_id: source.sourceId,
            source_name: source.name,
            commit_sha: source.commitSha,
            title: qn === source.sourceId ? source.name : path.posix.basename(qn),
            page_count: members.length,
            link_count: members.reduce((n, p) => n + p.links.length, 0),
          });
      }
      return { success: true, data: { subgraphs } };
    },
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
    handler: async ({ params, principal, deps, em }) => {
      const index = await buildWikiIndex(em, deps.config, principal.tenant);
      const { match, candidates } = resolveTail(index, params.qualified_name_tail);
      if (!match) {
        if (candidates.length > 1)
          throw new ConflictError(`Several wiki pages end with ${params.qualified_name_tail}; give more of the name.`, {
            code: ManagedSourceCodes.AMBIGUOUS_QUALIFIED_NAME,
            candidates,
          });
        throw new NotFoundError(`No wiki page ${params.qualified_name_tail}.`);
      }
      const pages = await loadSourcePages(index, match.source.sourceId);
      return { success: true, data: neighbourhood(pages, pages.get(match.qualifiedName)!) };
    },
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
    handler: async ({ params, principal, deps, em }) => {
      getPage(await buildWikiIndex(em, deps.config, principal.tenant), params.qualified_name);
      const rows = await em.find(
        WikiCommentEntity,
        { tenant: principal.tenant, qualifiedName: params.qualified_name },
        { orderBy: { createdAt: 'asc', id: 'asc' } },
      );
      return { success: true, data: { comments: rows.map(commentView) } };
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
    handler: async ({ params, body, principal, deps, em }) => {
      getPage(await buildWikiIndex(em, deps.config, principal.tenant), params.qualified_name);
      const row = em.create(WikiCommentEntity, {
        id: randomUUID(),
        tenant: principal.tenant,
        qualifiedName: params.qualified_name,
        authorId: principal.id,
        authorName: principal.displayName,
        bodyMarkdown: body.body_markdown,
        createdAt: new Date(),
        deletedAt: null,
      });
      await em.flush();
      return { success: true, data: commentView(row) };
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
    handler: async ({ params, principal, em }) => {
      const row = await loadComment(em, principal.tenant, params.qualified_name, params.comment_id);
      if (row.authorId !== principal.id)
        throw new ForbiddenError('Only the author of a comment may delete it.', { author_only: true });
      if (!row.deletedAt) {
        row.deletedAt = new Date();
        row.bodyMarkdown = '';
        await em.flush();
      }
      return { success: true, data: commentView(row) };
    },
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
    handler: async ({ params, principal, deps, em }) => {
      const index = await buildWikiIndex(em, deps.config, principal.tenant);
      const ref = getPage(index, params.qualified_name);
      const pages = await loadSourcePages(index, ref.source.sourceId);
      const page = pages.get(ref.qualifiedName) ?? (await loadPage(index, ref));
      const backlinks = [...pages.values()]
        .filter((p) => p.ref.qualifiedName !== ref.qualifiedName && p.links.includes(ref.qualifiedName))
        .map((p) => p.ref.qualifiedName);
      return {
        success: true,
        data: {
          qualified_name: ref.qualifiedName,
          source_id: ref.source.sourceId,
          source_name: ref.source.name,
          commit_sha: ref.source.commitSha,
          path: ref.source.root ? `${ref.source.root}/${ref.relPath}` : ref.relPath,
          title: page.title,
          markdown: page.markdown,
          html: page.html,
          links: page.links.map((qn) => linkOf(pages, qn)),
          backlinks: backlinks.map((qn) => linkOf(pages, qn)),
        },
      };
    },
  }),
];
