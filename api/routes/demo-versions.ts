import { z } from 'zod';
import {
  callerOf,
  createRun,
  createVersion,
  getRun,
  getVersion,
  listRuns,
  listVersions,
  submitUserInfo,
  userInfoStatus,
} from '../../shared/demo/versions.js';
import { defineRoute, errorResponse, successEnvelope, type AnyRoute } from '../http/route.js';
import {
  DEMO_PROFILES,
  DEMO_RUN_STATUSES,
  DEMO_VERSION_BINDING_INVALID,
  DEMO_VERSION_PROFILE_UNAVAILABLE,
  DEMO_VERSION_STATUSES,
} from '../../workflows/demo-version-definitions.js';

/**
 * Hosted demo presenter routes (spec: "Demo and presenter routes"): demo versions and their runs.
 * Access `presenter`: the internal token, or a person with `present_demos` and the role `staff` or
 * `admin`. Plus the demo user's profile form and `GET /api/demo/user-info-status`.
 */
const tags = ['demo'];
const Id = z.uuid();
const BindingIds = z.array(z.string().min(1).max(200)).max(50);
const PresenterSessionId = z
  .string()
  .min(1)
  .max(128)
  .describe('The presenter session this action belongs to (shared field of the presenter routes)');

const Version = z
  .object({
    id: z.string(),
    name: z.string(),
    profile: z.string(),
    bindings: z.object({
      agents: z.array(z.string()),
      blueprints: z.array(z.string()),
      connections: z.array(z.string()),
    }),
    status: z.enum(DEMO_VERSION_STATUSES),
    error_code: z
      .enum([DEMO_VERSION_BINDING_INVALID, DEMO_VERSION_PROFILE_UNAVAILABLE])
      .nullable()
      .describe('Why validation failed (status `failed`)'),
    error: z.string().nullable(),
    presenter_session_id: z.string().nullable(),
    created_by: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'DemoVersion' });

