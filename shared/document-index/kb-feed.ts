import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import type { ManagedSourceRow } from '../db/entities/index.js';
import { gitignoreMatcher, listFiles } from '../managed-sources/git.js';
import { ingestWorkflowId } from '../../workflows/ingest-definitions.js';
import type {
  DocumentFeedIndexView,
  DocumentFeedPlan,
  DocumentFeedSummary,
} from '../../workflows/source-sync-definitions.js';
import { excludedBy } from './ingest.js';
import { KB_EDIT_EXTENSIONS } from './kb-edits.js';
import { configOf, contentHash, lockIndex, sql, SYSTEM_INDEXES, type IndexRow } from './store.js';

/**
 * A synced managed source's documents feed document indexes (issue 13). Rule: one index per
 * first-level folder of `documents_root` (default `docs`), named after the folder (`docs/guides/…` →
 * index `guides`); files directly under `documents_root` feed no index. A folder's files with the
 * knowledge-base extensions (`KB_EDIT_EXTENSIONS`), outside the source's `include`/`exclude` rules
 * and the ingestion exclusions, become Git-backed documents (`managed_source_id` set) whose path is
 * relative to `documents_root` (`guides/setup.md`, the `relative_path` propose_kb_edit takes).
 * An index of that name not fed by this source is never taken over: the folder is skipped and
 * counted in `name_conflict_count` (`requires_overwrite_ack`).
 */

/** Files per batch of the feed's ingestion (as ADD_DOCUMENTS of a directory). */
const FEED_BATCH = 10;
// eslint-disable-next-line no-control-regex -- the index-name rule of the tool (no slash or control character)
const VALID_NAME = /^[^\0-\x1f/]{1,200}$/;

const docsRootOf = (row: ManagedSourceRow) => (row.settings.documents_root ?? 'docs').replace(/^\/+|\/+$/g, '');

/** The source's document folders: first-level folder → files (relative to `documents_root`), sorted. */
async function documentFolders(row: ManagedSourceRow, workdir: string): Promise<Map<string, string[]>> {
  const root = docsRootOf(row);
  const abs = path.join(workdir, ...root.split('/').filter(Boolean));
  const folders = new Map<string, string[]>();
  const entries = await readdir(abs, { withFileTypes: true }).catch(() => []);
  const included = row.settings.include.length ? gitignoreMatcher(row.settings.include) : () => true;
  const excluded = gitignoreMatcher(row.settings.exclude);
  const repoPath = (rel: string) => (root ? `${root}/${rel}` : rel);
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (!e.isDirectory() || e.name.startsWith('.') || excludedBy(e.name + '/x')) continue;
    const files: string[] = [];
    for await (const f of listFiles(abs, e.name)) {
      const ext = path.extname(f).toLowerCase();
      if (!(KB_EDIT_EXTENSIONS as readonly string[]).includes(ext)) continue;
      if (excludedBy(f) || !included(repoPath(f)) || excluded(repoPath(f))) continue;
      files.push(f);
    }
    folders.set(e.name, files);
  }
  return folders;
}

/** The index a folder feeds: found (fed by this source) or created linked to it; null on a name conflict. */
async function indexForFolder(em: EntityManager, row: ManagedSourceRow, name: string): Promise<IndexRow | null> {
  if (!VALID_NAME.test(name) || SYSTEM_INDEXES.has(name)) return null;
  await sql(
    em,
    `insert into doc_indexes (id, tenant, name, state, managed_source_id) values (?, ?, ?, 'active', ?)
       on conflict (tenant, name) do nothing`,
    [randomUUID(), row.tenant, name, row.id],
  );
  const [index] = await sql<IndexRow>(em, `select * from doc_indexes where tenant = ? and name = ?`, [
    row.tenant,
    name,
  ]);
  return index && index.state === 'active' && index.managed_source_id === row.id ? index : null;
}

/**
 * Plans the feed after a checkout: per folder finds or creates the index, removes the source's
 * documents whose files are gone, and lists the new or changed files for an ingestion child
 * workflow (the ingestion itself is idempotent per content hash).
 */
