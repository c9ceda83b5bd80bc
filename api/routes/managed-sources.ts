import { randomBytes, randomUUID } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { Principal } from '../../shared/auth/principal.js';
import {
  ManagedSourceEntity,
  ManagedSourceSyncJobEntity,
  type ManagedSourceRow,
  type ManagedSourceSettings,
} from '../../shared/db/entities/index.js';
import { toIso } from '../../shared/dates.js';
import { ConflictError, ForbiddenError, NotFoundError, PlatformError } from '../../shared/errors.js';
import { checkSavedEndpoint, savedEndpointRefusalDoc } from '../../shared/http/trust.js';
import { refreshKeyring, secretBox } from '../../shared/secrets/secret-box.js';
import { lifecycleSearchAttributes } from '../../shared/temporal/lifecycle-visibility.js';
import { workflowRef } from '../../shared/temporal/workflow-refs.js';
import {
  sourceDeleteWorkflowId,
  type SourceDeleteResult,
} from '../../workflows/managed-source-lifecycle-definitions.js';
import {
  sourceSyncWorkflowId,
  type SourceSyncResult,
  type SyncApplyRequest,
} from '../../workflows/source-sync-definitions.js';
import { openCredentials } from '../../shared/managed-sources/source-access.js';
import {
  authHeaders,
  classifyGitError,
  egressGitHttp,
  oauthLapsed,
  resolveRemoteRef,
  type GitCredentials,
} from '../../shared/managed-sources/git.js';
import type { AppDeps } from '../../shared/app-deps.js';
import { defineRoute, successEnvelope } from '../http/route.js';
import { sql } from '../../shared/db/sql.js';
import { GitSyncCodes, ManagedSourceCodes, type ManagedSourceCode } from '../../shared/managed-sources/error-codes.js';

const SCAN_TYPES = [
  'skills',
  'flows',
  'apps',
  'blueprints',
  'agents',
  'document_indexes',
  'roles',
  'missions',
] as const;
const HOST = '[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*';
const PORT = '(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?';
const RepoUrl = z
  .string()
  .max(2000)
  .regex(new RegExp(`^https?://${HOST}${PORT}(/[A-Za-z0-9._~%!$&'()*+,;=:@/-]*)?$`), 'an http(s) URL without query')
  .describe('Git repository over HTTP(S), e.g. https://git.example.com/team/repo.git');
const RefName = z
  .string()
  .regex(/^[A-Za-z0-9._/-]{1,200}$/, 'a branch or tag name')
  .describe('Branch or tag to track (a tag is tried first); null: the remote default branch');
const Line = z
  .string()
  .max(1000)
  .regex(/^[^\r\n\0]*$/, 'one line, no NUL');
const Patterns = z.array(Line).max(500);
const Root = z
  .string()
  .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, 'a relative folder')
  .max(500)
  .nullable();
const SourceId = z.string().regex(/^src_[0-9a-f]{16}$/, 'a managed source id');
const JobId = z.string().regex(/^[0-9a-f-]{36}$/, 'a sync job id');

const Credentials = z
  .discriminatedUnion('kind', [
    z
      .object({
        kind: z.literal('token'),
        token: z.string().min(1).max(4000),
        username: z.string().min(1).max(200).optional(),
      })
      .strict(),
    z
      .object({ kind: z.literal('basic'), username: z.string().min(1).max(200), password: z.string().min(1).max(4000) })
      .strict(),
    z
      .object({
        kind: z.literal('oauth'),
        access_token: z.string().min(1).max(4000),
        expires_at: z.iso
          .datetime({ offset: true })
          .optional()
          .describe('When the grant lapses; after it syncs answer OAUTH_RENEWAL_REQUIRED until renewed'),
        username: z.string().min(1).max(200).optional(),
      })
      .strict(),
  ])
  .nullable()
  .describe('Sealed at rest, never answered; null removes them');

const settingsFields = {
  name: z.string().min(1).max(200),
  repo_url: RepoUrl,
  release_ref: RefName.nullable(),
  scan_types_enabled: z.array(z.enum(SCAN_TYPES)).min(1).max(SCAN_TYPES.length),
  include: Patterns.describe('gitignore-style patterns a scanned file must match (empty: all)'),
  exclude: Patterns.describe('gitignore-style patterns left out of scanning'),
  checkout_exclude: Patterns.describe(
    'gitignore-style rules for paths left out of the working tree (blank lines and # ignored, ! re-includes; empty: full checkout)',
  ),
  agents_root: Root,
  flows_root: Root,
  documents_root: Root,
  auto_sync: z.boolean(),
  auto_promote_on_sync: z.boolean(),
  credentials: Credentials,
};
const syncFlags = {
  sync_now: z.boolean().optional().describe('Sync right after saving and answer the result in `sync`'),
  sync_in_background: z
    .boolean()
    .optional()
    .describe('With sync_now: start the sync as a job and answer `sync_job` at once'),
};