const Run = z
  .object({
    id: z.string(),
    version_id: z.string(),
    status: z.enum(DEMO_RUN_STATUSES),
    steps: z.array(
      z.object({
        kind: z.enum(['agent', 'blueprint', 'connection']),
        target: z.string(),
        status: z.enum(['pending', 'done', 'skipped', 'failed']),
        detail: z.string().nullable(),
      }),
    ),
    error: z.string().nullable(),
    presenter_session_id: z.string().nullable(),
    created_by: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    started_at: z.string().nullable(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'DemoRun' });

const UserInfoStatus = z.object({ has_submitted: z.boolean(), submitted_at: z.string().nullable() });

export const demoVersionRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/api/demo/versions',
    operationId: 'listDemoVersions',
    summary: 'Catalog of demo versions, newest first (at most 500)',
    tags,
    access: { kind: 'presenter' },
    query: z.object({ status: z.enum(DEMO_VERSION_STATUSES).optional() }),
    responses: { 200: { description: 'Versions', schema: successEnvelope(z.array(Version)) } },
    handler: async ({ query, principal, deps, em }) => ({
      success: true,
      data: await listVersions(em, callerOf(principal, deps), query.status),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/demo/versions',
    operationId: 'createDemoVersion',
    summary:
      'Create a demo version (`draft`); its validation workflow moves it to `validating`, then `ready` or `failed`',
    description: `Validation (workflow \`demo-version/<id>\`) fails with \`error_code\` \`${DEMO_VERSION_PROFILE_UNAVAILABLE}\` when \`profile\` is not one of ${DEMO_PROFILES.map((p) => `\`${p}\``).join(', ')}, and \`${DEMO_VERSION_BINDING_INVALID}\` when a binding names an agent, blueprint or (CRM) connection id that does not exist in the tenant.`,
    tags,
    access: { kind: 'presenter' },
    body: z.object({
      name: z.string().min(1).max(200),
      profile: z
        .string()
        .min(1)
        .max(64)
        .describe(`One of ${DEMO_PROFILES.join(', ')}; others fail validation`),
      bindings: z
        .object({
          agents: BindingIds.optional(),
          blueprints: BindingIds.optional(),
          connections: BindingIds.optional(),
        })
        .default({}),
      presenter_session_id: PresenterSessionId.optional(),
    }),
    successStatus: 201,
    responses: { 201: { description: 'Created (`draft`)', schema: successEnvelope(Version) } },
    handler: async ({ body, principal, deps, em }) => ({
      success: true,
      data: await createVersion(deps, em, callerOf(principal, deps), body),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/demo/versions/runs',
    operationId: 'listDemoRuns',
    summary: 'Runs of demo versions, newest first (at most 500), optionally of one version',
    tags,
    access: { kind: 'presenter' },
    query: z.object({ version_id: Id.optional(), status: z.enum(DEMO_RUN_STATUSES).optional() }),
    responses: { 200: { description: 'Runs', schema: successEnvelope(z.array(Run)) } },
    handler: async ({ query, principal, deps, em }) => ({
      success: true,
      data: await listRuns(em, callerOf(principal, deps), query),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/demo/versions/runs',
    operationId: 'createDemoRun',
    summary:
      'Run a ready demo version (`prepared`); workflow `demo-run/<id>` moves it to `running`, then `completed`, `failed` or `incomplete`',
    description:
      'Steps: each bound agent, blueprint and connection must still resolve. `completed` when every step was done, `incomplete` when a step was skipped (its subject is gone) or the run was cancelled, `failed` when a step failed or the version stopped being ready.',
    tags,
    access: { kind: 'presenter' },
    body: z.object({ version_id: Id, presenter_session_id: PresenterSessionId.optional() }),
    successStatus: 201,
    responses: {
      201: { description: 'Created (`prepared`)', schema: successEnvelope(Run) },
      404: errorResponse('No such version'),
      409: errorResponse(
        'The version is not ready (`conflict`, `payload.code` `DEMO_VERSION_NOT_READY`, `payload.status`)',
      ),
    },
    handler: async ({ body, principal, deps, em }) => ({
      success: true,
      data: await createRun(deps, em, callerOf(principal, deps), body),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/demo/versions/runs/:run_id',
    operationId: 'getDemoRun',
    summary: 'One run of a demo version, with its steps',
    tags,
    access: { kind: 'presenter' },
    params: z.object({ run_id: Id }),
    responses: {
      200: { description: 'Run', schema: successEnvelope(Run) },
      404: errorResponse('No such run'),
    },
    handler: async ({ params, principal, deps, em }) => ({
      success: true,
      data: await getRun(em, callerOf(principal, deps), params.run_id),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/demo/versions/:version_id',
    operationId: 'getDemoVersion',
    summary: 'One demo version with its status and, when failed, its `error_code`',
    tags,
    access: { kind: 'presenter' },
    params: z.object({ version_id: Id }),
    responses: {
      200: { description: 'Version', schema: successEnvelope(Version) },
      404: errorResponse('No such version'),
    },
    handler: async ({ params, principal, deps, em }) => ({
      success: true,
      data: await getVersion(em, callerOf(principal, deps), params.version_id),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/demo/user-info',
    operationId: 'submitDemoUserInfo',
    summary: "Submit the demo user's profile form (a new submission replaces the previous one)",
    tags,
    access: { kind: 'authenticated', permission: null, principalKinds: ['person'] },
    body: z.object({
      name: z.string().min(1).max(200),
      email: z
        .string()
        .min(3)
        .max(254)
        .regex(/^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+$/, 'an e-mail address'),
      company: z.string().max(200).optional(),
    }),
    responses: { 200: { description: 'Stored', schema: successEnvelope(UserInfoStatus) } },
    handler: async ({ body, principal, em }) => ({ success: true, data: await submitUserInfo(em, principal, body) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/demo/user-info-status',
    operationId: 'getDemoUserInfoStatus',
    summary: 'Whether the calling person has submitted the demo profile form (`has_submitted`)',
    tags,
    access: { kind: 'authenticated', permission: null, principalKinds: ['person'] },
    responses: { 200: { description: 'Status', schema: successEnvelope(UserInfoStatus) } },
    handler: async ({ principal, em }) => ({ success: true, data: await userInfoStatus(em, principal) }),
  }),
];
