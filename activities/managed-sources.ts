import { createHash, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { AppConfig } from '../shared/config.js';
import { rename as renameBlueprint } from '../shared/blueprints/service.js';
import {
  isBlueprintManifest,
  readRemoteBlueprints,
  sourcePrincipal,
  syncRemoteBlueprints,
} from '../shared/blueprints/remote.js';
import { resolveBlueprint } from '../shared/blueprints/store.js';
import {
  blueprintRenameWorkflowId,
  BLUEPRINT_RENAME_SYNCED_SIGNAL,
} from '../workflows/blueprint-rename-definitions.js';
import { pendingFlowChanges } from '../shared/managed-sources/flow-promotions.js';
import {
  ManagedFlowEntity,
  ManagedSourceEntity,
  ManagedSourceSyncJobEntity,
  type ManagedSourceRow,
} from '../shared/db/entities/index.js';
import {
  authHeaders,
  classifyGitError,
  egressGitHttp,
  fetchRef,
  gitignoreMatcher,
  listFiles,
  materializeCheckout,
  oauthLapsed,
  resolveRemoteRef,
  unsupportedCheckoutRules,
  rulesHash,
  workingTreeExists,
  type GitCredentials,
  type ResolvedRef,
} from '../shared/managed-sources/git.js';
import {
  applyAgents,
  applyRoles,
  removeSourceArtifacts,
  planAgents,
  planRoles,
  readAgentManifests,
  readRoleManifests,
} from '../shared/managed-sources/hydrate.js';
import { APP_FILE, applyApps, readAppManifests } from '../shared/managed-sources/apps.js';
import { parseVersion, pollRemoteReleases } from '../shared/managed-sources/release-poll.js';
import { SKILL_FILE, applySkillPackages, readSkillPackages } from '../shared/skills/packages.js';
import type {
  AutoSyncCandidate,
  AutoSyncInput,
  SourceDeleteInput,
} from '../workflows/managed-source-lifecycle-definitions.js';
import { documentFeedSummary, planDocumentFeed, unlinkSourceIndexes } from '../shared/document-index/kb-feed.js';
import type {
  DocumentFeedPlan,
  DegradedArtifactView,
  DocumentFeedSummary,
  HydrateTypeView,
  HydrationResult,
  PreviewView,
  SyncApplyRequest,
  SourceSyncInput,
  SourceSyncResult,
  SyncOutcome,
} from '../workflows/source-sync-definitions.js';
import { withHeartbeat } from './heartbeat.js';
import { openCredentials, sourcePaths } from '../shared/managed-sources/source-access.js';
import { sql } from '../shared/db/sql.js';
import { GitSyncCodes, ManagedSourceCodes } from '../shared/managed-sources/error-codes.js';

export interface CheckoutSummary {
  changed: boolean;
  files_checked_out: number;
  paths_excluded: number;
}

export interface ScanSummary {
  files_scanned: number;
  candidates: Record<string, number>;
  /** Manifest paths for hydration (enabled types only; absent in histories recorded before hydration). */
  agent_files?: string[];
  role_files?: string[];
  /** `skills/<name>/SKILL.md` paths (scan type `skills`). */
  skill_files?: string[];
  /** `blueprints/<name>/blueprint_manifest.yaml` paths (scan type `blueprints`). */
  blueprint_files?: string[];
  /** `apps/<name>/app.yaml` paths (scan type `apps`). */
  app_files?: string[];
}

/** Hydration fields before (or without) hydration. */
export function emptyHydration(): HydrationResult {
  return {
    partial_success: false,
    degraded_artifact_count: 0,
    hydrate_errors: [],
    hydrate: {},
    agent_preview: null,
    role_preview: null,
    requires_agent_apply_confirmation: false,
    requires_role_apply_confirmation: false,
    agent_auto_apply: { applied: 0, waiting: 0 },
    role_auto_apply: { applied: 0, waiting: 0 },
    flow_auto_apply: { applied: 0, waiting: 0 },
  };
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
    ...emptyHydration(),
  };
}

type Pins = { apply?: boolean; commit?: string; hash?: string };

