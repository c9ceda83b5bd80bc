import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../shared/config.js';
import { ManagedSourceEntity, ManagedSourceSyncJobEntity, type ManagedSourceRow } from '../shared/db/entities/index.js';
import {
  authHeaders,
  classifyGitError,
  egressGitHttp,
  fetchRef,
  gitignoreMatcher,
  listFiles,
  materializeCheckout,
  resolveRemoteRef,
  rulesHash,
  workingTreeExists,
  type GitCredentials,
  type ResolvedRef,
} from '../shared/managed-sources/git.js';
import { refreshKeyring, secretBox } from '../shared/secrets/secret-box.js';
import type { SourceSyncInput, SourceSyncResult } from '../workflows/source-sync-definitions.js';
import { withHeartbeat } from './heartbeat.js';

export interface CheckoutSummary {
  changed: boolean;
  files_checked_out: number;
  paths_excluded: number;
}

export interface ScanSummary {
  files_scanned: number;
  candidates: Record<string, number>;
}

/** Where a source's object store and working tree live. */
export function sourcePaths(config: AppConfig, sourceId: string) {
  const root = path.join(config.managedSources.dir, sourceId);
  return { root, gitdir: path.join(root, 'repo.git'), workdir: path.join(root, 'checkout') };
}

/** The source's Git credentials, opened from the secret box (null when it has none). */
export async function openCredentials(
  em: EntityManager,
  config: AppConfig,
  row: ManagedSourceRow,
): Promise<GitCredentials | null> {
  if (!row.credentialsSealed || !row.credentialKind) return null;
  await refreshKeyring(em);
  const { secret } = JSON.parse(secretBox(config).open(row.credentialsSealed)) as { secret: string };
  return { kind: row.credentialKind, username: row.credentialUsername, secret };
}

function emptyResult(input: SourceSyncInput, row: ManagedSourceRow | null): SourceSyncResult {
  return {
    outcome: 'failed',
    source_id: input.sourceId,
    job_id: input.jobId,
    release_ref: row?.releaseRef ?? null,
    ref_kind: null,
    commit_sha: null,
    previous_commit_sha: row?.syncedCommitSha ?? null,
    files_checked_out: 0,
    paths_excluded: 0,
    files_scanned: 0,
    candidates: {},
    error_code: null,
    error: null,
    moved_tag: null,
  };
}

const hostOf = (url: string) => {
  try {
    return new URL(url).host;
  } catch {
    return 'the Git server';
  }
};

/** Git failures become ApplicationFailures typed by their code; only transient ones are retried. */
function toFailure(err: unknown, url: string): never {
  const g = classifyGitError(err, hostOf(url));
  throw g.retryable
    ? ApplicationFailure.retryable(g.message, g.code)
    : ApplicationFailure.nonRetryable(g.message, g.code);
}