export async function planDocumentFeed(
  em: EntityManager,
  config: AppConfig,
  row: ManagedSourceRow,
  input: { jobId: string; workdir: string },
): Promise<DocumentFeedPlan> {
  const plan: DocumentFeedPlan = {
    enabled: row.settings.scan_types_enabled.includes('document_indexes'),
    ingests: [],
    folders: [],
  };
  if (!plan.enabled) return plan;
  const root = docsRootOf(row);
  const absRoot = path.join(input.workdir, ...root.split('/').filter(Boolean));
  const { compactionInterval, compactionSleepS } = config.documentIndex;
  for (const [folder, files] of await documentFolders(row, input.workdir)) {
    const index = await indexForFolder(em, row, folder);
    if (!index) {
      plan.folders.push({ folder, index_name: folder, removed: 0, unchanged: 0, conflict: true });
      continue;
    }
    const docs = await sql<{ path: string; content_hash: string }>(
      em,
      'select path, content_hash from doc_documents where index_id = ? and managed_source_id = ?',
      [index.id, row.id],
    );
    const present = new Set(files);
    const gone = docs.filter((d) => !present.has(d.path)).map((d) => d.path);
    if (gone.length)
      await em.fork().transactional(async (tx) => {
        await lockIndex(tx, index.id);
        for (const p of gone)
          await sql(tx, 'delete from doc_documents where index_id = ? and managed_source_id = ? and path = ?', [
            index.id,
            row.id,
            p,
          ]);
      });
    const known = new Map(docs.map((d) => [d.path, d.content_hash]));
    const changed: string[] = [];
    for (const f of files) {
      const text = await readFile(path.join(absRoot, f), 'utf8').catch(() => null);
      if (text === null || known.get(f) !== contentHash(text)) changed.push(f);
    }
    plan.folders.push({
      folder,
      index_name: index.name,
      removed: gone.length,
      unchanged: files.length - changed.length,
      conflict: false,
    });
    if (changed.length)
      plan.ingests.push({
        indexName: index.name,
        workflowId: ingestWorkflowId(index.name, `source-sync-${input.jobId}`),
        input: {
          tenant: row.tenant,
          indexName: index.name,
          root: absRoot,
          files: changed,
          skipped: [],
          chunkConfig: configOf(index),
          batchSize: FEED_BATCH,
          checkpointInterval: compactionInterval,
          checkpointSleepMs: Math.round(compactionSleepS * 1000),
          managedSourceId: row.id,
        },
      });
  }
  return plan;
}

/** The spec's feed summary per index after the feed ran (`ingested`: per index name, from the child workflows). */
export async function documentFeedSummary(
  em: EntityManager,
  row: ManagedSourceRow,
  plan: DocumentFeedPlan,
  ingested: Record<string, number>,
): Promise<DocumentFeedSummary> {
  const root = docsRootOf(row);
  const indexes: DocumentFeedIndexView[] = [];
  for (const f of plan.folders) {
    const [counts] = f.conflict
      ? [{ count: 0, total: 0 }]
      : await sql<{ count: string; total: string }>(
          em,
          `select count(*) filter (where d.managed_source_id = ?) as count, count(d.id) as total
             from doc_indexes i left join doc_documents d on d.index_id = i.id
            where i.tenant = ? and i.name = ? and i.state = 'active'`,
          [row.id, row.tenant, f.index_name],
        );
    const prefix = `${root ? `${root}/` : ''}${f.folder}/`;
    const staged = await sql<{ path: string; proposer: string }>(
      em,
      `select path, proposer from kb_staged_edits where tenant = ? and source_id = ? and starts_with(path, ?)
        order by path, proposer`,
      [row.tenant, row.id, prefix],
    );
    const count = Number(counts?.count ?? 0);
    const total = Number(counts?.total ?? 0);
    indexes.push({
      index_name: f.index_name,
      folder: f.folder,
      count,
      index_doc_count: total,
      index_only_doc_count: total - count,
      pending_change_count: staged.length,
      proposer: staged[0]?.proposer ?? null,
      pr: null,
      adopted: false,
      name_conflict_count: f.conflict ? 1 : 0,
      requires_overwrite_ack: f.conflict,
      ingested: ingested[f.index_name] ?? 0,
      removed: f.removed,
      unchanged: f.unchanged,
    });
  }
  return {
    indexes,
    total_count: indexes.reduce((a, i) => a + i.count, 0),
    total_index_doc_count: indexes.reduce((a, i) => a + i.index_doc_count, 0),
    waiting: indexes.filter((i) => i.requires_overwrite_ack).length,
  };
}

/**
 * Deleting a source: the indexes it fed stay as ordinary indexes (`managed_source_id` cleared on the
 * indexes and their documents, so they can be changed or deleted with the tool); idempotent.
 */
export async function unlinkSourceIndexes(em: EntityManager, source: { id: string; tenant: string }): Promise<void> {
  await em.fork().transactional(async (tx) => {
    await sql(tx, 'update doc_documents set managed_source_id = null where managed_source_id = ? and tenant = ?', [
      source.id,
      source.tenant,
    ]);
    await sql(tx, 'update doc_indexes set managed_source_id = null where managed_source_id = ? and tenant = ?', [
      source.id,
      source.tenant,
    ]);
  });
}