/**
 * Whether a plan is applied now: with `auto_promote_on_sync`, or when the caller asked and pinned the
 * preview it saw (commit and plan hash equal to this sync's). A pin that no longer matches is stale:
 * nothing of that type is applied and the fresh preview is answered.
 */
function decide(
  kind: 'AGENT' | 'ROLE',
  changes: number,
  autoPromote: boolean,
  pins: Pins,
  preview: { commit_sha: string; plan_hash: string },
): { apply: boolean; error: { code: string; message: string } | null } {
  if (changes === 0) return { apply: false, error: null };
  if (autoPromote) return { apply: true, error: null };
  if (!pins.apply) return { apply: false, error: null };
  const what = kind === 'AGENT' ? 'agent' : 'role';
  if (!pins.commit || !pins.hash)
    return {
      apply: false,
      error: {
        code: `${kind}_PREVIEW_REQUIRED`,
        message: `Applying ${what} changes needs expected_${what}_commit and expected_${what}_plan_hash from a preview.`,
      },
    };
  if (pins.commit !== preview.commit_sha || pins.hash !== preview.plan_hash)
    return {
      apply: false,
      error: {
        code: `${kind}_PREVIEW_STALE`,
        message: `The ${what} changes drifted since the preview (now commit ${preview.commit_sha}, plan ${preview.plan_hash}); review the new preview and pin it.`,
      },
    };
  return { apply: true, error: null };
}

/** Manifests found for a type: the readable ones and the degraded ones. */
const foundIn = (read: { desired: unknown[]; degraded: unknown[] }) => read.desired.length + read.degraded.length;

/** A type imported at once, without a preview (skills, apps, blueprints): nothing waits. */
function importedAtOnce(found: number, r: { applied: number; degraded: DegradedArtifactView[] }): HydrateTypeView {
  return { found, applied: r.applied, waiting: 0, degraded_artifacts: r.degraded };
}

/**
 * A previewed type (agents, roles): its plan is applied now when auto-promoted or confirmed against the
 * pinned preview, else it waits; the result records the preview, the counts and any refusal.
 */
async function hydratePreviewed(
  h: HydrationResult,
  kind: 'agent' | 'role',
  found: number,
  plan: { preview: PreviewView; degraded: DegradedArtifactView[] },
  autoPromote: boolean,
  apply: SyncApplyRequest,
  applyPlan: () => Promise<unknown>,
): Promise<void> {
  const n = plan.preview.changes.length;
  const pins = {
    apply: apply[`apply_${kind}_changes`],
    commit: apply[`expected_${kind}_commit`],
    hash: apply[`expected_${kind}_plan_hash`],
  };
  const d = decide(kind === 'agent' ? 'AGENT' : 'ROLE', n, autoPromote, pins, plan.preview);
  if (d.apply) await applyPlan();
  const type = `${kind}s` as const;
  if (d.error) h.hydrate_errors.push({ type, ...d.error });
  h[`${kind}_preview`] = plan.preview;
  h[`${kind}_auto_apply`] = { applied: d.apply ? n : 0, waiting: d.apply ? 0 : n };
  h[`requires_${kind}_apply_confirmation`] = !d.apply && n > 0;
  h.hydrate[type] = { found, applied: d.apply ? n : 0, waiting: d.apply ? 0 : n, degraded_artifacts: plan.degraded };
}

/**
 * A background release job (one started with an expected release commit) ends met only when the
 * sync result and the source both name that commit: a sync that brought another commit (the release
 * ref moved after the job started) ends `SKILL_RELEASE_CHANGED_DURING_SYNC`; one that could not bring
 * it onto the source (refused, failed) ends `SKILL_RELEASE_STILL_PENDING`.
 */
export function releaseCheck(
  expected: string | null,
  result: SourceSyncResult,
  sourceCommit: string | null,
): { code: string; message: string } | null {
  if (!expected) return null;
  if (result.outcome !== 'failed' && result.commit_sha && result.commit_sha !== expected)
    return {
      code: ManagedSourceCodes.SKILL_RELEASE_CHANGED_DURING_SYNC,
      message: `The release changed while the job ran: it expected commit ${expected}, the sync brought ${result.commit_sha}. Review the new release and sync again.`,
    };
  if (result.commit_sha !== expected || sourceCommit !== expected)
    return {
      code: ManagedSourceCodes.SKILL_RELEASE_STILL_PENDING,
      message: `The release commit ${expected} is still pending: the sync ended ${result.outcome}${result.error_code ? ` (${result.error_code}: ${result.error})` : ''} and the source names ${sourceCommit ?? 'no commit'}.`,
    };
  return null;
}

