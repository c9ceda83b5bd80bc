import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { resolveChunkConfig, type ChunkConfig, type ChunkParams } from './chunking.js';
import { currentEmbedder } from './embedder.js';
import { dropHnswIndexes } from './hnsw.js';
import { hybridSearch, type SearchHit } from './search.js';
import { detectedVectorBackend, logDocumentChanged, vectorBackend } from './vectors.js';
import {
  configOf,
  createIndex,
  findDocument,
  findIndex,
  indexStats,
  ingestDocument,
  lockResolvedIndex,
  onCurrentIndex,
  requireIndex,
  sql,
  trimSlashes,
  type IndexRow,
} from './store.js';
import { activeProviders } from '../llm/active-provider.js';
import { LlmError } from '../llm/client.js';
import { BadRequestError, ConflictError, LlmFailureError, NotFoundError } from '../errors.js';
import { DocumentIndexCodes } from './error-codes.js';

export interface Ctx {
  em: EntityManager;
  config: AppConfig;
  tenant: string;
  /**
   * The index names SEARCH and ASK may read (an agent's knowledge bases, read per call); undefined: every
   * index of the tenant (a person's view). A name outside it answers as an unknown index.
   */
  indexScope?: ReadonlySet<string>;
}

export const chunkConfigOrRefuse = (defaults: ChunkConfig | null, call: ChunkParams): ChunkConfig => {
  const r = resolveChunkConfig(defaults, call);
  if ('error' in r) throw new BadRequestError(r.error, { reason: 'invalid_chunk_parameters' });
  return r.config;
};

/** Spec: Git-backed knowledge-base documents change only through propose_kb_edit. */
export function managedRepoGuard(what: string, index: string, path?: string): never {
  throw new ConflictError(
    `${what} refused: ${path ? `"${path}" is` : `the index "${index}" holds`} a Git-backed knowledge-base document; change it through its repository.`,
    {
      code: DocumentIndexCodes.managed_repo_guard,
      managed_document_repo: true,
      index_name: index,
      ...(path ? { filepath: path } : {}),
      next_steps: [
        'Stage the change with the _document_index action propose_kb_edit (source_id_or_index, relative_path, content or search/replace).',
        'Then open_kb_pull_request to push it for review; the index follows the repository after the merge and sync.',
      ],
    },
  );
}

export async function createIndexAction(c: Ctx, name: string, params: ChunkParams) {
  const given = params.chunk_size != null || params.chunk_overlap != null || params.chunk_strategy != null;
  const config = given ? chunkConfigOrRefuse(null, params) : null;
  await createIndex(c.em, c.tenant, name, config ?? { chunk_size: null, chunk_overlap: null, chunk_strategy: null });
  return { Success: true, index_name: name, ...(config ? { chunk_config: config } : {}) };
}

export async function renameIndexAction(c: Ctx, name: string, next: string) {
  const index = await requireIndex(c.em, c.tenant, name);
  if (index.managed_source_id) managedRepoGuard('RENAME_INDEX', name);
  if (await findIndex(c.em, c.tenant, next))
    throw new ConflictError(`A document index named "${next}" already exists.`, { index_name: next });
  // Knowledge bases bundle indexes by name: they follow the rename in the same statement.
  const rows = await sql(
    c.em,
    `with renamed as (
       update doc_indexes set name = ? where id = ? and not exists (select 1 from doc_indexes where tenant = ? and name = ?)
       returning id),
     bundles as (
       update knowledge_bases set index_names = array_replace(index_names, ?, ?), updated_at = now()
        where tenant = ? and ? = any(index_names) and exists (select 1 from renamed))
     select id from renamed`,
    [next, index.id, c.tenant, next, name, next, c.tenant, name],
  );
  if (!rows.length) throw new ConflictError(`A document index named "${next}" already exists.`, { index_name: next });
  return { Success: true, index_name: next, previous_name: name };
}

/**
 * Deletes every physical copy: the vectors of each collection, then chunks, documents and the index row,
 * in one transaction; then checks that nothing survives. Anything left is named (retry).
 */
