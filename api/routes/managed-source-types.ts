import { z } from 'zod';
import type { Principal } from '../../shared/auth/principal.js';
import type { Permission } from '../../shared/auth/rbac.js';
import { ManagedFlowEntity, ManagedSourceEntity } from '../../shared/db/entities/index.js';
import {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
} from '../../shared/errors.js';
import {
  pendingFlowChanges,
  tenantSources,
  type PendingFlowChange,
} from '../../shared/managed-sources/flow-promotions.js';
import { defineRoute, successEnvelope, type AnyRoute, type RouteContext } from '../http/route.js';
import { managedSourceRoutes } from './managed-sources.js';
import { ManagedSourceCodes } from '../../shared/managed-sources/error-codes.js';

/**
 * Per-type repository routes (issue 12): `/api/skills`, `/api/apps` and `/api/flows` repositories are
 * thin views over managed sources whose `scan_types_enabled` holds the type. Every handler delegates
 * to the managed-source route of the same operation (looked up by operationId), so creation, syncing
 * and deletion behave, and answer, exactly as there; the views add the type filter, the type's own
 * permission next to `manage_repos`, `Deprecation: true` on POST (legacy routes), and 409
 * `SOURCE_HAS_MULTIPLE_TYPES` when deleting a source that also imports other types.
 */
const TYPES = [
  { type: 'skills', permission: 'manage_skills' },
  { type: 'apps', permission: null },
  { type: 'flows', permission: 'manage_flows' },
] as const satisfies ReadonlyArray<{ type: string; permission: Permission | null }>;

function managedRoute(operationId: string): AnyRoute {
  const route = (managedSourceRoutes as AnyRoute[]).find((r) => r.operationId === operationId);
  if (!route) throw new Error(`managed-source route ${operationId} is not declared`);
  return route;
}

const SourceId = z.string().regex(/^src_[0-9a-f]{16}$/, 'a managed source id');
const idParams = z.object({ source_id: SourceId });
type Ctx = RouteContext<Record<string, unknown>, Record<string, unknown>, Record<string, unknown>>;

function allowed(principal: Principal, permission: Permission | null): void {
  if (principal.permissions.has('manage_repos')) return;
  if (permission && principal.permissions.has(permission)) return;
  throw new ForbiddenError(
    `Permission denied: this action needs "manage_repos"${permission ? ` or "${permission}"` : ''}. Ask an administrator to grant you a role that includes it.`,
    { required_permission: permission ? ['manage_repos', permission] : ['manage_repos'], roles: principal.roles },
  );
}

async function typedSource(ctx: Ctx, type: string) {
  const row = await ctx.em.findOne(ManagedSourceEntity, {
    id: (ctx.params as { source_id: string }).source_id,
    tenant: ctx.principal.tenant,
  });
  if (!row || !row.settings.scan_types_enabled.includes(type))
    throw new NotFoundError(`No ${type} repository ${(ctx.params as { source_id: string }).source_id}.`);
  return row;
}

