import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { sourcePaths } from './source-access.js';
import type { AppConfig } from '../config.js';
import { ManagedSourceEntity, type ManagedSourceRow } from '../db/entities/index.js';
import { NotFoundError, ServiceUnavailableError } from '../errors.js';
import { gitignoreMatcher, listFiles } from './git.js';
import { firstHeading, linkTokens, parseMarkdown, renderTokens } from './wiki-render.js';

/**
 * The team wiki is the Markdown documents under each managed source's `documents_root` (default
 * `docs`, as the sync's scan), read from the working tree the last sync left, so a page shows the
 * synced commit's text. A page's qualified name is `<source_id>/<path under the root, no extension>`;
 * a folder's is the same without a file; a source's is its id.
 */
export const PAGE_EXTENSIONS = /\.(md|markdown)$/i;
/** Larger files are not pages (the wiki renders documents, not data dumps). */
export const MAX_PAGE_BYTES = 1024 * 1024;
const WIKI_PREFIX = '/api/wiki/v1/pages/';

export interface WikiSource {
  sourceId: string;
  name: string;
  commitSha: string;
  /** Folder of the documents inside the checkout (absolute). */
  docsDir: string;
  /** `documents_root` relative to the repository root. */
  root: string;
}

export interface WikiPageRef {
  qualifiedName: string;
  source: WikiSource;
  /** Path under the documents root (`guides/setup.md`). */
  relPath: string;
}

export interface WikiIndex {
  sources: WikiSource[];
  pages: Map<string, WikiPageRef>;
  /** Qualified names of folders (sources included) → their direct children's qualified names. */
  children: Map<string, { folders: Set<string>; pages: Set<string> }>;
}

const stripExt = (p: string) => p.replace(PAGE_EXTENSIONS, '');

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Enumerates every page of the tenant's synced sources. A source that was synced but whose working
 * tree is gone or unreadable makes the wiki unavailable (503): answering a partial wiki would make
 * its pages silently vanish.
 */
