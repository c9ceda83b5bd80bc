import * as fs from 'node:fs';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import git from 'isomorphic-git';
import type { AppConfig } from '../config.js';
import { ManagedSourceEntity, type ManagedSourceRow } from '../db/entities/index.js';
import { BadRequestError, ConflictError, NotFoundError } from '../errors.js';
import { sql } from './store.js';

/**
 * Knowledge-base edits (issue 13): a Git-backed knowledge base (a managed source's `documents_root`)
 * changes only through its repository. `propose_kb_edit` stages a file per source and proposer in
 * `kb_staged_edits` (re-staging a path replaces it); `open_kb_pull_request` turns the staged files
 * into an Action Review proposal `kb.pull_request.v1` whose executor pushes a branch and opens the
 * pull request.
 */

/** Spec: the file types a knowledge-base edit may touch. */
export const KB_EDIT_EXTENSIONS = ['.md', '.yml', '.yaml', '.json', '.txt', '.csv'] as const;
export const KB_EDIT_MAX_CHARS = 1_000_000;

export type KbStatus = 'A' | 'M' | 'D' | 'R';

export interface StagedEdit {
  tenant: string;
  source_id: string;
  proposer: string;
  path: string;
  index_name: string | null;
  base_commit: string;
  status: KbStatus;
  previous_path: string | null;
  content: string;
  note: string;
}

export interface KbSource {
  row: ManagedSourceRow;
  /** `documents_root` relative to the repository root ('' for the root itself). */
  root: string;
  /** The index name the caller named, when it resolved through an index. */
  indexName: string | null;
  syncedCommit: string;
}

const gitdirOf = (config: AppConfig, sourceId: string) => path.join(config.managedSources.dir, sourceId, 'repo.git');

/**
 * `source_id_or_index`: a managed source id, or the name of a document index a managed source feeds.
 * The source must have been synced (its synced commit is what edits are based on).
 */
export async function resolveKbSource(em: EntityManager, tenant: string, ref: string): Promise<KbSource> {
  const name = ref.trim();
  if (!name)
    throw new BadRequestError('source_id_or_index is required: a managed source id or a Git-backed index name.', {
      reason: 'kb_source_required',
    });
  let row = await em.findOne(ManagedSourceEntity, { id: name, tenant }, { refresh: true });
  let indexName: string | null = null;
  if (!row) {
    const idx = await sql<{ managed_source_id: string | null }>(
      em,
      `select managed_source_id from doc_indexes where tenant = ? and name = ? and state = 'active'`,
      [tenant, name],
    );
    if (!idx.length)
      throw new NotFoundError(`No managed source or document index named "${name}".`, {
        reason: 'kb_source_not_found',
      });
    if (!idx[0]!.managed_source_id)
      throw new ConflictError(
        `The index "${name}" is not fed by a managed source; change its documents with ADD_DOCUMENTS, ADD_TEXT or DELETE_DOCUMENT.`,
        { reason: 'not_a_managed_index', index_name: name },
      );
    row = await em.findOne(ManagedSourceEntity, { id: idx[0]!.managed_source_id, tenant }, { refresh: true });
    if (!row)
      throw new NotFoundError(`The managed source feeding the index "${name}" no longer exists.`, {
        reason: 'kb_source_not_found',
      });
    indexName = name;
  }
  if (row.deletionState)
    throw new NotFoundError(`The managed source ${row.id} is being deleted.`, { reason: 'kb_source_not_found' });
  if (!row.syncedCommitSha)
    throw new ConflictError(`The managed source ${row.id} has not been synced yet; sync it before editing.`, {
      reason: 'source_not_synced',
      source_id: row.id,
    });
  const root = (row.settings.documents_root ?? 'docs').replace(/^\/+|\/+$/g, '');
  return { row, root, indexName, syncedCommit: row.syncedCommitSha };
}

const badPath = (message: string) => new BadRequestError(message, { reason: 'invalid_kb_path' });

/**
 * `relative_path` is relative to `documents_root` and lies under one of its first-level folders
 * (`guides/setup.md`, not `setup.md`); no `..`, `.` or empty segments, no backslashes or control
 * characters, one of the supported extensions. Answers the path inside the repository.
 */
