import { z } from 'zod';
import { savedEndpointRefusalDoc } from '../../shared/http/trust.js';
import { requestSourceDeletion } from '../../shared/managed-sources/deletion.js';
import {
  createSource,
  listSources,
  loadSource,
  SCAN_TYPES,
  updateSource,
} from '../../shared/managed-sources/sources.js';
import {
  checkApplyPins,
  checkNoStalePreview,
  runSync,
  startSync,
  syncAfterSave,
} from '../../shared/managed-sources/sync-start.js';
import { loadSyncJob } from '../../shared/managed-sources/sync-job-store.js';
import {
  JobView,
  SourceView,
  SyncJobRef,
  SyncResultView,
  sourceView,
  sourceViews,
  syncJobView,
  UpsertEnvelope,
} from '../../shared/managed-sources/views.js';
import { defineRoute, successEnvelope } from '../http/route.js';

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
  scan_types_enabled: z
    .array(z.enum(SCAN_TYPES))
    .min(1)
    .max(SCAN_TYPES.length)
    .describe(
      'What a sync imports. `missions`: each missions/<mission_key>/mission.yaml (blueprint, optional name and parameters) starts one mission per key, once ever, of a built-in blueprint or one this source imports; refusals are degraded artifacts tried again next sync',
    ),
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

const UPSERT_SHAPE = 'Managed sources and artifacts (upsert envelope: success, source, sync, sync_job, warning…)';
const IN_PROGRESS = '`MANAGED_SOURCE_SYNC_IN_PROGRESS`: a sync of this source is running';
const CLEANUP_PENDING =
  '`SOURCE_DELETE_CLEANUP_PENDING`: the source is being deleted (its artifact cleanup is pending)';
const TYPE_PERMISSION =
  'Missing `manage_repos`, or `manage_agents` (agents) / `manage_users` (roles) for the scan types';
const GIT_HOST_REFUSED = `Invalid field; or ${savedEndpointRefusalDoc('`repo_url`', 'GIT_EGRESS_REFUSED')}`;

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
      const { sync_now, sync_in_background, ...input } = body;
      const row = await createSource(em, deps.config, principal, input);
      return syncAfterSave(em, deps, principal, row, { sync_now, sync_in_background });
    },
  }),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/managed-sources',
    operationId: 'listManagedSources',
    summary: "The tenant's managed sources (credentials masked)",
    responses: { 200: { description: 'Sources', schema: successEnvelope(z.object({ sources: z.array(SourceView) })) } },
    handler: async ({ principal, em }) => ({
      success: true,
      data: { sources: await sourceViews(em, await listSources(em, principal.tenant)) },
    }),
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
      data: await sourceView(em, await loadSource(em, principal.tenant, params.source_id)),
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
      const row = await loadSource(em, principal.tenant, params.source_id);
      const { sync_now, sync_in_background, ...patch } = body;
      await updateSource(em, deps.config, principal, row, patch);
      return syncAfterSave(em, deps, principal, row, { sync_now, sync_in_background });
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
      const row = await loadSource(em, principal.tenant, params.source_id);
      const done = await requestSourceDeletion(em, deps, principal, row);
      if (done === 'pending') {
        koa.body = {
          success: true,
          data: { source_id: row.id, deleted: false as const, status: 'pending_deletion' as const },
        };
        koa.status = 202;
        return koa.body;
      }
      const { removed_agents, removed_roles } = done;
      return { success: true, data: { source_id: row.id, deleted: true as const, removed_agents, removed_roles } };
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
      const row = await loadSource(em, principal.tenant, params.source_id);
      const { overwrite_indexes: overwrite, ...apply } = body;
      checkApplyPins(apply);
      const run = await runSync(em, deps, principal, row, { apply, overwriteIndexes: overwrite === true });
      if (run.result === 'pending') {
        // Set here: the mount answers successStatus (200) only when the handler left no body.
        koa.body = { success: true, data: { job_id: run.jobId, status: 'running' as const } };
        koa.status = 202;
        return koa.body;
      }
      checkNoStalePreview(run.result);
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
        schema: successEnvelope(SyncJobRef),
      },
      404: { description: 'Unknown source' },
      409: { description: IN_PROGRESS },
      500: { description: CLEANUP_PENDING },
    },
    successStatus: 202,
    handler: async ({ params, principal, deps, em }) => {
      const row = await loadSource(em, principal.tenant, params.source_id);
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
    description:
      'A source keeps its newest 200 terminal jobs (spec, Limits): starting or ending a job prunes older complete or error jobs (never a running one), whose status then answers 404.',
    params: z.object({ source_id: SourceId, job_id: JobId }),
    responses: {
      200: { description: 'The job', schema: successEnvelope(JobView) },
      404: { description: 'Unknown source or job (or a terminal job pruned beyond the newest 200)' },
    },
    handler: async ({ params, principal, em }) => ({
      success: true,
      data: syncJobView(await loadSyncJob(em, principal.tenant, params.source_id, params.job_id)),
    }),
  }),
];