export async function buildWikiIndex(em: EntityManager, config: AppConfig, tenant: string): Promise<WikiIndex> {
  const rows = await em.find(ManagedSourceEntity, { tenant }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  const index: WikiIndex = { sources: [], pages: new Map(), children: new Map() };
  for (const row of rows) {
    if (!row.syncedCommitSha) continue;
    await addSource(index, config, row);
  }
  return index;
}

async function addSource(index: WikiIndex, config: AppConfig, row: ManagedSourceRow): Promise<void> {
  const { workdir } = sourcePaths(config, row.id);
  if (!(await isDirectory(workdir)))
    throw new ServiceUnavailableError(
      'managed_source_checkout',
      `The wiki cannot enumerate its documents: the working tree of managed source ${row.id} is missing; sync the source again.`,
    );
  const root = (row.settings.documents_root ?? 'docs').replace(/^\/+|\/+$/g, '');
  const docsDir = path.join(workdir, ...root.split('/'));
  const source: WikiSource = { sourceId: row.id, name: row.name, commitSha: row.syncedCommitSha!, docsDir, root };
  index.sources.push(source);
  index.children.set(row.id, { folders: new Set(), pages: new Set() });
  if (!(await isDirectory(docsDir))) return;
  const included = row.settings.include.length ? gitignoreMatcher(row.settings.include) : () => true;
  const excluded = gitignoreMatcher(row.settings.exclude);
  let files: string[];
  try {
    files = [];
    for await (const f of listFiles(docsDir)) files.push(f);
  } catch {
    throw new ServiceUnavailableError(
      'managed_source_checkout',
      `The wiki cannot enumerate the documents of managed source ${row.id}; sync the source again.`,
    );
  }
  for (const rel of files) {
    if (!PAGE_EXTENSIONS.test(rel)) continue;
    const repoPath = root ? `${root}/${rel}` : rel;
    if (!included(repoPath) || excluded(repoPath)) continue;
    const info = await stat(path.join(docsDir, ...rel.split('/'))).catch(() => null);
    if (!info || info.size > MAX_PAGE_BYTES) continue;
    const qn = `${row.id}/${stripExt(rel)}`;
    if (index.pages.has(qn)) continue; // `a.md` wins over `a.markdown` (sorted order)
    index.pages.set(qn, { qualifiedName: qn, source, relPath: rel });
    const segments = stripExt(rel).split('/');
    let parent = row.id;
    for (let i = 0; i < segments.length - 1; i++) {
      const folder = `${parent}/${segments[i]}`;
      index.children.get(parent)!.folders.add(folder);
      if (!index.children.has(folder)) index.children.set(folder, { folders: new Set(), pages: new Set() });
      parent = folder;
    }
    index.children.get(parent)!.pages.add(qn);
  }
}

export function getPage(index: WikiIndex, qualifiedName: string): WikiPageRef {
  const page = index.pages.get(qualifiedName);
  if (!page) throw new NotFoundError(`No wiki page ${qualifiedName}.`);
  return page;
}

export async function readPageSource(page: WikiPageRef): Promise<string> {
  try {
    return await readFile(path.join(page.source.docsDir, ...page.relPath.split('/')), 'utf8');
  } catch {
    // The sync swapped the working tree between enumeration and read: the page is gone from this commit.
    throw new NotFoundError(`No wiki page ${page.qualifiedName}.`);
  }
}

/**
 * Resolves a link of a page to another page of the same source: relative paths (with or without
 * the extension), `/`-rooted paths from the documents root, and wiki URLs. Anything with a scheme,
 * a pure fragment or a path outside the documents root is not a wiki link.
 */
export function resolveLink(index: WikiIndex, page: WikiPageRef, href: string): string | null {
  if (href.startsWith(WIKI_PREFIX)) {
    const qn = safeDecode(href.slice(WIKI_PREFIX.length).split(/[?#]/)[0]!);
    return qn !== null && index.pages.has(qn) ? qn : null;
  }
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(href) || href.startsWith('//') || href.startsWith('#')) return null;
  const target = safeDecode(href.split(/[?#]/)[0]!);
  if (!target) return null;
  const base = target.startsWith('/') ? '' : path.posix.dirname(page.relPath);
  const joined = path.posix.normalize(path.posix.join('/', base, target)).slice(1);
  if (joined.startsWith('..') || joined === '') return null;
  const qn = `${page.source.sourceId}/${stripExt(joined).replace(/\/+$/, '')}`;
  return index.pages.has(qn) ? qn : null;
}

function safeDecode(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

export function wikiPageUrl(qualifiedName: string): string {
  return WIKI_PREFIX + qualifiedName.split('/').map(encodeURIComponent).join('/');
}

export interface LoadedPage {
  ref: WikiPageRef;
  markdown: string;
  title: string;
  links: string[];
  html: string;
}

/** Reads and renders a page; links to other pages are rewritten to their wiki URLs. */
export async function loadPage(index: WikiIndex, ref: WikiPageRef): Promise<LoadedPage> {
  const markdown = await readPageSource(ref);
  const tokens = parseMarkdown(markdown);
  const links: string[] = [];
  for (const link of linkTokens(tokens)) {
    const href = link.attrGet('href');
    if (!href) continue;
    const qn = resolveLink(index, ref, href);
    if (!qn) continue;
    if (!links.includes(qn)) links.push(qn);
    link.attrSet('href', wikiPageUrl(qn));
  }
  const title = firstHeading(tokens) ?? path.posix.basename(stripExt(ref.relPath));
  return { ref, markdown, title, links, html: renderTokens(tokens) };
}

/** Every page of one source loaded (titles and links): what backlinks and neighbourhoods are computed from. */
export async function loadSourcePages(index: WikiIndex, sourceId: string): Promise<Map<string, LoadedPage>> {
  const out = new Map<string, LoadedPage>();
  for (const ref of index.pages.values())
    if (ref.source.sourceId === sourceId) out.set(ref.qualifiedName, await loadPage(index, ref));
  return out;
}

/** Resolves the tail of a qualified name: the page whose name is the tail or ends with `/<tail>`. */
export function resolveTail(index: WikiIndex, tail: string): { match: WikiPageRef | null; candidates: string[] } {
  const exact = index.pages.get(tail);
  if (exact) return { match: exact, candidates: [tail] };
  const candidates = [...index.pages.keys()].filter((qn) => qn.endsWith(`/${tail}`));
  return { match: candidates.length === 1 ? index.pages.get(candidates[0]!)! : null, candidates };
}