export async function deleteIndexAction(c: Ctx, name: string) {
  const index = await onCurrentIndex(async () => {
    const index = await requireIndex(c.em, c.tenant, name);
    if (index.managed_source_id) managedRepoGuard('DELETE_INDEX', name);
    await c.em.fork().transactional(async (tx) => {
      await lockResolvedIndex(tx, index);
      await sql(tx, 'delete from doc_embeddings where index_id = ?', [index.id]);
      await sql(tx, 'delete from doc_indexes where id = ?', [index.id]);
      // A later index of the same name is not silently in the old bundles.
      await sql(
        tx,
        'update knowledge_bases set index_names = array_remove(index_names, ?), updated_at = now() where tenant = ? and ? = any(index_names)',
        [name, c.tenant, name],
      );
    });
    return index;
  });
  // pgvector's HNSW index of the index's rows, dropped after the commit (concurrently: no lock that stops
  // searches); during a build, by that build when it ends (this request does not wait minutes for it).
  await dropHnswIndexes(c.em, index.id, false);
  const surviving = await sql<{ collection: string }>(
    c.em,
    'select distinct collection from doc_embeddings where index_id = ? order by collection',
    [index.id],
  );
  const row = await sql(c.em, 'select 1 from doc_indexes where id = ?', [index.id]);
  if (surviving.length || row.length)
    return {
      Success: false,
      Error: `Index "${name}" was not fully deleted; surviving collections: ${[
        ...surviving.map((s) => s.collection),
        ...(row.length ? ['registry'] : []),
      ].join(', ')}. Retry DELETE_INDEX.`,
    };
  return { Success: true, Message: 'Index deleted successfully' };
}

export async function listIndicesAction(c: Ctx) {
  const embedder = await currentEmbedder(c.em, c.config, c.tenant);
  const stats = await indexStats(c.em, c.tenant, embedder.collection);
  return { Success: true, Indices: stats.map((s) => s.name), IndexDetails: stats };
}

export async function statsAction(c: Ctx) {
  const embedder = await currentEmbedder(c.em, c.config, c.tenant);
  return indexStats(c.em, c.tenant, embedder.collection);
}

export async function addTextAction(
  c: Ctx,
  indexName: string,
  text: string,
  metadata: Record<string, unknown> | undefined,
  params: ChunkParams,
) {
  const id = crypto.randomUUID();
  const name =
    typeof metadata?.filepath === 'string' && metadata.filepath.trim() ? trimSlashes(metadata.filepath) : `text/${id}`;
  // A rechunk swap while the write waited: chunked again with the new index's parameters, written there.
  const { index, r } = await onCurrentIndex(async () => {
    const index = await requireIndex(c.em, c.tenant, indexName);
    if (index.managed_source_id) managedRepoGuard('ADD_TEXT', indexName);
    const config = chunkConfigOrRefuse(configOf(index), params);
    const embedder = await currentEmbedder(c.em, c.config, c.tenant);
    const r = await ingestDocument(
      c.em,
      index,
      { id, path: name, kind: 'text', content: text, metadata },
      config,
      embedder,
    );
    return { index, r };
  });
  if (r.status !== 'unchanged') await cachedSetsCaughtUp(c, index.id);
  return {
    Success: true,
    file_id: r.file_id,
    filepath: r.filepath,
    chunks: r.chunks,
    status: r.status,
    Warnings: r.warnings,
  };
}

export async function listDocumentsAction(
  c: Ctx,
  a: {
    index_name: string;
    path_filter?: string;
    query?: string;
    show_files_only: boolean;
    start: number;
    count: number;
  },
) {
  const index = await requireIndex(c.em, c.tenant, a.index_name);
  const where = ['d.index_id = ?'];
  const params: unknown[] = [index.id];
  if (a.path_filter) {
    const like = a.path_filter.replace(/[\\%_]/g, (m) => `\\${m}`).replace(/\*/g, '%');
    where.push(a.path_filter.includes('*') ? 'd.path ilike ?' : "d.path ilike '%' || ? || '%'");
    params.push(like);
  }
  if (a.query) {
    where.push("(d.path ilike '%' || ? || '%' or d.content ilike '%' || ? || '%')");
    const q = a.query.replace(/[\\%_]/g, (m) => `\\${m}`);
    params.push(q, q);
  }
  const from = a.show_files_only
    ? `from doc_documents d where ${where.join(' and ')}`
    : `from doc_chunks c join doc_documents d on d.id = c.document_id where ${where.join(' and ')}`;
  const total = Number((await sql<{ n: string }>(c.em, `select count(*) as n ${from}`, params))[0]!.n);
  const rows = a.show_files_only
    ? await sql(
        c.em,
        `select d.id, d.path, d.kind, d.chunk_count, d.metadata, d.created_at, length(d.content) as chars,
            d.managed_source_id ${from} order by d.path, d.id offset ? limit ?`,
        [...params, a.start, a.count],
      )
    : await sql(
        c.em,
        `select d.id, d.path, c.seq, left(c.text, 200) as preview, length(c.text) as chars ${from}
           order by d.path, c.seq offset ? limit ?`,
        [...params, a.start, a.count],
      );
  const documents = rows.map((r) =>
    a.show_files_only
      ? {
          file_id: r.id,
          filepath: r.path,
          kind: r.kind,
          chunk_count: Number(r.chunk_count),
          chars: Number(r.chars),
          metadata: r.metadata,
          managed: r.managed_source_id != null,
          created_at: new Date(r.created_at as string).toISOString(),
        }
      : { file_id: r.id, filepath: r.path, chunk_index: Number(r.seq), chars: Number(r.chars), preview: r.preview },
  );
  const hasMore = a.start + documents.length < total;
  return {
    Success: true,
    TotalCount: total,
    start: a.start,
    count: a.count,
    actual_count: documents.length,
    has_more: hasMore,
    next_start: hasMore ? a.start + documents.length : null,
    ...(total === 0 ? { Message: 'No documents match.' } : {}),
    Documents: documents,
  };
}

