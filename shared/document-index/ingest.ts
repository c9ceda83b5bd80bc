import { lstat, readdir, readFile, realpath } from 'node:fs/promises';
import { basename, join, sep } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { BadRequestError, NotFoundError } from '../errors.js';
import { type ChunkConfig, type ChunkParams, resolveChunkConfig } from './chunking.js';
import { currentEmbedder } from './embedder.js';
import {
  configOf,
  findIndex,
  ingestDocuments,
  onCurrentIndex,
  sql,
  type IndexRow,
  type IngestInput,
  type IngestOutcome,
} from './store.js';
import { pruneVectorLog } from './vectors.js';

const EXCLUDED_SEGMENTS = new Set(['__pycache__', 'node_modules', '.git', 'target', 'build', 'dist', '.venv', '.tox']);
const EXCLUDED_FILES: Array<[RegExp, string]> = [
  [/\.o$/, '*.o'],
  [/\.pyc$/, '*.pyc'],
  [/\.class$/, '*.class'],
  [/^\.DS_Store$/, '.DS_Store'],
];

/** Spec Limits, ingestion exclusions: the rule a path segment or file name matches, or null. */
export function excludedBy(relative: string): string | null {
  const segments = relative.split(/[\\/]/).filter(Boolean);
  for (const s of segments) if (EXCLUDED_SEGMENTS.has(s)) return s;
  const file = segments[segments.length - 1] ?? '';
  return EXCLUDED_FILES.find(([r]) => r.test(file))?.[1] ?? null;
}

export interface IngestPlan {
  /** The allowed root the paths are relative to. */
  root: string;
  directory: boolean;
  /** Files to ingest, relative to `root`, sorted. */
  files: string[];
  /** Excluded paths found while walking. */
  skipped: Array<{ filepath: string; reason: string }>;
}

/**
 * Resolves `filepath` (optionally `BOT_GIT:`-prefixed; relative paths against the first root) inside one
 * of the allowed roots (`PLATFORM_DOCUMENT_INDEX_ROOTS`, symlinks resolved) and lists what to ingest: a
 * file, or a directory walked recursively with excluded segments and files skipped. Naming an excluded
 * file explicitly is refused.
 */
export async function planIngestion(config: AppConfig, filepath: string): Promise<IngestPlan> {
  const raw = filepath.startsWith('BOT_GIT:') ? filepath.slice('BOT_GIT:'.length) : filepath;
  const roots = config.documentIndex.roots;
  const candidate = raw.startsWith('/') ? raw : join(roots[0] ?? '.', raw);
  let abs: string;
  try {
    abs = await realpath(candidate);
  } catch {
    throw new NotFoundError(`No file or directory at "${filepath}".`, { filepath });
  }
  let root: string | undefined;
  for (const r of roots) {
    const real = await realpath(r).catch(() => undefined);
    if (real && (abs === real || abs.startsWith(real + sep))) {
      root = real;
      break;
    }
  }
  if (!root)
    throw new BadRequestError(
      `"${filepath}" is outside the directories documents may be read from (PLATFORM_DOCUMENT_INDEX_ROOTS).`,
      { reason: 'outside_document_roots', filepath },
    );
  const rel = (p: string) => p.slice(root.length).replace(/^[\\/]+/, '');
  if (!(await lstat(abs)).isDirectory()) {
    const rule = excludedBy(rel(abs));
    if (rule)
      throw new BadRequestError(`"${filepath}" is excluded from ingestion (rule ${rule}).`, {
        reason: 'excluded_path',
        rule,
        filepath,
      });
    return { root, directory: false, files: [rel(abs)], skipped: [] };
  }
  const files: string[] = [];
  const skipped: IngestPlan['skipped'] = [];
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (EXCLUDED_SEGMENTS.has(e.name)) skipped.push({ filepath: rel(p) + '/', reason: `excluded (${e.name})` });
        else await walk(p);
      } else if (e.isFile()) {
        const rule = excludedBy(rel(p));
        if (rule) skipped.push({ filepath: rel(p), reason: `excluded (${rule})` });
        else files.push(rel(p));
      }
    }
  };
  await walk(abs);
  return { root, directory: true, files, skipped };
}

export interface IngestReport {
  added: Array<Omit<IngestOutcome, 'warnings'>>;
  skipped: Array<{ filepath: string; reason: string }>;
  warnings: string[];
}

/**
 * Ingests files (relative to `root`) into an index, each one document, idempotent per content hash:
 * a file already ingested with the same content is `unchanged` and writes nothing. Binary and empty
 * files and Git-backed knowledge-base documents are skipped with the reason.
 */
export async function ingestFiles(
  em: EntityManager,
  config: AppConfig,
  input: IngestFilesInput,
): Promise<IngestReport> {
  // A rechunk swap or deletion while the batch waited for the index: read again under the name's index now.
  return onCurrentIndex(() => ingestFilesInto(em, config, input));
}