const CreateBody = z
  .object({
    ...settingsFields,
    release_ref: settingsFields.release_ref.optional(),
    include: Patterns.optional(),
    exclude: Patterns.optional(),
    checkout_exclude: settingsFields.checkout_exclude.optional(),
    agents_root: Root.optional(),
    flows_root: Root.optional(),
    documents_root: Root.optional(),
    auto_sync: z.boolean().optional(),
    auto_promote_on_sync: z.boolean().optional(),
    credentials: Credentials.optional(),
    ...syncFlags,
  })
  .strict();

const PatchBody = z
  .object({
    ...Object.fromEntries(Object.entries(settingsFields).map(([k, v]) => [k, v.optional()])),
    acknowledge_moved_tag: z
      .boolean()
      .optional()
      .describe(
        'true accepts the commit a moved release tag now names (RELEASE_TAG_CHANGED_ON_REMOTE); the next sync applies it',
      ),
    ...syncFlags,
  })
  .strict() as z.ZodType<
  Partial<z.output<z.ZodObject<typeof settingsFields>>> & {
    acknowledge_moved_tag?: boolean;
    sync_now?: boolean;
    sync_in_background?: boolean;
  }
>;

const Degraded = z.object({ artifact_id: z.string(), reason: z.string() });
const PreviewView = z
  .object({
    summary: z.string(),
    changes: z.array(
      z.object({
        action: z.enum(['create', 'update', 'delete']),
        artifact_id: z.string(),
        fields: z.array(z.string()).optional(),
      }),
    ),
    commit_sha: z.string(),
    plan_hash: z.string(),
  })
  .nullable();
const AutoApply = z.object({ applied: z.number(), waiting: z.number() });

const DocumentFeedView = z.object({
  indexes: z.array(
    z.object({
      index_name: z.string(),
      folder: z.string(),
      count: z.number(),
      index_doc_count: z.number(),
      index_only_doc_count: z.number(),
      pending_change_count: z.number(),
      proposer: z.string().nullable(),
      pr: z
        .object({
          proposal_id: z.string(),
          status: z.string().describe('The Action Review proposal status'),
          url: z.string().nullable().describe('The pull request URL (the receipt `pr_url`), null until opened'),
          branch: z.string().describe('`kb-edit/<proposal_id>`'),
        })
        .nullable()
        .describe('The newest knowledge-base pull request proposal changing a file under the folder; null when none'),
      adopted: z.boolean().describe('A hand-made index adopted by a sync with `overwrite_indexes`'),
      name_conflict_count: z.number(),
      requires_overwrite_ack: z.boolean(),
      ingested: z.number(),
      removed: z.number(),
      unchanged: z.number(),
    }),
  ),
  total_count: z.number(),
  total_index_doc_count: z.number(),
  waiting: z.number(),
});

const SyncResultView = z
  .object({
    outcome: z.enum([
      'up_to_date',
      'updated',
      'updated_awaiting_promotion',
      'updated_with_errors',
      'failed',
      'not_eligible',
    ]),
    source_id: z.string(),
    job_id: z.string(),
    release_ref: z.string().nullable(),
    ref_kind: z.enum(['tag', 'branch']).nullable(),
    commit_sha: z.string().nullable(),
    previous_commit_sha: z.string().nullable(),
    files_checked_out: z.number(),
    paths_excluded: z.number(),
    files_scanned: z.number(),
    candidates: z.record(z.string(), z.number()),
    error_code: z.string().nullable(),
    error: z.string().nullable(),
    moved_tag: z
      .object({ tag: z.string(), anchored_commit_sha: z.string(), remote_commit_sha: z.string().nullable() })
      .nullable(),
    // Hydration (absent in results recorded before it existed).
    partial_success: z.boolean().optional(),
    degraded_artifact_count: z.number().optional(),
    hydrate_errors: z.array(z.object({ type: z.string(), code: z.string(), message: z.string() })).optional(),
    hydrate: z
      .record(
        z.string(),
        z.object({
          found: z.number(),
          applied: z.number(),
          waiting: z.number(),
          degraded_artifacts: z.array(Degraded),
        }),
      )
      .optional(),
    agent_preview: PreviewView.optional(),
    role_preview: PreviewView.optional(),
    requires_agent_apply_confirmation: z.boolean().optional(),
    requires_role_apply_confirmation: z.boolean().optional(),
    agent_auto_apply: AutoApply.optional(),
    role_auto_apply: AutoApply.optional(),
    flow_auto_apply: AutoApply.optional(),
    document_feed: DocumentFeedView.optional().describe(
      'Documents fed into indexes (document_indexes enabled): one index per first-level folder of documents_root, named after the folder',
    ),
    finished_at: z.string().optional(),
  })
  .meta({ id: 'ManagedSourceSyncResult' });