export function repoPathFor(root: string, relativePath: string, field = 'relative_path'): string {
  const rel = relativePath.trim();
  if (!rel) throw badPath(`${field} is required (a file under a first-level folder of documents_root).`);
  // eslint-disable-next-line no-control-regex -- control characters are what a path may not hold
  if (/[\0-\x1f\\]/.test(rel)) throw badPath(`${field} may not hold backslashes or control characters.`);
  if (rel.startsWith('/')) throw badPath(`${field} is relative to documents_root; it may not start with "/".`);
  const segments = rel.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..'))
    throw badPath(`${field} may not hold "..", "." or empty segments.`);
  if (segments.length < 2)
    throw badPath(
      `${field} must lie under a first-level folder of documents_root ("${root || '/'}"), e.g. guides/${segments[0]}.`,
    );
  const ext = path.posix.extname(rel).toLowerCase();
  if (!(KB_EDIT_EXTENSIONS as readonly string[]).includes(ext))
    throw badPath(`${field} must end with one of ${KB_EDIT_EXTENSIONS.join(', ')}.`);
  return root ? `${root}/${rel}` : rel;
}

/** The file's text at the synced commit, or null when the commit has no such file. */
export async function fileAtCommit(
  config: AppConfig,
  sourceId: string,
  commit: string,
  repoPath: string,
): Promise<string | null> {
  try {
    const { blob } = await git.readBlob({ fs, gitdir: gitdirOf(config, sourceId), oid: commit, filepath: repoPath });
    return Buffer.from(blob).toString('utf8');
  } catch (err) {
    if ((err as { code?: string }).code === 'NotFoundError') {
      // Either the path is absent, or the synced commit itself is gone from the object store.
      try {
        await git.readCommit({ fs, gitdir: gitdirOf(config, sourceId), oid: commit });
      } catch {
        throw new ConflictError(
          `The managed source ${sourceId} has no local copy of its synced commit; sync it again before editing.`,
          { reason: 'source_not_synced', source_id: sourceId },
        );
      }
      return null;
    }
    throw err;
  }
}

const occurrences = (text: string, needle: string): number => {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
};

/** A short line summary: lines removed and added in the changed region (common head and tail lines kept). */
export function diffSummary(before: string | null, after: string): string {
  const b = before === null ? [] : before.split('\n');
  const a = after.split('\n');
  if (before === null) return `new file, +${a.length} line${a.length === 1 ? '' : 's'}`;
  let head = 0;
  while (head < b.length && head < a.length && b[head] === a[head]) head++;
  let tail = 0;
  while (tail < b.length - head && tail < a.length - head && b[b.length - 1 - tail] === a[a.length - 1 - tail]) tail++;
  const removed = b.length - head - tail;
  const added = a.length - head - tail;
  return `-${removed} +${added} lines (changed region starts at line ${head + 1})`;
}

export interface ProposeInput {
  relative_path: string;
  content: string;
  search: string;
  replace: string;
  note: string;
  /** `write` (default): add or change the file; `delete` it; `rename` it to `new_relative_path`. */
  operation?: 'write' | 'delete' | 'rename';
  new_relative_path?: string;
}

interface StagedRow {
  path: string;
  content: string;
  base_commit: string;
  status: KbStatus;
  previous_path: string | null;
}

/** The proposer's staged row for a path, and a staged rename away from it, both on the synced commit. */
async function stagedAround(em: EntityManager, tenant: string, proposer: string, source: KbSource, repoPath: string) {
  const rows = await sql<StagedRow>(
    em,
    `select path, content, base_commit, status, previous_path from kb_staged_edits
      where tenant = ? and source_id = ? and proposer = ? and (path = ? or previous_path = ?)`,
    [tenant, source.row.id, proposer, repoPath, repoPath],
  );
  const fresh = rows.filter((r) => r.base_commit === source.syncedCommit);
  return { own: fresh.find((r) => r.path === repoPath), renamedAway: fresh.find((r) => r.previous_path === repoPath) };
}

const renamedAwayError = (repoPath: string, to: string) =>
  new ConflictError(`${repoPath} is staged to be renamed to ${to}; stage changes to ${to} instead.`, {
    reason: 'kb_path_staged_rename',
    path: repoPath,
    renamed_to: to,
  });

