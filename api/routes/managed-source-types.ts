import { z } from 'zod';
import type { Permission } from '../../shared/auth/rbac.js';
import {
  checkActingUser,
  listPendingFlowChanges,
  promotePendingFlowChange,
} from '../../shared/managed-sources/flow-promotions.js';
import { checkSingleType, loadTypedSource } from '../../shared/managed-sources/sources.js';
import { defineRoute, successEnvelope, type AnyRoute, type RouteContext } from '../http/route.js';
import { managedSourceRoutes } from './managed-sources.js';

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

const deprecated = (ctx: Ctx) => ctx.koa.set('Deprecation', 'true');
const PERMISSION_403 = (permission: Permission | null) =>
  `Needs \`manage_repos\`${permission ? ` or \`${permission}\`` : ''} (\`forbidden\`)`;

type Perm = Permission | null;
const typeBase = { tags: ['managed-sources'] };
/** `manage_repos`, or the type's own permission: the guard checks it before any input is read. */
const typeAccess = (permission: Perm) =>
  ({
    kind: 'authenticated',
    permission: permission ? (['manage_repos', permission] as const) : 'manage_repos',
  }) as const;
const forbidden = (permission: Perm) => ({ 403: { description: PERMISSION_403(permission) } });
const notImporting = (type: string) => ({ 404: { description: `No such source importing ${type}` } });

/** What a per-type view sets on top of the managed-source route it delegates to. */
interface TypeView {
  /** After `/api/<type>/repositories`. */
  path: string;
  operationId: string;
  summary: string;
  spec?: Partial<AnyRoute>;
  responses?: AnyRoute['responses'];
  /** Runs once the caller holds the type's permission; `managed` is the managed-source route. */
  handle: (ctx: Ctx, managed: AnyRoute) => Promise<unknown>;
}

function typeView(type: string, permission: Perm, from: string, view: TypeView): AnyRoute {
  const managed = managedRoute(from);
  return defineRoute({
    ...typeBase,
    access: typeAccess(permission),
    method: managed.method,
    ...view.spec,
    path: `/api/${type}/repositories${view.path}`,
    operationId: view.operationId,
    summary: view.summary,
    responses: { ...managed.responses, ...forbidden(permission), ...view.responses },
    handler: async (ctx) => view.handle(ctx as Ctx, managed),
  });
}

/** The source named in the path, if it imports `type` (404 otherwise). */
const typedSource = (ctx: Ctx, type: string) =>
  loadTypedSource(ctx.em, ctx.principal.tenant, (ctx.params as { source_id: string }).source_id, type);

const listView = (type: string): TypeView => ({
  path: '',
  operationId: `list${cap(type)}Repositories`,
  summary: `Managed sources that import ${type}`,
  handle: async (ctx, list) => {
    const answer = (await list.handler(ctx)) as {
      success: true;
      data: { sources: Array<{ scan_types_enabled: string[] }> };
    };
    const sources = answer.data.sources.filter((s) => s.scan_types_enabled.includes(type));
    return { ...answer, data: { ...answer.data, sources } };
  },
});

const createView = (type: string, create: AnyRoute): TypeView => ({
  path: '',
  operationId: `create${cap(type)}Repository`,
  summary: `Register a repository of ${type} (legacy; answers \`Deprecation: true\`): a managed source scanning ${type}`,
  spec: {
    description: `Deprecated: use POST /api/managed-sources with scan_types_enabled ["${type}"]. Same body without scan_types_enabled, same answer.`,
    body: (create.body as z.ZodObject).omit({ scan_types_enabled: true }),
    bodyKind: 'config',
    ownShape: create.ownShape,
    successStatus: create.successStatus,
  },
  handle: async (ctx, managed) => {
    deprecated(ctx);
    return managed.handler({ ...ctx, body: { ...ctx.body, scan_types_enabled: [type] } });
  },
});

const getView = (type: string): TypeView => ({
  path: '/:source_id',
  operationId: `get${cap(type)}Repository`,
  summary: `One managed source that imports ${type}`,
  spec: { params: idParams },
  responses: notImporting(type),
  handle: async (ctx, get) => {
    await typedSource(ctx, type);
    return get.handler(ctx);
  },
});

const syncView = (type: string): TypeView => ({
  path: '/:source_id/sync',
  operationId: `sync${cap(type)}Repository`,
  summary: `Sync a managed source that imports ${type} (legacy; answers \`Deprecation: true\`)`,
  spec: { params: idParams },
  responses: notImporting(type),
  handle: async (ctx, sync) => {
    await typedSource(ctx, type);
    deprecated(ctx);
    return sync.handler({ ...ctx, body: {} });
  },
});

const deleteView = (type: string, del: AnyRoute): TypeView => ({
  path: '/:source_id',
  operationId: `delete${cap(type)}Repository`,
  summary: `Delete a managed source that imports only ${type}`,
  spec: { params: idParams },
  responses: {
    ...notImporting(type),
    409: {
      description: `\`SOURCE_HAS_MULTIPLE_TYPES\`: the source imports other types too (delete it with DELETE /api/managed-sources/{source_id}); or ${del.responses[409]?.description ?? 'a sync is running'}`,
    },
  },
  handle: async (ctx, managed) => {
    checkSingleType(await typedSource(ctx, type), type);
    return managed.handler(ctx);
  },
});

const typeRoutes = (type: string, permission: Perm): AnyRoute[] => [
  typeView(type, permission, 'listManagedSources', listView(type)),
  typeView(type, permission, 'createManagedSource', createView(type, managedRoute('createManagedSource'))),
  typeView(type, permission, 'getManagedSource', getView(type)),
  typeView(type, permission, 'syncManagedSource', syncView(type)),
  typeView(type, permission, 'deleteManagedSource', deleteView(type, managedRoute('deleteManagedSource'))),
];

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
      checkActingUser(principal);
      const changes = await listPendingFlowChanges(em, deps.config, principal.tenant, query.source_id);
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
      const target = {
        sourceId: params.source_id,
        changeId: params.change_id,
        expectedCommit: body.expected_commit_sha,
      };
      return { success: true, data: await promotePendingFlowChange(em, deps.config, principal, target) };
    },
  }),
];

export const managedSourceTypeRoutes: AnyRoute[] = [
  ...TYPES.flatMap((t) => typeRoutes(t.type, t.permission)),
  ...flowPromotionRoutes,
];