const SourceView = z
  .object({
    source_id: z.string(),
    name: z.string(),
    repo_url: z.string(),
    release_ref: z.string().nullable(),
    scan_types_enabled: z.array(z.string()),
    include: z.array(z.string()),
    exclude: z.array(z.string()),
    checkout_exclude: z.array(z.string()),
    agents_root: z.string().nullable(),
    flows_root: z.string().nullable(),
    documents_root: z.string().nullable(),
    auto_sync: z.boolean(),
    auto_promote_on_sync: z.boolean(),
    credentials: z
      .object({
        kind: z.enum(['token', 'basic', 'oauth']),
        username: z.string().nullable(),
        configured: z.literal(true),
        expires_at: z
          .string()
          .nullable()
          .describe('OAuth grants: when the grant lapses (null: not known or not OAuth)'),
      })
      .nullable(),
    synced_commit_sha: z.string().nullable(),
    release_poll: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe(
        'Release tracking; null when skill revision tracking is off (release_ref is a branch or unset; on when it names a tag). Fields: `checked_at` (last successful poll or tag sync), `skipped_at` (poll skipped: deletion pending or a sync running), `error` ({code, message, at} of the last failed poll; null after a good one), `new_release` ({tag, commit_sha}: the newest version tag `v1.2.3`/`1.2.3` newer than release_ref; null when none), `moved_tag` ({tag, anchored_commit_sha, remote_commit_sha, detected_at}), `upgrade_refusal` ({tag, error_code, message, at}: an upgrade to a not-yet-synced tag whose sync failed or whose release job ended SKILL_RELEASE_*; cleared by a good sync). Polled by the auto-sync check every 300 s.',
      ),
    auto_sync_state: z.record(z.string(), z.unknown()).nullable(),
    deletion_state: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe('Set while deletion is pending (`state: pending_deletion`, cleanup `attempts`, `last_error`)'),
    last_sync: SyncResultView.nullable(),
    sync_running: z.boolean(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'ManagedSource' });

const SyncJobRef = z.object({
  job_id: z.string(),
  status: z.literal('running'),
  expected_release_commit: z.string().nullable(),
});

const UpsertEnvelope = z.object({
  success: z.literal(true),
  source: SourceView,
  sync: SyncResultView.nullable(),
  sync_job: SyncJobRef.optional(),
  warning: z.string().optional(),
  warning_code: z.string().optional(),
  warning_action: z.string().optional(),
});

const JobView = z
  .object({
    job_id: z.string(),
    source_id: z.string(),
    status: z.enum(['running', 'complete', 'error']),
    phase: z.string(),
    files_scanned: z.number(),
    expected_release_commit: z.string().nullable(),
    result: SyncResultView.nullable(),
    error: z.object({ code: z.string(), message: z.string().nullable() }).nullable(),
    started_at: z.string(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'ManagedSourceSyncJob' });

const UPSERT_SHAPE = 'Managed sources and artifacts (upsert envelope: success, source, sync, sync_job, warning…)';
const IN_PROGRESS = '`MANAGED_SOURCE_SYNC_IN_PROGRESS`: a sync of this source is running';
const CLEANUP_PENDING =
  '`SOURCE_DELETE_CLEANUP_PENDING`: the source is being deleted (its artifact cleanup is pending)';
const DELETE_WAIT_MS = 10_000;
const TYPE_PERMISSION =
  'Missing `manage_repos`, or `manage_agents` (agents) / `manage_users` (roles) for the scan types';
const SYNC_WAIT_MS = 60_000;

/** Roles need `manage_users`, agents `manage_agents`, on top of `manage_repos`. */
function checkTypePermissions(principal: Principal, types: readonly string[] | undefined): void {
  if (types?.includes('roles') && !principal.permissions.has('manage_users'))
    throw new ForbiddenError('Sources that import roles need the manage_users permission; ask an administrator.');
  if (types?.includes('agents') && !principal.permissions.has('manage_agents'))
    throw new ForbiddenError('Sources that import agents need the manage_agents permission; ask an administrator.');
}

function sealCredentials(deps: AppDeps, creds: z.output<typeof Credentials>) {
  if (!creds)
    return { credentialKind: null, credentialUsername: null, credentialExpiresAt: null, credentialsSealed: null };
  const secret = creds.kind === 'token' ? creds.token : creds.kind === 'oauth' ? creds.access_token : creds.password;
  const expires_at = creds.kind === 'oauth' && creds.expires_at ? new Date(creds.expires_at).toISOString() : null;
  return {
    credentialKind: creds.kind,
    credentialUsername: creds.username ?? null,
    credentialExpiresAt: expires_at ? new Date(expires_at) : null,
    credentialsSealed: secretBox(deps.config).seal(JSON.stringify({ secret, expires_at })),
  };
}

async function loadSource(em: EntityManager, principal: Principal, id: string): Promise<ManagedSourceRow> {
  const row = await em.findOne(ManagedSourceEntity, { id, tenant: principal.tenant });
  if (!row) throw new NotFoundError(`No managed source ${id}.`);
  return row;
}

async function view(em: EntityManager, row: ManagedSourceRow) {
  const running = await em.count(ManagedSourceSyncJobEntity, { sourceId: row.id, status: 'running' });
  const s = row.settings;
  return {
    source_id: row.id,
    name: row.name,
    repo_url: row.repoUrl,
    release_ref: row.releaseRef,
    ...s,
    credentials: row.credentialKind
      ? {
          kind: row.credentialKind,
          username: row.credentialUsername,
          configured: true as const,
          expires_at: row.credentialExpiresAt ? toIso(row.credentialExpiresAt) : null,
        }
      : null,
    synced_commit_sha: row.syncedCommitSha,
    release_poll: row.releasePoll,
    auto_sync_state: row.autoSyncState,
    deletion_state: row.deletionState,
    last_sync: (row.lastSync as z.output<typeof SyncResultView> | null) ?? null,
    sync_running: running > 0,
    created_at: toIso(row.createdAt),
    updated_at: toIso(row.updatedAt),
  };
}

/**
 * Starts sync job `source-sync/<source_id>/<job_id>`. The running-job row is written first; the
 * partial unique index refuses a second one (409), so two syncs of one source never run at once.
 */
/**
 * The commit the release ref names on the remote now: a background job expects it (its end is checked
 * against it). Answers the classified failure when the remote cannot say.
 */
async function remoteReleaseCommit(
  em: EntityManager,
  deps: AppDeps,
  row: ManagedSourceRow,
): Promise<{ commit: string } | { code: string; message: string }> {
  let creds: GitCredentials | null = null;
  let host = 'the Git server';
  try {
    host = new URL(row.repoUrl).host;
    creds = await openCredentials(em, deps.config, row);
    const lapsed = oauthLapsed(creds, new Date());
    if (lapsed) return { code: lapsed.code, message: lapsed.message };
    const ref = await resolveRemoteRef({
      http: egressGitHttp(deps.config.egress, { timeoutMs: 10_000, maxResponseBytes: 16 * 1024 * 1024 }),
      url: row.repoUrl,
      headers: authHeaders(creds),
      releaseRef: row.releaseRef,
    });
    return { commit: ref.commitSha };
  } catch (err) {
    const g = classifyGitError(err, host, creds?.kind);
    return { code: g.code, message: g.message };
  }
}

const runningJobs = (em: EntityManager, sourceId: string) =>
  em.count(ManagedSourceSyncJobEntity, { sourceId, status: 'running' });

async function startSync(
  em: EntityManager,
  deps: AppDeps,
  principal: Principal,
  row: ManagedSourceRow,
  apply?: SyncApplyRequest,
  expectedRelease: string | null = null,
  overwriteIndexes = false,
) {
  if (row.deletionState)
    throw new PlatformError(
      'internal',
      `Managed source ${row.id} is being deleted and the cleanup of its artifacts is still pending; it cannot sync.`,
      { code: ManagedSourceCodes.SOURCE_DELETE_CLEANUP_PENDING, source_id: row.id },
    );
  const jobId = randomUUID();
  const expected = expectedRelease;
  try {
    await sql(
      em,
      `insert into managed_source_sync_jobs (job_id, source_id, tenant, status, phase, expected_release_commit, requested_by, started_at, updated_at)
         values (?, ?, ?, 'running', 'queued', ?, ?, now(), now())`,
      [jobId, row.id, principal.tenant, expected, principal.id],
    );
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException || (err as { code?: string }).code === '23505')
      throw new ConflictError(`A sync of managed source ${row.id} is already running; wait for it to finish.`, {
        code: ManagedSourceCodes.MANAGED_SOURCE_SYNC_IN_PROGRESS,
      });
    throw err;
  }
  const workflowId = sourceSyncWorkflowId(row.id, jobId);
  try {
    await deps.temporal.workflow.start(workflowRef('sourceSyncWorkflow'), {
      taskQueue: deps.config.temporal.taskQueue,
      workflowId,
      args: [
        {
          sourceId: row.id,
          jobId,
          tenant: principal.tenant,
          trigger: 'api',
          ...(apply ? { apply } : {}),
          ...(overwriteIndexes ? { overwriteIndexes: true } : {}),
        },
      ],
      typedSearchAttributes: lifecycleSearchAttributes('sourceSyncWorkflow', {
        tenant: principal.tenant,
        resourceId: row.id,
        status: 'running',
      }),
      memo: { requested_by: principal.id, kind: 'source-sync' },
    });
  } catch (err) {
    await sql(
      em,
      `update managed_source_sync_jobs set status = 'error', phase = 'done', error = ?, finished_at = now(), updated_at = now() where job_id = ?`,
      [
        JSON.stringify({
          code: ManagedSourceCodes.SYNC_NOT_STARTED,
          message: 'The sync workflow could not be started.',
        }),
        jobId,
      ],
    );
    throw err;
  }
  return { jobId, workflowId, expected };
}

async function runSync(
  em: EntityManager,
  deps: AppDeps,
  principal: Principal,
  row: ManagedSourceRow,
  apply?: SyncApplyRequest,
  overwriteIndexes = false,
) {
  const { jobId, workflowId, expected } = await startSync(em, deps, principal, row, apply, null, overwriteIndexes);
  const result = deps.temporal.workflow.getHandle(workflowId).result() as Promise<SourceSyncResult>;
  result.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([
    result,
    new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), SYNC_WAIT_MS))),
  ]).finally(() => clearTimeout(timer));
  return { jobId, expected, result: done };
}