/** The paging fields every read mode answers: asked for, returned, whether more follow, and the total. */
function page(start: number, count: number, returned: number, total: number) {
  return { count, actual_count: returned, has_more: start + returned < total, total };
}

export async function getDocumentAction(
  c: Ctx,
  a: {
    index_name: string;
    file_id?: string;
    filepath?: string;
    pagination_mode: 'lines' | 'chars' | null;
    start: number;
    count?: number;
  },
) {
  const index = await requireIndex(c.em, c.tenant, a.index_name);
  const doc = await findDocument(c.em, index, a);
  if (!doc) throw new NotFoundError(`No document ${a.file_id ?? a.filepath} in index "${a.index_name}".`);
  const content = doc.content as string;
  const base = {
    Success: true,
    file_id: doc.id,
    filepath: doc.path,
    pagination_mode: a.pagination_mode,
    start: a.start,
  };
  if (a.pagination_mode === 'lines') {
    const count = a.count ?? 100;
    const lines = content.split('\n');
    const slice = lines.slice(a.start, a.start + count);
    return { ...base, ...page(a.start, count, slice.length, lines.length), content: slice.join('\n') };
  }
  if (a.pagination_mode === 'chars') {
    const count = a.count ?? 10000;
    const slice = content.slice(a.start, a.start + count);
    return { ...base, ...page(a.start, count, slice.length, content.length), content: slice };
  }
  const count = a.count ?? 20;
  const chunks = await sql(
    c.em,
    'select seq, text from doc_chunks where document_id = ? order by seq offset ? limit ?',
    [doc.id, a.start, count],
  );
  const total = Number(doc.chunk_count);
  return {
    ...base,
    ...page(a.start, count, chunks.length, total),
    chunks: chunks.map((r) => ({ chunk_index: Number(r.seq), text: r.text })),
  };
}

export async function deleteDocumentAction(c: Ctx, a: { index_name: string; file_id?: string; filepath?: string }) {
  // Run again on a rechunked index: the document found first, by its path (the rebuilt index's ids are new).
  let target: { file_id?: string; filepath?: string } = a;
  const { index, doc } = await onCurrentIndex(async () => {
    const index = await requireIndex(c.em, c.tenant, a.index_name);
    const doc = await findDocument(c.em, index, target);
    if (!doc) throw new NotFoundError(`No document ${a.file_id ?? a.filepath} in index "${a.index_name}".`);
    if (doc.managed_source_id != null) managedRepoGuard('DELETE_DOCUMENT', a.index_name, doc.path as string);
    target = { filepath: doc.path as string };
    await c.em.fork().transactional(async (tx) => {
      await lockResolvedIndex(tx, index);
      await sql(tx, 'delete from doc_documents where id = ?', [doc.id]);
    });
    return { index, doc };
  });
  await cachedSetsCaughtUp(c, index.id);
  return { Success: true, file_id: doc.id, filepath: doc.path, Message: 'Document deleted.' };
}

export async function renameDocumentAction(c: Ctx, a: { index_name: string; filepath: string; new_filename: string }) {
  const { index, doc, old, next } = await onCurrentIndex(async () => {
    const index = await requireIndex(c.em, c.tenant, a.index_name);
    const doc = await findDocument(c.em, index, { filepath: a.filepath });
    if (!doc) throw new NotFoundError(`No document ${a.filepath} in index "${a.index_name}".`);
    if (doc.managed_source_id != null) managedRepoGuard('RENAME_DOCUMENT', a.index_name, doc.path as string);
    const old = doc.path as string;
    const cut = old.lastIndexOf('/');
    const next = cut >= 0 ? `${old.slice(0, cut + 1)}${a.new_filename}` : a.new_filename;
    const clash = await sql(c.em, 'select 1 from doc_documents where index_id = ? and path = ? and id <> ?', [
      index.id,
      next,
      doc.id,
    ]);
    if (clash.length)
      throw new ConflictError(`A document "${next}" already exists in index "${a.index_name}".`, { filepath: next });
    await c.em.fork().transactional(async (tx) => {
      await lockResolvedIndex(tx, index);
      await sql(
        tx,
        `update doc_documents set path = ?, metadata = metadata || jsonb_build_object('filename', ?::text) where id = ?`,
        [next, a.new_filename, doc.id],
      );
      // An API process caching the chunks' rows with their paths reads the new path with its next search's changes.
      await logDocumentChanged(tx, index.id, doc.id as string);
    });
    return { index, doc, old, next };
  });
  await cachedSetsCaughtUp(c, index.id);
  return { Success: true, file_id: doc.id, filepath: next, previous_filepath: old };
}