const deprecated = (ctx: Ctx) => ctx.koa.set('Deprecation', 'true');
const PERMISSION_403 = (permission: Permission | null) =>
  `Needs \`manage_repos\`${permission ? ` or \`${permission}\`` : ''} (\`forbidden\`)`;

function typeRoutes(type: string, permission: Permission | null): AnyRoute[] {
  const create = managedRoute('createManagedSource');
  const list = managedRoute('listManagedSources');
  const get = managedRoute('getManagedSource');
  const del = managedRoute('deleteManagedSource');
  const sync = managedRoute('syncManagedSource');
  const base = {
    tags: ['managed-sources'],
    access: { kind: 'authenticated' as const },
  };
  const prefix = `/api/${type}/repositories`;
  const forbidden = { 403: { description: PERMISSION_403(permission) } };
  const createBody = (create.body as z.ZodObject).omit({ scan_types_enabled: true });
  return [
    defineRoute({
      ...base,
      method: 'get',
      path: prefix,
      operationId: `list${cap(type)}Repositories`,
      summary: `Managed sources that import ${type}`,
      responses: { ...list.responses, ...forbidden },
      handler: async (ctx) => {
        allowed(ctx.principal, permission);
        const answer = (await list.handler(ctx)) as {
          success: true;
          data: { sources: Array<{ scan_types_enabled: string[] }> };
        };
        return {
          ...answer,
          data: { ...answer.data, sources: answer.data.sources.filter((s) => s.scan_types_enabled.includes(type)) },
        };
      },
    }),
    defineRoute({
      ...base,
      method: 'post',
      path: prefix,
      operationId: `create${cap(type)}Repository`,
      summary: `Register a repository of ${type} (legacy; answers \`Deprecation: true\`): a managed source scanning ${type}`,
      description: `Deprecated: use POST /api/managed-sources with scan_types_enabled ["${type}"]. Same body without scan_types_enabled, same answer.`,
      body: createBody,
      bodyKind: 'config',
      ownShape: create.ownShape,
      successStatus: create.successStatus,
      responses: { ...create.responses, ...forbidden },
      handler: async (ctx) => {
        allowed(ctx.principal, permission);
        deprecated(ctx as Ctx);
        return create.handler({ ...ctx, body: { ...ctx.body, scan_types_enabled: [type] } });
      },
    }),
    defineRoute({
      ...base,
      method: 'get',
      path: `${prefix}/:source_id`,
      operationId: `get${cap(type)}Repository`,
      summary: `One managed source that imports ${type}`,
      params: idParams,
      responses: { ...get.responses, ...forbidden, 404: { description: `No such source importing ${type}` } },
      handler: async (ctx) => {
        allowed(ctx.principal, permission);
        await typedSource(ctx as Ctx, type);
        return get.handler(ctx);
      },
    }),
    defineRoute({
      ...base,
      method: 'post',
      path: `${prefix}/:source_id/sync`,
      operationId: `sync${cap(type)}Repository`,
      summary: `Sync a managed source that imports ${type} (legacy; answers \`Deprecation: true\`)`,
      params: idParams,
      responses: { ...sync.responses, ...forbidden, 404: { description: `No such source importing ${type}` } },
      handler: async (ctx) => {
        allowed(ctx.principal, permission);
        await typedSource(ctx as Ctx, type);
        deprecated(ctx as Ctx);
        return sync.handler({ ...ctx, body: {} });
      },
    }),
    defineRoute({
      ...base,
      method: 'delete',
      path: `${prefix}/:source_id`,
      operationId: `delete${cap(type)}Repository`,
      summary: `Delete a managed source that imports only ${type}`,
      params: idParams,
      responses: {
        ...del.responses,
        ...forbidden,
        404: { description: `No such source importing ${type}` },
        409: {
          description: `\`SOURCE_HAS_MULTIPLE_TYPES\`: the source imports other types too (delete it with DELETE /api/managed-sources/{source_id}); or ${del.responses[409]?.description ?? 'a sync is running'}`,
        },
      },
      handler: async (ctx) => {
        allowed(ctx.principal, permission);
        const row = await typedSource(ctx as Ctx, type);
        if (row.settings.scan_types_enabled.length > 1)
          throw new ConflictError(
            `Managed source ${row.id} imports ${row.settings.scan_types_enabled.join(', ')}; deleting it here would remove more than ${type}. Use DELETE /api/managed-sources/${row.id}.`,
            {
              code: ManagedSourceCodes.SOURCE_HAS_MULTIPLE_TYPES,
              source_id: row.id,
              scan_types_enabled: row.settings.scan_types_enabled,
              use: `DELETE /api/managed-sources/${row.id}`,
            },
          );
        return del.handler(ctx);
      },
    }),
  ];
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

const FlowChange = z
  .object({
    change_id: z.string(),
    source_id: z.string(),
    source_name: z.string(),
    flow_name: z.string(),
    change: z.enum(['added', 'modified', 'removed']),
    commit_sha: z.string().describe('The synced commit the change comes from'),
    content_hash: z.string().nullable(),
    promoted_content_hash: z.string().nullable(),
    promoted_commit_sha: z.string().nullable(),
    valid: z.boolean(),
    invalid_reason: z.string().nullable(),
  })
  .meta({ id: 'FlowPendingChange' });

/** Flow promotion needs an acting user: a person, not the system identity or an agent (401 otherwise). */
function actingUser(principal: Principal): void {
  if (principal.kind !== 'person')
    throw new AuthenticationError(
      'Promoting flows needs an acting user: sign in as a person (identity-provider login or your own personal access token).',
      { principal_kind: principal.kind },
    );
}

const flowBase = {
  tags: ['managed-sources'],
  access: { kind: 'authenticated' as const, permission: 'manage_flows' as const },
};

export const flowPromotionRoutes = [
  defineRoute({
    ...flowBase,
    method: 'get',
    path: '/api/flows/pending-promotions',
    operationId: 'listFlowPendingPromotions',
    summary: 'Flow changes synced from managed sources and waiting for promotion',
    query: z.object({ source_id: SourceId.optional() }),
    responses: {
      200: {
        description: 'Pending changes, by source then flow name',
        schema: successEnvelope(z.object({ changes: z.array(FlowChange) })),
      },
      401: { description: 'No acting user (`authentication`)' },
      404: { description: 'No such source' },
    },
    handler: async ({ query, principal, deps, em }) => {
      actingUser(principal);
      const sources = await tenantSources(em, principal.tenant, query.source_id);
      if (query.source_id && !sources.length) throw new NotFoundError(`No managed source ${query.source_id}.`);
      const changes: PendingFlowChange[] = [];
      for (const row of sources) changes.push(...(await pendingFlowChanges(em, deps.config, row)).changes);
      return { success: true, data: { changes } };
    },
  }),
  defineRoute({
    ...flowBase,
    method: 'post',
    path: '/api/flows/pending-promotions/:source_id/:change_id/promote',
    operationId: 'promoteFlowChange',
    summary: 'Promote one pending flow change (a removal forgets the flow)',
    params: z.object({ source_id: SourceId, change_id: z.string().regex(/^fc_[0-9a-f]{32}$/, 'a flow change id') }),
    body: z
      .object({
        expected_commit_sha: z
          .string()
          .regex(/^[0-9a-f]{40}$/, 'a commit sha')
          .optional()
          .describe('Refuse (400 `FLOW_CHANGE_STALE`) unless the source is still synced at this commit'),
      })
      .strict(),
    responses: {
      200: {
        description: 'Promoted',
        schema: successEnvelope(z.object({ change: FlowChange, promoted: z.literal(true), pending_count: z.number() })),
      },
      400: {
        description:
          'Validation failure: `FLOW_INVALID` (the flow cannot be promoted as it is), `FLOW_CHANGE_STALE` (the source moved past expected_commit_sha), or a malformed field',
      },
      401: { description: 'No acting user (`authentication`)' },
      404: { description: 'The change or the source is gone (a later sync superseded it, or it was promoted)' },
    },
    handler: async ({ params, body, principal, deps, em }) => {
      actingUser(principal);
      const [row] = await tenantSources(em, principal.tenant, params.source_id);
      if (!row) throw new NotFoundError(`No managed source ${params.source_id}.`);
      const { changes, flows } = await pendingFlowChanges(em, deps.config, row);
      const change = changes.find((c) => c.change_id === params.change_id);
      if (!change) throw new NotFoundError(`No pending flow change ${params.change_id} of managed source ${row.id}.`);
      if (body.expected_commit_sha && body.expected_commit_sha !== row.syncedCommitSha)
        throw new BadRequestError(
          `Managed source ${row.id} is synced at ${row.syncedCommitSha}, not ${body.expected_commit_sha}; list the pending changes again.`,
          { code: ManagedSourceCodes.FLOW_CHANGE_STALE, commit_sha: row.syncedCommitSha },
        );
      if (!change.valid)
        throw new BadRequestError(`Flow ${change.flow_name} cannot be promoted: ${change.invalid_reason}.`, {
          code: ManagedSourceCodes.FLOW_INVALID,
          flow_name: change.flow_name,
          reason: change.invalid_reason,
        });
      const existing = await em.findOne(ManagedFlowEntity, { sourceId: row.id, flowName: change.flow_name });
      if (change.change === 'removed') {
        if (existing) em.remove(existing);
      } else {
        const flow = flows.get(change.flow_name)!;
        const fields = {
          tenant: row.tenant,
          contentHash: flow.contentHash,
          commitSha: row.syncedCommitSha!,
          manifestPath: flow.manifest,
          promotedAt: new Date(),
          promotedBy: principal.id,
        };
        if (existing) Object.assign(existing, fields);
        else em.create(ManagedFlowEntity, { sourceId: row.id, flowName: change.flow_name, ...fields });
      }
      await em.flush();
      return {
        success: true,
        data: { change, promoted: true as const, pending_count: changes.length - 1 },
      };
    },
  }),
];

export const managedSourceTypeRoutes: AnyRoute[] = [
  ...TYPES.flatMap((t) => typeRoutes(t.type, t.permission)),
  ...flowPromotionRoutes,
];
