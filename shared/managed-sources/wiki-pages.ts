import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { ConflictError, NotFoundError } from '../errors.js';
import {
  buildWikiIndex,
  getPage,
  loadPage,
  loadSourcePages,
  resolveTail,
  wikiPageUrl,
  type LoadedPage,
  type WikiIndex,
  type WikiSource,
} from './wiki-documents.js';
import { renderMarkdown } from './wiki-render.js';
import { ManagedSourceCodes } from './error-codes.js';

/**
 * Team-wiki reads (issue 12, part 3): the tree, the subgraphs, a page with its links and backlinks,
 * and a generated document of a page's neighbourhood. Pages are read by `wiki-documents.ts`.
 */
type Tenant = { em: EntityManager; config: AppConfig; tenant: string };

const indexOf = ({ em, config, tenant }: Tenant) => buildWikiIndex(em, config, tenant);

/** The pages of `pages` linking to `qn` (itself left out). */
function backlinksOf(pages: Map<string, LoadedPage>, qn: string): string[] {
  return [...pages.values()]
    .filter((p) => p.ref.qualifiedName !== qn && p.links.includes(qn))
    .map((p) => p.ref.qualifiedName);
}

const titleIn = (pages: Map<string, LoadedPage>, qn: string) => pages.get(qn)?.title ?? qn;

const linkOf = (pages: Map<string, LoadedPage>, qn: string) => ({
  qualified_name: qn,
  title: titleIn(pages, qn),
  url: wikiPageUrl(qn),
});

/** The wiki tree: the sources at the top; with `parent`, the folders then the pages under it. */
export async function wikiTree(t: Tenant, parent: string | undefined) {
  const index = await indexOf(t);
  if (!parent) return { parent: null, nodes: index.sources.map((s) => sourceNode(index, s)) };
  const children = index.children.get(parent);
  if (!children) throw new NotFoundError(`No wiki folder ${parent}.`);
  const source_id = parent.split('/')[0]!;
  const nodes = [];
  for (const qn of [...children.folders].sort()) {
    const name = path.posix.basename(qn);
    nodes.push({ qualified_name: qn, kind: 'folder' as const, name, title: name, source_id, has_children: true });
  }
  for (const qn of [...children.pages].sort()) {
    const title = (await loadPage(index, getPage(index, qn))).title;
    const name = path.posix.basename(qn);
    nodes.push({ qualified_name: qn, kind: 'page' as const, name, title, source_id, has_children: false });
  }
  return { parent, nodes };
}

function sourceNode(index: WikiIndex, s: WikiSource) {
  const c = index.children.get(s.sourceId)!;
  return {
    qualified_name: s.sourceId,
    kind: 'source' as const,
    name: s.sourceId,
    title: s.name,
    source_id: s.sourceId,
    has_children: c.folders.size + c.pages.size > 0,
  };
}

/** Each source's subgraphs: one per first-level folder of its documents (root pages under the source). */
export async function wikiSubgraphs(t: Tenant) {
  const index = await indexOf(t);
  const subgraphs = [];
  for (const source of index.sources) {
    const groups = new Map<string, LoadedPage[]>();
    for (const p of (await loadSourcePages(index, source.sourceId)).values()) {
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
  return { subgraphs };
}

/** A page at the synced commit: Markdown, sanitized HTML, its links and backlinks. */
export async function wikiPage(t: Tenant, qualifiedName: string) {
  const index = await indexOf(t);
  const ref = getPage(index, qualifiedName);
  const pages = await loadSourcePages(index, ref.source.sourceId);
  const page = pages.get(ref.qualifiedName) ?? (await loadPage(index, ref));
  return {
    qualified_name: ref.qualifiedName,
    source_id: ref.source.sourceId,
    source_name: ref.source.name,
    commit_sha: ref.source.commitSha,
    path: ref.source.root ? `${ref.source.root}/${ref.relPath}` : ref.relPath,
    title: page.title,
    markdown: page.markdown,
    html: page.html,
    links: page.links.map((qn) => linkOf(pages, qn)),
    backlinks: backlinksOf(pages, ref.qualifiedName).map((qn) => linkOf(pages, qn)),
  };
}

/** Fails with 404 unless the tenant's wiki has the page (a missing working tree: 503). */
export async function checkWikiPage(t: Tenant, qualifiedName: string): Promise<void> {
  getPage(await indexOf(t), qualifiedName);
}

/** The neighbourhood of the page a qualified name or its tail names (409 when the tail names several). */
export async function wikiNeighbourhood(t: Tenant, tail: string) {
  const index = await indexOf(t);
  const { match, candidates } = resolveTail(index, tail);
  if (!match) {
    if (candidates.length > 1)
      throw new ConflictError(`Several wiki pages end with ${tail}; give more of the name.`, {
        code: ManagedSourceCodes.AMBIGUOUS_QUALIFIED_NAME,
        candidates,
      });
    throw new NotFoundError(`No wiki page ${tail}.`);
  }
  const pages = await loadSourcePages(index, match.source.sourceId);
  return neighbourhood(pages, pages.get(match.qualifiedName)!);
}

/** The neighbourhood of one page: the pages it links to and the pages linking to it, as a generated document. */
function neighbourhood(pages: Map<string, LoadedPage>, center: LoadedPage) {
  const qn = center.ref.qualifiedName;
  const out = center.links.filter((l) => l !== qn);
  const inc = backlinksOf(pages, qn);
  const relation = (o: string) =>
    out.includes(o) && inc.includes(o)
      ? ('both' as const)
      : out.includes(o)
        ? ('links_to' as const)
        : ('linked_from' as const);
  const others = [...new Set([...out, ...inc])];
  const markdown = neighbourhoodMarkdown(pages, center, out, inc);
  return {
    qualified_name: qn,
    source_id: center.ref.source.sourceId,
    commit_sha: center.ref.source.commitSha,
    nodes: [
      { qualified_name: qn, title: center.title, relation: 'center' as const },
      ...others.map((o) => ({ qualified_name: o, title: titleIn(pages, o), relation: relation(o) })),
    ],
    edges: [...out.map((to) => ({ from: qn, to })), ...inc.map((from) => ({ from, to: qn }))],
    markdown,
    html: renderMarkdown(markdown),
  };
}

function neighbourhoodMarkdown(pages: Map<string, LoadedPage>, center: LoadedPage, out: string[], inc: string[]) {
  const item = (qn: string) => `- [${escapeText(titleIn(pages, qn))}](${wikiPageUrl(qn)})`;
  return [
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
  ].join('\n');
}

/** Markdown-escapes text placed in a generated document. */
const escapeText = (s: string) => s.replace(/[\\`*_[\]<>#|]/g, (c) => `\\${c}`);