/** The text a search/replace or whole-file content turns `current` into (`current` null: no such file). */
function applyChange(repoPath: string, current: string | null, input: ProposeInput): string {
  let next: string;
  if (input.search !== '') {
    if (current === null)
      throw new NotFoundError(`${repoPath} does not exist at the synced commit; give content to add it.`, {
        reason: 'kb_file_not_found',
        path: repoPath,
      });
    const n = occurrences(current, input.search);
    if (n !== 1)
      throw new ConflictError(
        n === 0
          ? `The search text does not occur in ${repoPath}.`
          : `The search text occurs ${n} times in ${repoPath}; it must occur exactly once (give more context).`,
        { reason: n === 0 ? 'search_not_found' : 'search_not_unique', path: repoPath, occurrences: n },
      );
    const at = current.indexOf(input.search);
    next = current.slice(0, at) + input.replace + current.slice(at + input.search.length);
  } else next = input.content;
  if (next.length > KB_EDIT_MAX_CHARS)
    throw new BadRequestError(`The edited file is larger than ${KB_EDIT_MAX_CHARS} characters.`, {
      reason: 'kb_edit_too_large',
    });
  return next;
}

const missingFile = (repoPath: string, what: string) =>
  new NotFoundError(`${repoPath} does not exist at the synced commit; there is nothing to ${what}.`, {
    reason: 'kb_file_not_found',
    path: repoPath,
  });

async function upsertStaged(
  em: EntityManager,
  tenant: string,
  proposer: string,
  source: KbSource,
  row: { path: string; status: KbStatus; previous_path: string | null; content: string; note: string },
): Promise<void> {
  await sql(
    em,
    `insert into kb_staged_edits (tenant, source_id, proposer, path, index_name, base_commit, status, previous_path, content, note)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     on conflict (tenant, source_id, proposer, path) do update set index_name = excluded.index_name,
       base_commit = excluded.base_commit, status = excluded.status, previous_path = excluded.previous_path,
       content = excluded.content, note = excluded.note, updated_at = now()`,
    [
      tenant,
      source.row.id,
      proposer,
      row.path,
      source.indexName,
      source.syncedCommit,
      row.status,
      row.previous_path,
      row.content,
      row.note,
    ],
  );
}

/**
 * Stages one file; answers the staged path, its status against the synced commit and a diff summary.
 * `write` stages `A`/`M` (a path staged as the target of a rename stays `R`); `delete` stages `D` for a
 * file of the synced commit; `rename` stages `R` at `new_relative_path` with `previous_path` (optionally
 * changing the text with `content` or `search`/`replace`) and drops what was staged at the old path.
 * Refusals write nothing.
 */