/** The outcome from what the sync did: errors and waiting changes are named, a plain change is `updated`. */
export function syncOutcome(gitChanged: boolean, h: HydrationResult): SyncOutcome {
  const flows = h.flow_auto_apply ?? { applied: 0, waiting: 0 };
  const applied = h.agent_auto_apply.applied + h.role_auto_apply.applied + flows.applied;
  const waiting = h.agent_auto_apply.waiting + h.role_auto_apply.waiting + flows.waiting;
  const changed = gitChanged || applied > 0;
  if (changed && (h.degraded_artifact_count > 0 || h.hydrate_errors.length > 0)) return 'updated_with_errors';
  if (waiting > 0) return 'updated_awaiting_promotion';
  return changed ? 'updated' : 'up_to_date';
}

const hostOf = (url: string) => {
  try {
    return new URL(url).host;
  } catch {
    return 'the Git server';
  }
};

/** Git failures become ApplicationFailures typed by their code; only transient ones are retried. */
function toFailure(err: unknown, url: string, credKind?: GitCredentials['kind'] | null): never {
  const g = classifyGitError(err, hostOf(url), credKind);
  throw g.retryable
    ? ApplicationFailure.retryable(g.message, g.code)
    : ApplicationFailure.nonRetryable(g.message, g.code);
}