async function upsertAnswer(
  em: EntityManager,
  deps: AppDeps,
  principal: Principal,
  row: ManagedSourceRow,
  flags: { sync_now?: boolean; sync_in_background?: boolean },
) {
  if (flags.sync_now && flags.sync_in_background) {
    const notStarted = (why: string) => ({
      success: true as const,
      source: row,
      sync: null,
      warning: `Saved, but no background sync job started: ${why}`,
      warning_code: ManagedSourceCodes.SKILL_RELEASE_SYNC_NOT_STARTED,
      warning_action: 'sync_again',
    });
    let skip: ReturnType<typeof notStarted> | null = null;
    if (await runningJobs(em, row.id))
      skip = notStarted('a sync of this source is already running; sync again when it ends.');
    const release = skip ? null : await remoteReleaseCommit(em, deps, row);
    if (release && !('commit' in release))
      skip = notStarted(`the release commit could not be resolved (${release.code}: ${release.message})`);
    if (skip || !release || !('commit' in release)) return { ...skip!, source: await view(em, row) };
    const job = await startSync(em, deps, principal, row, undefined, release.commit);
    return {
      success: true as const,
      source: await view(em, await em.fork().findOneOrFail(ManagedSourceEntity, { id: row.id })),
      sync: null,
      sync_job: { job_id: job.jobId, status: 'running' as const, expected_release_commit: job.expected },
    };
  }
  if (flags.sync_now) {
    const run = await runSync(em, deps, principal, row);
    const fresh = await em.fork().findOneOrFail(ManagedSourceEntity, { id: row.id });
    if (run.result === 'pending')
      return {
        success: true as const,
        source: await view(em, fresh),
        sync: null,
        sync_job: { job_id: run.jobId, status: 'running' as const, expected_release_commit: run.expected },
        warning: 'The sync is still running; poll sync-status with sync_job.job_id.',
        warning_code: ManagedSourceCodes.SYNC_STILL_RUNNING,
        warning_action: 'poll_sync_status',
      };
    return { success: true as const, source: await view(em, fresh), sync: run.result };
  }
  return { success: true as const, source: await view(em, row), sync: null };
}