export async function proposeKbEdit(
  em: EntityManager,
  config: AppConfig,
  tenant: string,
  proposer: string,
  source: KbSource,
  input: ProposeInput,
) {
  const operation = input.operation ?? 'write';
  const repoPath = repoPathFor(source.root, input.relative_path);
  const newRel = (input.new_relative_path ?? '').trim();
  if (operation !== 'rename' && newRel)
    throw new BadRequestError('new_relative_path is only for operation "rename".', { reason: 'kb_edit_ambiguous' });
  if (input.content !== '' && input.search !== '')
    throw new BadRequestError('Give either non-empty content or non-empty search (with replace), not both.', {
      reason: 'kb_edit_ambiguous',
    });
  if (operation === 'delete' && (input.content !== '' || input.search !== '' || input.replace !== ''))
    throw new BadRequestError('A delete takes no content, search or replace.', { reason: 'kb_edit_ambiguous' });
  if (operation === 'write' && input.content === '' && input.search === '')
    throw new BadRequestError('Give non-empty content (the whole file) or non-empty search (with replace).', {
      reason: 'kb_edit_empty',
    });
  const newPath = operation === 'rename' ? renameTarget(source.root, repoPath, newRel) : null;
  const synced = await fileAtCommit(config, source.row.id, source.syncedCommit, repoPath);
  const around = await stagedAround(em, tenant, proposer, source, repoPath);
  if (around.renamedAway) throw renamedAwayError(repoPath, around.renamedAway.path);
  const base = {
    Success: true,
    staged: true,
    operation,
    source_id: source.row.id,
    base_commit: source.syncedCommit,
    next_steps: ['Call open_kb_pull_request to push the staged edits for review (Action Review).'],
  };

  if (operation === 'delete') {
    if (synced === null) throw missingFile(repoPath, 'delete');
    await upsertStaged(em, tenant, proposer, source, {
      path: repoPath,
      status: 'D',
      previous_path: null,
      content: '',
      note: input.note,
    });
    const lines = synced.split('\n').length;
    return {
      ...base,
      path: repoPath,
      relative_path: input.relative_path.trim(),
      status: 'D' as KbStatus,
      diff_summary: `deleted, -${lines} line${lines === 1 ? '' : 's'}`,
    };
  }

  if (operation === 'rename') {
    if (synced === null) throw missingFile(repoPath, 'rename');
    const target = newPath!;
    if ((await fileAtCommit(config, source.row.id, source.syncedCommit, target)) !== null)
      throw new ConflictError(`${target} already exists at the synced commit; a rename may not overwrite it.`, {
        reason: 'kb_file_exists',
        path: target,
      });
    const atTarget = await stagedAround(em, tenant, proposer, source, target);
    if (atTarget.own)
      throw new ConflictError(`${target} is already staged (${atTarget.own.status}); a rename may not overwrite it.`, {
        reason: 'kb_file_exists',
        path: target,
      });
    // Text changes staged for the old path travel with the rename.
    const current = around.own && around.own.status === 'M' ? around.own.content : synced;
    const next = input.content === '' && input.search === '' ? current : applyChange(repoPath, current, input);
    await em.transactional(async (tx) => {
      await sql(tx, `delete from kb_staged_edits where tenant = ? and source_id = ? and proposer = ? and path = ?`, [
        tenant,
        source.row.id,
        proposer,
        repoPath,
      ]);
      await upsertStaged(tx, tenant, proposer, source, {
        path: target,
        status: 'R',
        previous_path: repoPath,
        content: next,
        note: input.note,
      });
    });
    return {
      ...base,
      path: target,
      relative_path: newRel,
      previous_path: repoPath,
      status: 'R' as KbStatus,
      diff_summary: `renamed from ${repoPath}${next === synced ? ', content unchanged' : `, ${diffSummary(synced, next)}`}`,
    };
  }

  // A search applies to what the proposer already staged for the path (staged on this synced commit), else to the synced file.
  const own = around.own && around.own.status !== 'D' ? around.own : undefined;
  const current = own ? own.content : synced;
  const next = applyChange(repoPath, current, input);
  const renamedHere = own?.status === 'R' ? own.previous_path : null;
  const original = renamedHere ? await fileAtCommit(config, source.row.id, source.syncedCommit, renamedHere) : synced;
  if (!renamedHere && synced !== null && next === synced)
    throw new BadRequestError(`The change leaves ${repoPath} as it is at the synced commit; nothing to stage.`, {
      reason: 'kb_edit_no_change',
    });
  const status: KbStatus = renamedHere ? 'R' : synced === null ? 'A' : 'M';
  await upsertStaged(em, tenant, proposer, source, {
    path: repoPath,
    status,
    previous_path: renamedHere,
    content: next,
    note: input.note,
  });
  return {
    ...base,
    path: repoPath,
    relative_path: input.relative_path.trim(),
    ...(renamedHere ? { previous_path: renamedHere } : {}),
    status,
    diff_summary: diffSummary(original, next),
  };
}

/** `new_relative_path` of a rename: validated like `relative_path`, and another path. */
function renameTarget(root: string, repoPath: string, newRel: string): string {
  if (!newRel)
    throw new BadRequestError('new_relative_path is required for operation "rename".', { reason: 'invalid_kb_path' });
  const target = repoPathFor(root, newRel, 'new_relative_path');
  if (target === repoPath)
    throw new BadRequestError('new_relative_path names the same file; nothing to rename.', {
      reason: 'kb_edit_no_change',
    });
  return target;
}

/** The proposer's staged edits of a source (optionally those staged through `targetIndex`). */
export function stagedEdits(
  em: EntityManager,
  tenant: string,
  sourceId: string,
  proposer: string,
  targetIndex: string,
): Promise<StagedEdit[]> {
  return sql<StagedEdit>(
    em,
    `select tenant, source_id, proposer, path, index_name, base_commit, status, previous_path, content, note
       from kb_staged_edits where tenant = ? and source_id = ? and proposer = ? ${targetIndex ? 'and index_name = ?' : ''}
       order by path`,
    targetIndex ? [tenant, sourceId, proposer, targetIndex] : [tenant, sourceId, proposer],
  );
}

/** After the pull request opened: drops the staged files it carried (unless re-staged meanwhile). */
export async function clearStagedEdits(
  em: EntityManager,
  tenant: string,
  sourceId: string,
  proposer: string,
  files: ReadonlyArray<{ path: string; content: string }>,
): Promise<void> {
  for (const f of files)
    await sql(
      em,
      `delete from kb_staged_edits where tenant = ? and source_id = ? and proposer = ? and path = ? and content = ?`,
      [tenant, sourceId, proposer, f.path, f.content],
    );
}

/** The branch a knowledge-base pull request of proposal `proposalId` is pushed on. */
export const kbEditBranch = (proposalId: string) => `kb-edit/${proposalId}`;