/** Activities of the `source-sync` workflow. Each writes the job's phase first, so progress is readable. */
export function createManagedSourceActivities(deps: { orm: MikroORM; config: AppConfig; temporal?: Client }) {
  const http = () => egressGitHttp(deps.config.egress);

  async function load(em: EntityManager, input: SourceSyncInput): Promise<ManagedSourceRow> {
    const row = await em.findOne(ManagedSourceEntity, { id: input.sourceId, tenant: input.tenant });
    if (!row) throw ApplicationFailure.nonRetryable('The managed source was deleted during the sync.', 'SOURCE_GONE');
    return row;
  }

  async function setPhase(em: EntityManager, jobId: string, phase: string, filesScanned?: number): Promise<void> {
    await sql(
      em,
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
      const anchoredBefore = source?.tagAnchor ?? null;
      if (source) {
        Object.assign(source, sourcePatch, { lastSync: { ...result, finished_at: now.toISOString() }, updatedAt: now });
        if (result.moved_tag) {
          source.releasePoll = {
            ...(source.releasePoll ?? {}),
            checked_at: now.toISOString(),
            moved_tag: { ...result.moved_tag, detected_at: now.toISOString() },
          };
        } else if (result.outcome !== 'failed' && result.ref_kind === 'branch') {
          // A branch release: skill revision tracking is off.
          source.releasePoll = null;
        } else if (result.outcome !== 'failed') {
          source.releasePoll = { ...(source.releasePoll ?? {}), checked_at: now.toISOString(), moved_tag: null };
        }
      }
      const release = job ? releaseCheck(job.expectedReleaseCommit, result, source?.syncedCommitSha ?? null) : null;
      if (source?.releaseRef && !result.moved_tag) {
        const poll = (source.releasePoll ?? {}) as Record<string, unknown>;
        const tagRelease = parseVersion(source.releaseRef) !== null;
        const upgrading = tagRelease && anchoredBefore?.tag !== source.releaseRef;
        if (upgrading && (result.outcome === 'failed' || release)) {
          // An upgrade to a release tag not yet synced that did not land: recorded until a sync of it succeeds.
          source.releasePoll = {
            ...poll,
            upgrade_refusal: {
              tag: source.releaseRef,
              error_code: release?.code ?? result.error_code ?? 'SYNC_FAILED',
              message: release?.message ?? result.error ?? 'The sync failed.',
              at: now.toISOString(),
            },
          };
        } else if (result.outcome !== 'failed' && !release && result.ref_kind === 'tag') {
          const landed = (poll.new_release as { tag?: string } | null | undefined)?.tag === source.releaseRef;
          source.releasePoll = { ...poll, upgrade_refusal: null, ...(landed ? { new_release: null } : {}) };
        }
      }
      if (job) {
        job.status = result.outcome === 'failed' || release ? 'error' : 'complete';
        job.phase = 'done';
        job.filesScanned = result.files_scanned;
        job.result = result as unknown as Record<string, unknown>;
        job.error = release ?? (result.error_code ? { code: result.error_code, message: result.error } : null);
        job.updatedAt = now;
        job.finishedAt = now;
      }
      return result;
    });
  }

  /** Reads the manifests, plans agents and roles, and applies what is confirmed or auto-promoted. */
  async function hydrate(
    em: EntityManager,
    row: ManagedSourceRow,
    input: SourceSyncInput,
    commitSha: string,
    scan: ScanSummary,
  ): Promise<HydrationResult> {
    const h = emptyHydration();
    const { workdir } = sourcePaths(deps.config, row.id);
    const types = new Set(row.settings.scan_types_enabled);
    const autoPromote = row.settings.auto_promote_on_sync;
    const apply = input.apply ?? {};
    const src = { id: row.id, tenant: row.tenant };
    if (types.has('agents')) {
      const read = await readAgentManifests(workdir, scan.agent_files ?? []);
      const plan = await planAgents(em, src, commitSha, read);
      await hydratePreviewed(h, 'agent', foundIn(read), plan, autoPromote, apply, () =>
        em.transactional((tx) => applyAgents(tx, src, plan)),
      );
    }
    if (types.has('roles')) {
      const read = await readRoleManifests(workdir, scan.role_files ?? []);
      const plan = await planRoles(em, src, commitSha, read);
      await hydratePreviewed(h, 'role', foundIn(read), plan, autoPromote, apply, () =>
        em.transactional((tx) => applyRoles(tx, src, plan)),
      );
    }
    if (types.has('skills')) {
      // Skill packages are imported at once (no preview): see shared/skills/packages.ts.
      const read = await readSkillPackages(workdir, scan.skill_files ?? []);
      const r = await em.transactional((tx) => applySkillPackages(tx, src, commitSha, read));
      h.hydrate.skills = importedAtOnce(foundIn(read), r);
    }
    if (types.has('flows')) {
      // Flows wait as pending promotions (shared/managed-sources/flow-promotions.ts) unless auto_promote_on_sync promotes
      // every valid change now; a flow that cannot be promoted is a degraded artifact either way.
      const synced = { ...row, syncedCommitSha: commitSha } as ManagedSourceRow;
      const { changes, flows } = await pendingFlowChanges(em, deps.config, synced);
      const valid = changes.filter((c) => c.valid);
      const degraded = changes
        .filter((c) => !c.valid)
        .map((c) => ({ artifact_id: c.flow_name, reason: c.invalid_reason ?? 'invalid flow' }));
      if (autoPromote && valid.length)
        await em.transactional(async (tx) => {
          for (const c of valid) {
            const existing = await tx.findOne(ManagedFlowEntity, { sourceId: row.id, flowName: c.flow_name });
            if (c.change === 'removed') {
              if (existing) tx.remove(existing);
              continue;
            }
            const flow = flows.get(c.flow_name)!;
            const fields = {
              tenant: row.tenant,
              contentHash: flow.contentHash,
              commitSha,
              manifestPath: flow.manifest,
              promotedAt: new Date(),
              promotedBy: 'auto_promote_on_sync',
            };
            if (existing) Object.assign(existing, fields);
            else tx.create(ManagedFlowEntity, { sourceId: row.id, flowName: c.flow_name, ...fields });
          }
        });
      const applied = autoPromote ? valid.length : 0;
      h.flow_auto_apply = { applied, waiting: valid.length - applied };
      h.hydrate.flows = {
        found: flows.size,
        applied,
        waiting: valid.length - applied,
        degraded_artifacts: degraded,
      };
    }
    if (types.has('apps')) {
      // Apps are recorded at once (no preview): see shared/managed-sources/apps.ts.
      const read = await readAppManifests(workdir, scan.app_files ?? []);
      const r = await em.transactional((tx) => applyApps(tx, src, commitSha, read));
      h.hydrate.apps = importedAtOnce(foundIn(read), r);
    }
    if (types.has('blueprints')) {
      // Remote-backed blueprints are applied at once (no preview): see shared/blueprints/remote.ts.
      const root = deps.config.blueprints.dir;
      const read = await readRemoteBlueprints(workdir, row.id, scan.blueprint_files ?? []);
      const r = await syncRemoteBlueprints(em, root, src, commitSha, read, async (bpRow, newName) => {
        const ctx = { em, principal: sourcePrincipal(row.id, row.tenant), root };
        await renameBlueprint(ctx, await resolveBlueprint(em, root, row.tenant, bpRow.name), newName);
      });
      // A rename waiting for this sync: wake its workflow (it also polls, so a lost signal only delays it).
      for (const id of r.renamed_paths)
        await deps.temporal?.workflow
          .getHandle(blueprintRenameWorkflowId(id))
          .signal(BLUEPRINT_RENAME_SYNCED_SIGNAL)
          .catch(() => undefined);
      h.hydrate.blueprints = importedAtOnce(r.found, r);
    }
    h.degraded_artifact_count = Object.values(h.hydrate).reduce((n, t) => n + t.degraded_artifacts.length, 0);
    h.partial_success = h.degraded_artifact_count > 0 || h.hydrate_errors.length > 0;
    return h;
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
      const lapsed = oauthLapsed(creds, new Date());
      if (lapsed) toFailure(lapsed, row.repoUrl);
      let ref: ResolvedRef;
      try {
        ref = await resolveRemoteRef({
          http: http(),
          url: row.repoUrl,
          headers: authHeaders(creds),
          releaseRef: row.releaseRef,
        });
      } catch (err) {
        toFailure(err, row.repoUrl, creds?.kind);
      }
      const anchor = row.tagAnchor;
      if (ref.kind === 'tag' && anchor && anchor.tag === row.releaseRef && anchor.commit_sha !== ref.commitSha) {
        return {
          ref: null,
          refusal: {
            ...emptyResult(input, row),
            ref_kind: 'tag',
            commit_sha: anchor.commit_sha,
            error_code: ManagedSourceCodes.RELEASE_TAG_CHANGED_ON_REMOTE,
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
      const unsupported = unsupportedCheckoutRules(row.settings.checkout_exclude);
      if (unsupported.length)
        throw ApplicationFailure.nonRetryable(
          `checkout_exclude cannot re-include a path below an excluded directory (${unsupported.join(', ')}): Git sparse rules never re-include a file whose parent directory is excluded. Exclude the directory's contents (\`dir/*\`) instead of the directory (\`dir/\`), then re-include.`,
          ManagedSourceCodes.SPARSE_CHECKOUT_UNSUPPORTED,
        );
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
        toFailure(err, row.repoUrl, creds?.kind);
      }
      await setPhase(em, input.jobId, 'checking_out');
      let counts: { files: number; excluded: number };
      try {
        counts = await withHeartbeat(10_000, () =>
          materializeCheckout({
            gitdir: paths.gitdir,
            commitSha: input.resolved.commitSha,
            workdir: paths.workdir,
            checkoutExclude: row.settings.checkout_exclude,
            tag: input.jobId,
          }),
        );
      } catch (err) {
        toFailure(err, row.repoUrl);
      }
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
      for (const t of types)
        if (
          t === 'agents' ||
          t === 'roles' ||
          t === 'skills' ||
          t === 'document_indexes' ||
          t === 'blueprints' ||
          t === 'apps'
        )
          candidates[t] = 0;
      let files = 0;
      const agentFiles: string[] = [];
      const roleFiles: string[] = [];
      const skillFiles: string[] = [];
      const blueprintFiles: string[] = [];
      const appFiles: string[] = [];
      const ctx = Context.current();
      for await (const file of listFiles(workdir)) {
        if (!included(file) || excluded(file)) continue;
        files++;
        const base = file.slice(file.lastIndexOf('/') + 1);
        if (types.has('agents') && inAgents(file) && (base === 'agent.yaml' || base === 'agent.yml')) {
          bump('agents');
          agentFiles.push(file);
        }
        if (types.has('roles') && /^roles\/[^/]+\/role\.ya?ml$/.test(file)) {
          bump('roles');
          roleFiles.push(file);
        }
        if (types.has('skills') && SKILL_FILE.test(file)) {
          bump('skills');
          skillFiles.push(file);
        }
        if (types.has('blueprints') && isBlueprintManifest(file)) {
          bump('blueprints');
          blueprintFiles.push(file);
        }
        if (types.has('apps') && APP_FILE.test(file)) {
          bump('apps');
          appFiles.push(file);
        }
        if (types.has('document_indexes') && inDocs(file) && /\.(md|markdown)$/i.test(base)) bump('document_indexes');
        if (files % 200 === 0) {
          ctx.heartbeat();
          await setPhase(em, input.jobId, 'scanning', files);
        }
      }
      await setPhase(em, input.jobId, 'recording', files);
      return {
        files_scanned: files,
        candidates,
        agent_files: agentFiles,
        role_files: roleFiles,
        skill_files: skillFiles,
        blueprint_files: blueprintFiles,
        app_files: appFiles,
      };
    },

    /**
     * The document feed's plan (shared/document-index/kb-feed.ts): per first-level folder of
     * `documents_root` the index (found or created linked to the source), removed documents, and the
     * changed files for an ingestion child workflow.
     */
    async managedDocumentFeedPlan(input: SourceSyncInput): Promise<DocumentFeedPlan> {
      const em = deps.orm.em.fork();
      await setPhase(em, input.jobId, 'feeding_documents');
      const row = await load(em, input);
      const { workdir } = sourcePaths(deps.config, row.id);
      return withHeartbeat(2_000, () =>
        planDocumentFeed(em, deps.config, row, {
          jobId: input.jobId,
          workdir,
          overwriteIndexes: input.overwriteIndexes,
        }),
      );
    },

    /** The feed summary per index after the ingestion child workflows (`ingested`: documents per index). */
    async managedDocumentFeedSummary(
      input: SourceSyncInput & { plan: DocumentFeedPlan; ingested: Record<string, number> },
    ): Promise<DocumentFeedSummary> {
      const em = deps.orm.em.fork();
      const row = await load(em, input);
      return documentFeedSummary(em, row, input.plan, input.ingested);
    },

    /** Records a successful sync: the source's commit, tag anchor and checkout rules; the job `complete`. */
    async managedSyncRecord(
      input: SourceSyncInput & {
        resolved: ResolvedRef;
        checkout: CheckoutSummary;
        scan: ScanSummary;
        /** The document feed's summary, or the error that stopped it (recorded as a hydrate error). */
        documentFeed?: DocumentFeedSummary;
        documentFeedError?: { code: string; message: string };
      },
    ): Promise<SourceSyncResult> {
      const em = deps.orm.em.fork();
      const row = await load(em, input);
      const hydration = await hydrate(em, row, input, input.resolved.commitSha, input.scan);
      if (input.documentFeedError) {
        hydration.hydrate_errors.push({ type: 'document_indexes', ...input.documentFeedError });
        hydration.partial_success = true;
      }
      const result: SourceSyncResult = {
        ...emptyResult(input, row),
        ...hydration,
        outcome: syncOutcome(input.checkout.changed, hydration),
        ref_kind: input.resolved.kind,
        commit_sha: input.resolved.commitSha,
        files_checked_out: input.checkout.files_checked_out,
        paths_excluded: input.checkout.paths_excluded,
        files_scanned: input.scan.files_scanned,
        candidates: input.scan.candidates,
        ...(input.documentFeed ? { document_feed: input.documentFeed } : {}),
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

    /** Deletion cleanup: removes the agents and roles the source imported; a failure is recorded, then retried. */
    async managedDeleteCleanup(input: SourceDeleteInput): Promise<{ agents: number; roles: number }> {
      const em = deps.orm.em.fork();
      const attempt = Context.current().info.attempt;
      try {
        const removed = await removeSourceArtifacts(em, { id: input.sourceId, tenant: input.tenant });
        // The indexes the source fed stay, as ordinary indexes (their documents no longer Git-backed).
        await unlinkSourceIndexes(em, { id: input.sourceId, tenant: input.tenant });
        return removed;
      } catch (err) {
        await sql(
          em,
          `update managed_sources set deletion_state = deletion_state || ?::jsonb, updated_at = now() where id = ? and deletion_state is not null`,
          [
            JSON.stringify({
              attempts: attempt,
              last_error: 'Cleanup of imported artifacts failed; retrying.',
              last_failed_at: new Date().toISOString(),
            }),
            input.sourceId,
          ],
        ).catch(() => undefined);
        throw err;
      }
    },

    /** Removes the source row (its jobs cascade) and its files; idempotent. */
    async managedDeleteRemove(input: SourceDeleteInput): Promise<void> {
      const em = deps.orm.em.fork();
      await sql(em, 'delete from managed_sources where id = ? and tenant = ?', [input.sourceId, input.tenant]);
      await rm(sourcePaths(deps.config, input.sourceId).root, { recursive: true, force: true });
    },

    /** Sources with `auto_sync` on and whether each may sync now. */
    async autoSyncList(input: AutoSyncInput): Promise<AutoSyncCandidate[]> {
      const em = deps.orm.em.fork();
      const rows = await em.find(ManagedSourceEntity, input.tenant ? { tenant: input.tenant } : {}, {
        orderBy: { createdAt: 'asc' },
      });
      return rows
        .filter((r) => r.settings.auto_sync)
        .map((r) => {
          const moved = (r.releasePoll as { moved_tag?: unknown } | null)?.moved_tag;
          const reason = r.deletionState ? 'pending_deletion' : moved ? 'moved_tag_unacknowledged' : null;
          return { sourceId: r.id, tenant: r.tenant, eligible: reason === null, ineligibleReason: reason };
        });
    },

    /** A job row for the schedule's sync (null when a sync of the source is already running: skipped). */
    async autoSyncStartJob(c: AutoSyncCandidate): Promise<string | null> {
      const em = deps.orm.em.fork();
      // One job id per activity (not per attempt): a retry after a lost answer finds its own row again.
      const info = Context.current().info;
      const h = createHash('sha256')
        .update(`${info.workflowExecution?.runId ?? randomUUID()}/${info.activityId}`)
        .digest('hex');
      const jobId = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
      const rows = await sql<{ job_id: string }>(
        em,
        `insert into managed_source_sync_jobs (job_id, source_id, tenant, status, phase, expected_release_commit, requested_by, started_at, updated_at)
           select ?, id, tenant, 'running', 'queued', null, 'auto-sync', now(), now()
             from managed_sources where id = ? and deletion_state is null
           on conflict do nothing returning job_id`,
        [jobId, c.sourceId],
      );
      if (!rows.length) {
        const mine = await sql<{ job_id: string }>(em, 'select job_id from managed_source_sync_jobs where job_id = ?', [
          jobId,
        ]);
        if (mine.length) return jobId;
      }
      if (!rows.length) return null;
      await sql(
        em,
        `update managed_sources set auto_sync_state = coalesce(auto_sync_state, '{}'::jsonb) || ?::jsonb where id = ?`,
        [JSON.stringify({ running: true, job_id: jobId }), c.sourceId],
      );
      return jobId;
    },

    /** Records the check on the source as `auto_sync_state` (the spec's fields). */
    async autoSyncRecord(input: {
      candidate: AutoSyncCandidate;
      jobId: string | null;
      result: SourceSyncResult | null;
    }): Promise<void> {
      const em = deps.orm.em.fork();
      const row = await em.findOne(ManagedSourceEntity, { id: input.candidate.sourceId });
      if (!row) return;
      const prev = (row.autoSyncState ?? {}) as Record<string, unknown>;
      const now = new Date().toISOString();
      const r = input.result;
      const state: Record<string, unknown> = {
        ...prev,
        running: false,
        eligible: input.candidate.eligible,
        ineligible_reason: input.candidate.ineligibleReason,
        checked_at: now,
        interval_seconds: 300,
      };
      if (!input.candidate.eligible) state.last_outcome = 'not_eligible';
      else if (!input.jobId) state.skipped_at = now;
      else if (r) {
        const byType: Record<string, number> = {};
        for (const [type, t] of Object.entries(r.hydrate))
          if (t.degraded_artifacts.length) byType[type] = t.degraded_artifacts.length;
        for (const e of r.hydrate_errors) byType[e.type] = (byType[e.type] ?? 0) + 1;
        Object.assign(state, {
          job_id: input.jobId,
          last_outcome: r.outcome,
          commit_sha: r.commit_sha,
          waiting: {
            blueprint_versions: 0,
            agent_changes: r.agent_auto_apply.waiting,
            document_indexes: r.document_feed?.waiting ?? 0,
            flow_changes: r.flow_auto_apply?.waiting ?? 0,
            role_changes: r.role_auto_apply.waiting,
          },
          failures: { count: Object.values(byType).reduce((a, b) => a + b, 0), by_type: byType },
          degraded: r.degraded_artifact_count,
          exceptions: r.outcome === 'failed' && r.error ? [r.error] : [],
          error_code: r.error_code,
          role_notes: (r.hydrate.roles?.degraded_artifacts ?? []).map((d) => `${d.artifact_id}: ${d.reason}`),
        });
      }
      await sql(em, 'update managed_sources set auto_sync_state = ?::jsonb where id = ?', [
        JSON.stringify(state),
        row.id,
      ]);
    },

    /**
     * Release polling (part of the auto-sync check): for every source whose `release_ref` is a tag, lists
     * the remote's tags and records `release_poll.new_release` (the newest newer version tag, null when
     * none) and `checked_at`. A poll that cannot run records `error` ({code, message, at}) and keeps the
     * previous `new_release`; a source pending deletion or with a sync running is skipped (`skipped_at`);
     * a branch `release_ref` means tracking is off (`release_poll` null).
     */
    async managedReleasePoll(input: AutoSyncInput): Promise<{ polled: number; skipped: number; failed: number }> {
      const em = deps.orm.em.fork();
      const rows = await em.find(ManagedSourceEntity, input.tenant ? { tenant: input.tenant } : {}, {
        orderBy: { createdAt: 'asc' },
      });
      const merge = (id: string, patch: Record<string, unknown>) =>
        sql(
          em,
          `update managed_sources set release_poll = coalesce(release_poll, '{}'::jsonb) || ?::jsonb where id = ?`,
          [JSON.stringify(patch), id],
        );
      const summary = { polled: 0, skipped: 0, failed: 0 };
      for (const row of rows) {
        if (!row.releaseRef) continue;
        const now = new Date().toISOString();
        const tracked = row.releasePoll !== null || row.tagAnchor !== null;
        const running = await em.count(ManagedSourceSyncJobEntity, { sourceId: row.id, status: 'running' });
        if (row.deletionState || running) {
          summary.skipped++;
          if (tracked) await merge(row.id, { skipped_at: now });
          continue;
        }
        let creds: GitCredentials | null = null;
        try {
          creds = await openCredentials(em, deps.config, row);
          const lapsed = oauthLapsed(creds, new Date());
          if (lapsed) throw lapsed;
          const polled = await pollRemoteReleases({
            http: egressGitHttp(deps.config.egress, { timeoutMs: 20_000, maxResponseBytes: 16 * 1024 * 1024 }),
            url: row.repoUrl,
            headers: authHeaders(creds),
            releaseRef: row.releaseRef,
          });
          if (polled.kind === 'branch') {
            await sql(em, 'update managed_sources set release_poll = null where id = ?', [row.id]);
            summary.skipped++;
          } else if (polled.kind === 'missing') {
            summary.failed++;
            await merge(row.id, {
              error: {
                code: GitSyncCodes.RELEASE_REF_NOT_FOUND,
                message: `The repository has no tag or branch named ${JSON.stringify(row.releaseRef)}.`,
                at: now,
              },
            });
          } else {
            summary.polled++;
            await merge(row.id, { checked_at: now, new_release: polled.newRelease, error: null });
          }
        } catch (err) {
          summary.failed++;
          const g = classifyGitError(err, hostOf(row.repoUrl), creds?.kind);
          await merge(row.id, { error: { code: g.code, message: g.message, at: now } });
        }
      }
      return summary;
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