/**
 * After a write through this API, this process's cached vectors of the index caught up with it
 * (`ExactVectorBackend.afterWrite`), so the caller's next SEARCH costs what a warm one does. A process
 * whose backend is not detected yet has nothing cached; a failure here leaves the work to that search.
 */
async function cachedSetsCaughtUp(c: Ctx, indexId: string): Promise<void> {
  const backend = detectedVectorBackend();
  await (backend?.kind === 'exact' ? backend : backend?.cache)?.afterWrite(c.em, indexId).catch(() => undefined);
}

async function searchIndexes(c: Ctx, indexName: string | undefined, query: string, topN: number): Promise<SearchHit[]> {
  const scope = c.indexScope;
  if (indexName && scope && !scope.has(indexName))
    throw new NotFoundError(
      `No document index named "${indexName}" in this agent's knowledge bases (${scope.size ? [...scope].sort().join(', ') : 'none assigned'}).`,
      { index_name: indexName, knowledge_base_index_names: [...scope].sort() },
    );
  const all: IndexRow[] = indexName
    ? [await requireIndex(c.em, c.tenant, indexName)]
    : await sql<IndexRow>(c.em, `select * from doc_indexes where tenant = ? and state = 'active' order by name`, [
        c.tenant,
      ]);
  const indexes = scope ? all.filter((i) => scope.has(i.name)) : all;
  const embedder = await currentEmbedder(c.em, c.config, c.tenant);
  return hybridSearch(c.em, c.tenant, indexes, query, topN, embedder, await vectorBackend(c.em, c.config));
}

const embedFailure = (err: unknown): never => {
  if (err instanceof LlmError) throw new LlmFailureError(err.failure);
  throw err;
};

export async function searchAction(c: Ctx, indexName: string | undefined, query: string, topN: number) {
  const hits = await searchIndexes(c, indexName, query, topN).catch(embedFailure);
  return {
    Success: true,
    query,
    index_name: indexName ?? null,
    ranking: 'reciprocal rank fusion of PostgreSQL full-text rank and vector cosine (k = 60)',
    results: hits.map(({ text: _text, ...h }) => h),
  };
}

/**
 * ASK: retrieval from the named index (every index when none is named; an unknown one is refused as
 * SEARCH refuses it), then an answer from the active chat provider with numbered footnotes; without
 * one, an extractive answer made of the top passages, labelled as such. The model call is metered:
 * counted, its spend recorded, refused at the demo budget cap.
 */
export async function askAction(c: Ctx, indexName: string | undefined, query: string, topN: number) {
  const hits = await searchIndexes(c, indexName, query, topN).catch(embedFailure);
  const sources = hits.map((h, n) => ({
    n: n + 1,
    index_name: h.index_name,
    filepath: h.filepath,
    file_id: h.file_id,
    chunk_index: h.chunk_index,
    score: h.score,
    snippet: h.snippet,
  }));
  const footnotes = sources.map((s) => `[${s.n}] ${s.index_name}: ${s.filepath} (chunk ${s.chunk_index})`);
  if (!hits.length)
    return {
      Success: true,
      answer: 'No indexed passage matches the question.',
      answer_type: 'none',
      sources,
      footnotes,
    };
  const active = await activeProviders(c.config).resolve(c.em, c.tenant);
  if (active.source === 'none' || !active.client || !active.chatModel) {
    const passages = hits.slice(0, 3).map((h, n) => `${firstSentences(h.text)} [${n + 1}]`);
    return {
      Success: true,
      answer: `Extractive answer (no language-model provider is configured; these are the best-matching passages, not a written answer):\n${passages.join('\n')}`,
      answer_type: 'extractive',
      sources,
      footnotes,
    };
  }
  const context = hits.map((h, n) => `[${n + 1}] (${h.index_name}: ${h.filepath})\n${h.text}`).join('\n\n');
  try {
    const r = await active.chat(
      { em: c.em, tenant: c.tenant, purpose: 'ask' },
      [
        {
          role: 'system',
          content:
            'Answer the question only from the numbered sources. Cite each fact with its footnote number in square brackets, e.g. [1]. If the sources do not answer it, say so.',
        },
        { role: 'user', content: `Sources:\n${context}\n\nQuestion: ${query}` },
      ],
      [],
    );
    return { Success: true, answer: r.content ?? '', answer_type: 'generated', model: r.model, sources, footnotes };
  } catch (err) {
    return embedFailure(err);
  }
}

const firstSentences = (text: string) => {
  const s = text.slice(0, 400);
  return s.length < text.length ? `${s}…` : s;
};