/** Activities of the `source-sync` workflow. Each writes the job's phase first, so progress is readable. */
export function createManagedSourceActivities(deps: { orm: MikroORM; config: AppConfig }) {
  const http = () => egressGitHttp(deps.config.egress);

  async function load(em: EntityManager, input: SourceSyncInput): Promise<ManagedSourceRow> {
    const row = await em.findOne(ManagedSourceEntity, { id: input.sourceId, tenant: input.tenant });
    if (!row) throw ApplicationFailure.nonRetryable('The managed source was deleted during the sync.', 'SOURCE_GONE');
    return row;
  }

  async function setPhase(em: EntityManager, jobId: string, phase: string, filesScanned?: number): Promise<void> {
    await em.getConnection().execute(
      `update managed_source_sync_jobs set phase = ?, files_scanned = coalesce(?, files_scanned), updated_at = now()
         where job_id = ? and status = 'running'`,
      [phase, filesScanned ?? null, jobId],
    );
  }

  /** Ends the job (`complete`, or `error` for a failed outcome) and records the result on the source; idempotent. */
  async function finish(input: SourceSyncInput, result: SourceSyncResult, sourcePatch: Partial<ManagedSourceRow> = {}) {
    const em = deps.orm.em.fork();
    return em.transactional(async (tx) => {
      const job = await tx.findOne(ManagedSourceSyncJobEntity, { jobId: input.jobId });
      if (job && job.status !== 'running') return (job.result as unknown as SourceSyncResult) ?? result;
      const now = new Date();
      const source = await tx.findOne(ManagedSourceEntity, { id: input.sourceId, tenant: input.tenant });
      if (source) {
        Object.assign(source, sourcePatch, { lastSync: { ...result, finished_at: now.toISOString() }, updatedAt: now });
        if (result.moved_tag) {
          source.releasePoll = {
            ...(source.releasePoll ?? {}),
            checked_at: now.toISOString(),
            moved_tag: { ...result.moved_tag, detected_at: now.toISOString() },
          };
        } else if (result.outcome !== 'failed') {
          source.releasePoll = { ...(source.releasePoll ?? {}), checked_at: now.toISOString(), moved_tag: null };
        }
      }
      if (job) {
        job.status = result.outcome === 'failed' ? 'error' : 'complete';
        job.phase = 'done';
        job.filesScanned = result.files_scanned;
        job.result = result as unknown as Record<string, unknown>;
        job.error = result.error_code ? { code: result.error_code, message: result.error } : null;
        job.updatedAt = now;
        job.finishedAt = now;
      }
      return result;
    });
  }

  return {
    /** Lists the remote's refs and resolves `release_ref`; a moved release tag is a refusal (nothing applied). */
    async managedSyncResolve(
      input: SourceSyncInput,
    ): Promise<{ ref: ResolvedRef; refusal: null } | { ref: null; refusal: SourceSyncResult }> {
      const em = deps.orm.em.fork();
      await setPhase(em, input.jobId, 'resolving');
      const row = await load(em, input);
      const creds = await openCredentials(em, deps.config, row);
      let ref: ResolvedRef;
      try {
        ref = await resolveRemoteRef({
          http: http(),
          url: row.repoUrl,
          headers: authHeaders(creds),
          releaseRef: row.releaseRef,
        });
      } catch (err) {
        toFailure(err, row.repoUrl);
      }
      const anchor = row.tagAnchor;
      if (ref.kind === 'tag' && anchor && anchor.tag === row.releaseRef && anchor.commit_sha !== ref.commitSha) {
        return {
          ref: null,
          refusal: {
            ...emptyResult(input, row),
            ref_kind: 'tag',
            commit_sha: anchor.commit_sha,
            error_code: 'RELEASE_TAG_CHANGED_ON_REMOTE',
            error: `Release tag ${anchor.tag} now names commit ${ref.commitSha} on the remote, not the synced ${anchor.commit_sha}. Nothing was applied; acknowledge with PATCH acknowledge_moved_tag: true to sync the new commit.`,
            moved_tag: { tag: anchor.tag, anchored_commit_sha: anchor.commit_sha, remote_commit_sha: ref.commitSha },
          },
        };
      }
      return { ref, refusal: null };
    },

    /** Shallow fetch of the release commit, then a fresh working tree with `checkout_exclude` applied (skipped when nothing changed). */
    async managedSyncFetch(input: SourceSyncInput & { resolved: ResolvedRef }): Promise<CheckoutSummary> {
      const em = deps.orm.em.fork();
      const row = await load(em, input);
      const paths = sourcePaths(deps.config, row.id);
      const hash = rulesHash(row.settings.checkout_exclude);
      if (
        row.syncedCommitSha === input.resolved.commitSha &&
        row.checkoutRulesHash === hash &&
        (await workingTreeExists(paths.workdir))
      ) {
        return { changed: false, files_checked_out: 0, paths_excluded: 0 };
      }
      await setPhase(em, input.jobId, 'fetching');
      const creds = await openCredentials(em, deps.config, row);
      try {
        await withHeartbeat(10_000, () =>
          fetchRef({
            http: http(),
            gitdir: paths.gitdir,
            url: row.repoUrl,
            headers: authHeaders(creds),
            resolved: input.resolved,
          }),
        );
      } catch (err) {
        toFailure(err, row.repoUrl);
      }
      await setPhase(em, input.jobId, 'checking_out');
      const counts = await withHeartbeat(10_000, () =>
        materializeCheckout({
          gitdir: paths.gitdir,
          commitSha: input.resolved.commitSha,
          workdir: paths.workdir,
          checkoutExclude: row.settings.checkout_exclude,
          tag: input.jobId,
        }),
      );
      return {
        changed: row.syncedCommitSha !== input.resolved.commitSha || row.checkoutRulesHash !== hash,
        files_checked_out: counts.files,
        paths_excluded: counts.excluded,
      };
    },

    /** Walks the working tree under `include`/`exclude`, counting files (progress on the job row) and artifact candidates. */
    async managedSyncScan(input: SourceSyncInput): Promise<ScanSummary> {
      const em = deps.orm.em.fork();
      await setPhase(em, input.jobId, 'scanning', 0);
      const row = await load(em, input);
      const { workdir } = sourcePaths(deps.config, row.id);
      const s = row.settings;
      const included = s.include.length ? gitignoreMatcher(s.include) : () => true;
      const excluded = gitignoreMatcher(s.exclude);
      const types = new Set(s.scan_types_enabled);
      const under = (root: string | null, fallback: string) => {
        const r = (root ?? fallback).replace(/^\/+|\/+$/g, '');
        return (file: string) => r === '' || file.startsWith(`${r}/`);
      };
      const inAgents = under(s.agents_root, 'agents');
      const inDocs = under(s.documents_root, 'docs');
      const candidates: Record<string, number> = {};
      const bump = (t: string) => (candidates[t] = (candidates[t] ?? 0) + 1);
      for (const t of types) if (t === 'agents' || t === 'roles' || t === 'document_indexes') candidates[t] = 0;
      let files = 0;
      const ctx = Context.current();
      for await (const file of listFiles(workdir)) {
        if (!included(file) || excluded(file)) continue;
        files++;
        const base = file.slice(file.lastIndexOf('/') + 1);
        if (types.has('agents') && inAgents(file) && (base === 'agent.yaml' || base === 'agent.yml')) bump('agents');
        if (types.has('roles') && /^roles\/[^/]+\/role\.ya?ml$/.test(file)) bump('roles');
        if (types.has('document_indexes') && inDocs(file) && /\.(md|markdown)$/i.test(base)) bump('document_indexes');
        if (files % 200 === 0) {
          ctx.heartbeat();
          await setPhase(em, input.jobId, 'scanning', files);
        }
      }
      await setPhase(em, input.jobId, 'recording', files);
      return { files_scanned: files, candidates };
    },

    /** Records a successful sync: the source's commit, tag anchor and checkout rules; the job `complete`. */
    async managedSyncRecord(
      input: SourceSyncInput & { resolved: ResolvedRef; checkout: CheckoutSummary; scan: ScanSummary },
    ): Promise<SourceSyncResult> {
      const em = deps.orm.em.fork();
      const row = await load(em, input);
      const result: SourceSyncResult = {
        ...emptyResult(input, row),
        outcome: input.checkout.changed ? 'updated' : 'up_to_date',
        ref_kind: input.resolved.kind,
        commit_sha: input.resolved.commitSha,
        files_checked_out: input.checkout.files_checked_out,
        paths_excluded: input.checkout.paths_excluded,
        files_scanned: input.scan.files_scanned,
        candidates: input.scan.candidates,
      };
      return finish(input, result, {
        syncedCommitSha: input.resolved.commitSha,
        checkoutRulesHash: rulesHash(row.settings.checkout_exclude),
        tagAnchor:
          input.resolved.kind === 'tag' && row.releaseRef
            ? { tag: row.releaseRef, commit_sha: input.resolved.commitSha }
            : null,
      });
    },

    /** Ends a refused sync (moved tag): the job `error` with the result; nothing applied to the source. */
    async managedSyncFinish(input: SourceSyncInput & { result: SourceSyncResult }): Promise<SourceSyncResult> {
      return finish(input, input.result);
    },

    /** Ends a failed sync with its classified code. */
    async managedSyncFail(input: SourceSyncInput & { errorCode: string; message: string }): Promise<SourceSyncResult> {
      const em = deps.orm.em.fork();
      const row = await em.findOne(ManagedSourceEntity, { id: input.sourceId, tenant: input.tenant });
      return finish(input, { ...emptyResult(input, row), error_code: input.errorCode, error: input.message });
    },
  };
}

export type ManagedSourceActivities = ReturnType<typeof createManagedSourceActivities>;
