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
  DocumentFeedPr,
  DocumentFeedSummary,
} from '../../workflows/source-sync-definitions.js';
import { kbEditBranch } from './kb-edits.js';
import { excludedBy } from './ingest.js';
import { KB_EDIT_EXTENSIONS } from './kb-edits.js';
import {
  configOf,
  contentHash,
  lockIndex,
  lockResolvedIndex,
  onCurrentIndex,
  sql,
  SYSTEM_INDEXES,
  type IndexRow,
} from './store.js';

/**
 * A synced managed source's documents feed document indexes (issue 13). Rule: one index per
 * first-level folder of `documents_root` (default `docs`), named after the folder (`docs/guides/…` →
 * index `guides`); files directly under `documents_root` feed no index. A folder's files with the
 * knowledge-base extensions (`KB_EDIT_EXTENSIONS`), outside the source's `include`/`exclude` rules
 * and the ingestion exclusions, become Git-backed documents (`managed_source_id` set) whose path is
 * relative to `documents_root` (`guides/setup.md`, the `relative_path` propose_kb_edit takes).
 * An index of that name not fed by this source is not taken over silently: the folder is skipped and
 * counted in `name_conflict_count` (`requires_overwrite_ack`). A sync with `overwrite_indexes`
 * acknowledges that: an ordinary hand-made index (not a system index, not fed by another source) is
 * adopted — its documents replaced by the folder's, linked to the source, `adopted_at` recorded so
 * every later summary reports `adopted: true`. `pr` per index is the newest `kb.pull_request.v1`
 * proposal for this source changing a file under the folder.
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

/**
 * The index a folder feeds: found (fed by this source) or created linked to it; null on a name
 * conflict. With `overwrite` a conflicting ordinary index (active, fed by no source) is adopted:
 * under the index lock its documents are deleted (the feed then ingests the folder's) and it is
 * linked to the source with `adopted_at` set.
 */
async function indexForFolder(
  em: EntityManager,
  row: ManagedSourceRow,
  name: string,
  overwrite: boolean,
): Promise<IndexRow | null> {
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
  if (!index || index.state !== 'active') return null;
  if (index.managed_source_id === row.id) return index;
  if (!overwrite || index.managed_source_id !== null) return null;
  return em.fork().transactional(async (tx) => {
    await lockIndex(tx, index.id);
    const [taken] = await sql<IndexRow>(
      tx,
      `update doc_indexes set managed_source_id = ?, adopted_at = now()
        where id = ? and state = 'active' and managed_source_id is null returning *`,
      [row.id, index.id],
    );
    if (!taken) return null;
    await sql(tx, 'delete from doc_documents where index_id = ?', [index.id]);
    return taken;
  });
}

/** The newest knowledge-base pull request proposal of the source changing a file under `prefix`, or null. */
async function pullRequestFor(em: EntityManager, row: ManagedSourceRow, prefix: string): Promise<DocumentFeedPr> {
  const [pr] = await sql<{ proposal_id: string; status: string; url: string | null }>(
    em,
    `select p.proposal_id, p.status, p.execution_receipt ->> 'pr_url' as url
       from action_review_proposals p
      where p.tenant = ? and p.action_type = 'kb.pull_request.v1' and p.payload ->> 'source_id' = ?
        and exists (select 1 from jsonb_array_elements(p.payload -> 'files') f
                     where starts_with(f ->> 'path', ?) or starts_with(coalesce(f ->> 'previous_path', ''), ?))
      order by p.created_at desc, p.proposal_id desc
      limit 1`,
    [row.tenant, row.id, prefix, prefix],
  );
  return pr
    ? { proposal_id: pr.proposal_id, status: pr.status, url: pr.url, branch: kbEditBranch(pr.proposal_id) }
    : null;
}

/**
 * Plans the feed after a checkout: per folder finds or creates the index, removes the source's
 * documents whose files are gone, and lists the new or changed files for an ingestion child
 * workflow (the ingestion itself is idempotent per content hash). An index a rechunk swap replaced
 * while the plan waited for its lock: the plan runs again (`onCurrentIndex`; its removals are idempotent).
 */
export async function planDocumentFeed(
  em: EntityManager,
  config: AppConfig,
  row: ManagedSourceRow,
  input: { jobId: string; workdir: string; overwriteIndexes?: boolean },
): Promise<DocumentFeedPlan> {
  return onCurrentIndex(() => planFeedOnce(em, config, row, input));
}

async function planFeedOnce(
  em: EntityManager,
  config: AppConfig,
  row: ManagedSourceRow,
  input: { jobId: string; workdir: string; overwriteIndexes?: boolean },
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
    const index = await indexForFolder(em, row, folder, input.overwriteIndexes === true);
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
        await lockResolvedIndex(tx, index);
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
          chunkParams: {}, // the index's defaults, as each batch finds them
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
      ? [{ count: 0, total: 0, adopted: false }]
      : await sql<{ count: string; total: string; adopted: boolean }>(
          em,
          `select count(*) filter (where d.managed_source_id = ?) as count, count(d.id) as total,
                  bool_or(i.adopted_at is not null and i.managed_source_id = ?) as adopted
             from doc_indexes i left join doc_documents d on d.index_id = i.id
            where i.tenant = ? and i.name = ? and i.state = 'active'`,
          [row.id, row.id, row.tenant, f.index_name],
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
      pr: await pullRequestFor(em, row, prefix),
      adopted: counts?.adopted === true,
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
    await sql(
      tx,
      'update doc_indexes set managed_source_id = null, adopted_at = null where managed_source_id = ? and tenant = ?',
      [source.id, source.tenant],
    );
  });
}