const GIT_HOST_REFUSED = `Invalid field; or ${savedEndpointRefusalDoc('`repo_url`', 'GIT_EGRESS_REFUSED')}`;

/** A Git host the egress policy never allows is refused when saved; each sync checks the host again. */
function checkGitHost(deps: AppDeps, repoUrl: string): void {
  checkSavedEndpoint(repoUrl, deps.config.egress, {
    field: 'body.repo_url',
    code: GitSyncCodes.GIT_EGRESS_REFUSED,
    what: 'The Git host',
  });
}

const base = {
  tags: ['managed-sources'],
  access: { kind: 'authenticated' as const, permission: 'manage_repos' as const },
};
const idParams = z.object({ source_id: SourceId });

export const managedSourceRoutes = [
  defineRoute({
    ...base,
    method: 'post',
    path: '/api/managed-sources',
    operationId: 'createManagedSource',
    summary: 'Register a Git repository as a managed source (optionally syncing it at once)',
    body: CreateBody,
    bodyKind: 'config',
    ownShape: UPSERT_SHAPE,
    successStatus: 201,
    responses: {
      201: { description: 'Created (and synced with sync_now)', schema: UpsertEnvelope },
      400: { description: GIT_HOST_REFUSED },
      403: { description: TYPE_PERMISSION },
      409: { description: IN_PROGRESS },
    },
    handler: async ({ body, principal, deps, em }) => {
      checkTypePermissions(principal, body.scan_types_enabled);
      checkGitHost(deps, body.repo_url);
      await refreshKeyring(em);
      const now = new Date();
      const settings: ManagedSourceSettings = {
        scan_types_enabled: [...new Set(body.scan_types_enabled)],
        include: body.include ?? [],
        exclude: body.exclude ?? [],
        checkout_exclude: body.checkout_exclude ?? [],
        agents_root: body.agents_root ?? null,
        flows_root: body.flows_root ?? null,
        documents_root: body.documents_root ?? null,
        auto_sync: body.auto_sync ?? false,
        auto_promote_on_sync: body.auto_promote_on_sync ?? false,
      };
      const row = em.create(ManagedSourceEntity, {
        id: `src_${randomBytes(8).toString('hex')}`,
        tenant: principal.tenant,
        name: body.name,
        repoUrl: body.repo_url,
        releaseRef: body.release_ref ?? null,
        settings,
        ...sealCredentials(deps, body.credentials ?? null),
        syncedCommitSha: null,
        checkoutRulesHash: null,
        tagAnchor: null,
        releasePoll: null,
        lastSync: null,
        deletionState: null,
        autoSyncState: null,
        createdAt: now,
        updatedAt: now,
        createdBy: principal.id,
      });
      await em.flush();
      return upsertAnswer(em, deps, principal, row, body);
    },
  }),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/managed-sources',
    operationId: 'listManagedSources',
    summary: "The tenant's managed sources (credentials masked)",
    responses: { 200: { description: 'Sources', schema: successEnvelope(z.object({ sources: z.array(SourceView) })) } },
    handler: async ({ principal, em }) => {
      const rows = await em.find(ManagedSourceEntity, { tenant: principal.tenant }, { orderBy: { createdAt: 'asc' } });
      const sources = [];
      for (const r of rows) sources.push(await view(em, r));
      return { success: true, data: { sources } };
    },
  }),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/managed-sources/:source_id',
    operationId: 'getManagedSource',
    summary: 'One managed source with its last sync result and release tracking (credentials masked)',
    params: idParams,
    responses: {
      200: { description: 'The source', schema: successEnvelope(SourceView) },
      404: { description: 'Unknown source' },
    },
    handler: async ({ params, principal, em }) => ({
      success: true,
      data: await view(em, await loadSource(em, principal, params.source_id)),
    }),
  }),
  defineRoute({
    ...base,
    method: 'patch',
    path: '/api/managed-sources/:source_id',
    operationId: 'updateManagedSource',
    summary: 'Change a managed source; sync_now / sync_in_background sync it after saving',
    params: idParams,
    body: PatchBody,
    bodyKind: 'config',
    ownShape: UPSERT_SHAPE,
    responses: {
      200: { description: 'Saved (and synced with sync_now)', schema: UpsertEnvelope },
      400: { description: GIT_HOST_REFUSED },
      403: { description: TYPE_PERMISSION },
      404: { description: 'Unknown source' },
      409: {
        description: `${IN_PROGRESS}; \`SCAN_TYPE_REMOVAL_NOT_SUPPORTED\` (payload: current_scan_types, attempted_scan_types, removed_scan_types, recovery, remediation)`,
      },
      500: { description: CLEANUP_PENDING },
    },
    handler: async ({ params, body, principal, deps, em }) => {
      const row = await loadSource(em, principal, params.source_id);
      checkTypePermissions(principal, body.scan_types_enabled);
      if (body.scan_types_enabled) {
        const current = row.settings.scan_types_enabled;
        const removed = current.filter((t) => !body.scan_types_enabled!.includes(t as (typeof SCAN_TYPES)[number]));
        if (removed.length)
          throw new ConflictError(
            `Scan types cannot be removed from a managed source (${removed.join(', ')}); delete the source and create it again with the types you want.`,
            {
              code: ManagedSourceCodes.SCAN_TYPE_REMOVAL_NOT_SUPPORTED,
              current_scan_types: current,
              attempted_scan_types: body.scan_types_enabled,
              removed_scan_types: removed,
              recovery: 'delete_and_recreate',
              remediation:
                'DELETE /api/managed-sources/{source_id}, then POST /api/managed-sources with the scan types to keep.',
            },
          );
      }
      const { name, repo_url, release_ref, credentials, acknowledge_moved_tag, sync_now, sync_in_background, ...rest } =
        body;
      if (repo_url !== undefined) checkGitHost(deps, repo_url);
      const releaseChange =
        (release_ref !== undefined && release_ref !== row.releaseRef) ||
        (repo_url !== undefined && repo_url !== row.repoUrl) ||
        Boolean(acknowledge_moved_tag);
      if (releaseChange && (await runningJobs(em, row.id)))
        throw new ConflictError(
          `A sync of managed source ${row.id} is running; change its release (release_ref, repo_url, acknowledge_moved_tag) when it ends. Nothing was saved.`,
          { code: ManagedSourceCodes.MANAGED_SOURCE_SYNC_IN_PROGRESS },
        );
      const settings: ManagedSourceSettings = { ...row.settings };
      for (const [k, v] of Object.entries(rest))
        if (v !== undefined) (settings as unknown as Record<string, unknown>)[k] = v;
      if (name !== undefined) row.name = name;
      if (repo_url !== undefined && repo_url !== row.repoUrl) {
        row.repoUrl = repo_url;
        row.tagAnchor = null;
      }
      if (release_ref !== undefined && release_ref !== row.releaseRef) {
        row.releaseRef = release_ref;
        row.tagAnchor = null;
      }
      if (credentials !== undefined) {
        await refreshKeyring(em);
        Object.assign(row, sealCredentials(deps, credentials));
      }
      if (acknowledge_moved_tag && row.tagAnchor) {
        // The moved tag's new commit is accepted: the next sync applies it as the new anchor.
        row.tagAnchor = null;
        row.releasePoll = { ...(row.releasePoll ?? {}), moved_tag: null };
      }
      row.settings = settings;
      row.updatedAt = new Date();
      await em.flush();
      return upsertAnswer(em, deps, principal, row, { sync_now, sync_in_background });
    },
  }),
  defineRoute({
    ...base,
    method: 'delete',
    path: '/api/managed-sources/:source_id',
    operationId: 'deleteManagedSource',
    summary:
      'Delete a managed source: pending deletion until what it imported (agents, roles) is cleaned up, then removed',
    description:
      'Starts workflow `source-delete/<source_id>`: the source is pending deletion at once (syncs answer 500 `SOURCE_DELETE_CLEANUP_PENDING`), its cleanup is retried until it succeeds, then the row, its jobs and its files go. Answers 200 when that finished within 10 s, else 202 with the pending state.',
    params: idParams,
    responses: {
      200: {
        description: 'Removed',
        schema: successEnvelope(
          z.object({
            source_id: z.string(),
            deleted: z.literal(true),
            removed_agents: z.number(),
            removed_roles: z.number(),
          }),
        ),
      },
      202: {
        description: 'Pending deletion: the cleanup is still running (retried until it succeeds)',
        schema: successEnvelope(
          z.object({ source_id: z.string(), deleted: z.literal(false), status: z.literal('pending_deletion') }),
        ),
      },
      404: { description: 'Unknown source' },
      409: { description: IN_PROGRESS },
    },
    handler: async ({ params, principal, deps, em, koa }) => {
      const row = await loadSource(em, principal, params.source_id);
      if (await em.count(ManagedSourceSyncJobEntity, { sourceId: row.id, status: 'running' }))
        throw new ConflictError(`A sync of managed source ${row.id} is running; delete it when the sync ends.`, {
          code: ManagedSourceCodes.MANAGED_SOURCE_SYNC_IN_PROGRESS,
        });
      if (!row.deletionState) {
        row.deletionState = {
          state: 'pending_deletion',
          requested_at: new Date().toISOString(),
          requested_by: principal.id,
          attempts: 0,
        };
        row.updatedAt = new Date();
        await em.flush();
      }
      const workflowId = sourceDeleteWorkflowId(row.id);
      await deps.temporal.workflow.start(workflowRef('sourceDeleteWorkflow'), {
        taskQueue: deps.config.temporal.taskQueue,
        workflowId,
        args: [{ sourceId: row.id, tenant: principal.tenant }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: lifecycleSearchAttributes('sourceDeleteWorkflow', {
          tenant: principal.tenant,
          resourceId: row.id,
          status: 'deleting',
        }),
        memo: { requested_by: principal.id, kind: 'source-delete' },
      });
      const result = deps.temporal.workflow.getHandle(workflowId).result() as Promise<SourceDeleteResult>;
      result.catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const done = await Promise.race([
        result,
        new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), DELETE_WAIT_MS))),
      ]).finally(() => clearTimeout(timer));
      if (done === 'pending') {
        koa.body = {
          success: true,
          data: { source_id: row.id, deleted: false as const, status: 'pending_deletion' as const },
        };
        koa.status = 202;
        return koa.body;
      }
      return {
        success: true,
        data: {
          source_id: row.id,
          deleted: true as const,
          removed_agents: done.removed_agents,
          removed_roles: done.removed_roles,
        },
      };
    },
  }),
  defineRoute({
    ...base,
    method: 'post',
    path: '/api/managed-sources/:source_id/sync',
    operationId: 'syncManagedSource',
    summary: 'Sync a managed source and answer the sync result (outcome `failed` carries a classified error_code)',
    description:
      'Agents and roles the source declares are previewed (`agent_preview`, `role_preview`); `apply_agent_changes` with `expected_agent_commit` and `expected_agent_plan_hash` from that preview applies them (likewise for roles), unless `auto_promote_on_sync` applies them anyway. Apply without pins: 409 `AGENT_PREVIEW_REQUIRED` / `ROLE_PREVIEW_REQUIRED`; pins that no longer match the synced plan: 409 `AGENT_PREVIEW_STALE` / `ROLE_PREVIEW_STALE` with the fresh result in `payload.sync` (nothing of that type applied). With `document_indexes` enabled the sync feeds one index per first-level folder of `documents_root` (named after the folder, `last_sync.document_feed`). An index of that name not fed by the source is a name conflict (`name_conflict_count`, `requires_overwrite_ack`), left as it is unless `overwrite_indexes: true` acknowledges it: then an ordinary hand-made index is adopted (its documents replaced by those of the folder, linked to the source, `adopted: true` from then on); a system index or an index fed by another source is never adopted. `pr` per index: the newest knowledge-base pull request proposal (`kb.pull_request.v1`) of the source changing a file under the folder.',
    params: idParams,
    body: z
      .object({
        overwrite_indexes: z.boolean().optional(),
        apply_agent_changes: z.boolean().optional(),
        expected_agent_commit: z.string().max(200).optional(),
        expected_agent_plan_hash: z.string().max(200).optional(),
        apply_role_changes: z.boolean().optional(),
        expected_role_commit: z.string().max(200).optional(),
        expected_role_plan_hash: z.string().max(200).optional(),
      })
      .strict(),
    responses: {
      200: { description: 'The sync result', schema: successEnvelope(SyncResultView) },
      202: {
        description: 'Still running after 60 s: poll sync-status',
        schema: successEnvelope(z.object({ job_id: z.string(), status: z.literal('running') })),
      },
      404: { description: 'Unknown source' },
      409: {
        description: `${IN_PROGRESS}; \`AGENT_PREVIEW_REQUIRED\`, \`AGENT_PREVIEW_STALE\`, \`ROLE_PREVIEW_REQUIRED\`, \`ROLE_PREVIEW_STALE\``,
      },
      500: { description: CLEANUP_PENDING },
    },
    handler: async ({ params, principal, deps, em, koa, body }) => {
      const row = await loadSource(em, principal, params.source_id);
      const { overwrite_indexes: overwrite, ...apply } = body;
      if (apply.apply_agent_changes && (!apply.expected_agent_commit || !apply.expected_agent_plan_hash))
        throw new ConflictError(
          'Applying agent changes needs expected_agent_commit and expected_agent_plan_hash from a sync preview (agent_preview).',
          { code: ManagedSourceCodes.AGENT_PREVIEW_REQUIRED },
        );
      if (apply.apply_role_changes && (!apply.expected_role_commit || !apply.expected_role_plan_hash))
        throw new ConflictError(
          'Applying role changes needs expected_role_commit and expected_role_plan_hash from a sync preview (role_preview).',
          { code: ManagedSourceCodes.ROLE_PREVIEW_REQUIRED },
        );
      const run = await runSync(em, deps, principal, row, apply, overwrite === true);
      if (run.result === 'pending') {
        // Set here: the mount answers successStatus (200) only when the handler left no body.
        koa.body = { success: true, data: { job_id: run.jobId, status: 'running' as const } };
        koa.status = 202;
        return koa.body;
      }
      const stale = run.result.hydrate_errors?.find((e) => e.code.endsWith('_PREVIEW_STALE'));
      // `stale.code` is AGENT_PREVIEW_STALE or ROLE_PREVIEW_STALE (`decide` in activities/managed-sources.ts)
      if (stale) throw new ConflictError(stale.message, { code: stale.code as ManagedSourceCode, sync: run.result });
      return { success: true, data: run.result };
    },
  }),
  defineRoute({
    ...base,
    method: 'post',
    path: '/api/managed-sources/:source_id/sync-async',
    operationId: 'syncManagedSourceAsync',
    summary: 'Start a sync job and answer its job_id at once',
    params: idParams,
    responses: {
      202: {
        description: 'Started',
        schema: successEnvelope(
          z.object({
            job_id: z.string(),
            status: z.literal('running'),
            expected_release_commit: z.string().nullable(),
          }),
        ),
      },
      404: { description: 'Unknown source' },
      409: { description: IN_PROGRESS },
      500: { description: CLEANUP_PENDING },
    },
    successStatus: 202,
    handler: async ({ params, principal, deps, em }) => {
      const row = await loadSource(em, principal, params.source_id);
      // Answers at once: no look-up of the remote, so no expected release commit (no release check).
      const job = await startSync(em, deps, principal, row);
      return {
        success: true,
        data: { job_id: job.jobId, status: 'running' as const, expected_release_commit: job.expected },
      };
    },
  }),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/managed-sources/:source_id/sync-status/:job_id',
    operationId: 'getManagedSourceSyncStatus',
    summary: 'A sync job: running (phase, files scanned so far), then complete or error with its result',
    params: z.object({ source_id: SourceId, job_id: JobId }),
    responses: {
      200: { description: 'The job', schema: successEnvelope(JobView) },
      404: { description: 'Unknown source or job' },
    },
    handler: async ({ params, principal, em }) => {
      const job = await em.findOne(ManagedSourceSyncJobEntity, {
        jobId: params.job_id,
        sourceId: params.source_id,
        tenant: principal.tenant,
      });
      if (!job) throw new NotFoundError(`No sync job ${params.job_id} of managed source ${params.source_id}.`);
      return {
        success: true,
        data: {
          job_id: job.jobId,
          source_id: job.sourceId,
          status: job.status,
          phase: job.phase,
          files_scanned: job.filesScanned,
          expected_release_commit: job.expectedReleaseCommit,
          result: (job.result as z.output<typeof SyncResultView> | null) ?? null,
          error: (job.error as { code: string; message: string | null } | null) ?? null,
          started_at: toIso(job.startedAt),
          finished_at: job.finishedAt ? toIso(job.finishedAt) : null,
        },
      };
    },
  }),
];