interface IngestFilesInput {
  tenant: string;
  indexName: string;
  root: string;
  files: string[];
  /** The chunking the call resolved at its start (against the index's defaults then). */
  chunkConfig: ChunkConfig;
  /**
   * The call's own chunk parameters (`{}`: none, the index's defaults): resolved again against the index the
   * batch finds, whose defaults a rechunk swap may have changed since the call began, so its documents are
   * chunked as the index's others. Absent in the batches of workflows started before it (`chunkConfig` serves).
   */
  chunkParams?: ChunkParams;
  /** Set by a managed source's document feed: the documents are Git-backed (the guard does not apply). */
  managedSourceId?: string;
}

async function ingestFilesInto(em: EntityManager, config: AppConfig, input: IngestFilesInput): Promise<IngestReport> {
  const report: IngestReport = { added: [], skipped: [], warnings: [] };
  const index = await findIndex(em, input.tenant, input.indexName);
  if (!index) {
    for (const f of input.files) report.skipped.push({ filepath: f, reason: 'index no longer exists' });
    return report;
  }
  const chunking = chunkingFor(index, input);
  if (chunking.warning) report.warnings.push(chunking.warning);
  const embedder = await currentEmbedder(em, config, input.tenant);
  // Each file's skip reason, or its document; the documents are ingested together (one transaction).
  const results: Array<{ path: string; skip?: string; doc?: number }> = [];
  const docs: IngestInput[] = [];
  for (const path of input.files) {
    const skip = (reason: string) => results.push({ path, skip: reason });
    let bytes: Buffer;
    try {
      bytes = await readFile(join(input.root, path));
    } catch {
      skip('unreadable or removed');
      continue;
    }
    if (bytes.includes(0)) {
      skip('binary file');
      continue;
    }
    const content = bytes.toString('utf8');
    if (!content.trim()) {
      skip('empty file');
      continue;
    }
    const managed = input.managedSourceId
      ? []
      : await sql(em, 'select 1 from doc_documents where index_id = ? and path = ? and managed_source_id is not null', [
          index.id,
          path,
        ]);
    if (managed.length) {
      skip('managed_repo_guard (Git-backed knowledge-base document)');
      continue;
    }
    results.push({ path, doc: docs.length });
    docs.push({
      path,
      kind: 'file',
      content,
      metadata: { filename: basename(path) },
      ...(input.managedSourceId ? { managedSourceId: input.managedSourceId } : {}),
    });
  }
  const outcomes = await ingestDocuments(em, index, docs, chunking.config, embedder);
  for (const { path, skip, doc } of results) {
    if (skip) {
      report.skipped.push({ filepath: path, reason: skip });
      continue;
    }
    const r = outcomes[doc!]!;
    report.warnings.push(...r.warnings.map((w) => `${path}: ${w}`));
    if (r.status === 'unchanged') report.skipped.push({ filepath: path, reason: 'unchanged (same content hash)' });
    else report.added.push({ file_id: r.file_id, filepath: r.filepath, status: r.status, chunks: r.chunks });
  }
  return report;
}

/**
 * The chunking of a batch in `index`: the call's parameters over the index's defaults now. When the index's
 * defaults changed since the call began (a rechunk swap) and no longer accept the call's parameters (an
 * overlap not below the new size), the chunking the call resolved at its start, with a warning.
 */
function chunkingFor(index: IndexRow, input: IngestFilesInput): { config: ChunkConfig; warning?: string } {
  if (!input.chunkParams) return { config: input.chunkConfig };
  const r = resolveChunkConfig(configOf(index), input.chunkParams);
  if (!('error' in r)) return { config: r.config };
  return {
    config: input.chunkConfig,
    warning:
      `chunk parameters: the index's defaults changed while the call ran and no longer accept its parameters ` +
      `(${r.error}); chunked with the parameters resolved when the call began`,
  };
}

/**
 * The compaction checkpoint (spec Limits: every 50 documents, 0.5 s, up to 3 retries): PostgreSQL has
 * no compaction to run, so the checkpoint refreshes the planner statistics of the chunk and vector tables and of
 * the documents' index ids (ANALYZE), merges the full-text index's pending list (`gin_clean_pending_list`),
 * retried up to the limit, and prunes the vector change log (`pruneVectorLog`); the pause itself is the caller's
 * (a durable timer in the ingest workflow).
 */
export async function compactionCheckpoint(em: EntityManager, config: AppConfig): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      // The vectors' statistics too: without them pgvector's planner may rank by a scan instead of the HNSW index.
      // And the documents' index ids (statistics.ts): a new index's lookups by path planned for its size.
      // `skip_locked`: a table held by another session (an HNSW build holds `doc_embeddings` for minutes) is
      // left to the next checkpoint instead of holding this one.
      await sql(em, 'analyze (skip_locked) doc_chunks, doc_embeddings, doc_documents (index_id)');
      // New tsvectors wait in the GIN index's pending list, which every full-text query scans linearly.
      await sql(em, `select gin_clean_pending_list('doc_chunks_tsv'::regclass)`);
      await pruneVectorLog(em);
      return;
    } catch (err) {
      if (attempt >= config.documentIndex.compactionMaxRetries) throw err;
      await new Promise((r) => setTimeout(r, config.documentIndex.compactionSleepS * 1000));
    }
  }
}
