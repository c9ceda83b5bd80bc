import { z } from 'zod';
import { API_KEY_CONNECTION, API_KEY_CONNECTION_TYPE } from '../../shared/code-agent/connection.js';
import { CRM_CONNECTION_TYPE } from '../../shared/crm/connection-types.js';
import {
  createAnyConnection,
  getConnectionView,
  listConnectionViews,
  updateAnyConnection,
} from '../../shared/crm/connection-inventory.js';
import { connectionView, deleteConnection } from '../../shared/crm/connections.js';
import { completeAuthorization, startAuthorization } from '../../shared/crm/oauth-flow.js';
import { savedEndpointRefusalDoc } from '../../shared/http/trust.js';
import { defineRoute, successEnvelope, type RouteContext } from '../http/route.js';

const tags = ['connections'];
const NameParams = z.object({ name: z.string().min(1).max(64) });
const ConnectionName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'letters, digits, _ and -, up to 64')
  .describe('Suggested for user_oauth: crm_oauth_main');
const Config = z
  .record(z.string(), z.unknown())
  .describe('Per-mode and shared fields (see GET /api/connections/types); secrets are write-only');

const ConnectionSchema = z
  .object({
    name: z.string(),
    type: z.literal('crm').or(z.string()),
    category: z.string(),
    auth_mode: z.string(),
    config: z
      .record(z.string(), z.unknown())
      .describe('Secret fields read as "********"; send that back (or omit) to keep them'),
    egress_hosts: z
      .array(z.string())
      .describe('login_host and instance_url hosts, for deployments that approve outbound access'),
    redirect_uri: z.string().nullable().describe('user_oauth: register exactly this callback with the OAuth app'),
    authorized: z.boolean().describe('Tokens are cached (sealed) for this connection'),
    connection_test: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe('Result of the save-time test against login and instance hosts'),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'CrmConnection' });

// Koa 3 `origin` is the Origin header; the callback needs our own scheme and host.
const baseUrl = (ctx: RouteContext<unknown, unknown, unknown>) =>
  ctx.deps.config.publicBaseUrl ?? `${ctx.koa.protocol}://${ctx.koa.host}`;
const HOST_REFUSED = savedEndpointRefusalDoc(
  'a CRM host (`login_host`, `instance_url`, `authorization_url`, `token_url`; loopback also with CRM_ALLOW_INSECURE_LOOPBACK) or an `api_base_url`',
);
const manage = { kind: 'authenticated', permission: 'manage_all_connections' } as const;
const view = { kind: 'authenticated', permission: 'view_connections' } as const;
const access = 'Reads need view_connections; create, change, delete and authorize need manage_all_connections.';

export const connectionRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/connections/types',
    operationId: 'listConnectionTypes',
    summary: 'Connection types with categories, auth modes and field tables (for rendering the form)',
    tags,
    access: view,
    responses: {
      200: {
        description: 'Types',
        schema: successEnvelope(z.object({ types: z.array(z.record(z.string(), z.unknown())) })),
      },
    },
    handler: async () => ({ success: true, data: { types: [CRM_CONNECTION_TYPE, API_KEY_CONNECTION_TYPE] } }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/connections',
    operationId: 'listConnections',
    summary: 'Saved connections of the tenant (secrets masked)',
    description: access,
    tags,
    access: view,
    responses: {
      200: {
        description: 'Connections',
        schema: successEnvelope(z.object({ connections: z.array(ConnectionSchema) })),
      },
    },
    handler: async (ctx) => ({
      success: true,
      data: { connections: await listConnectionViews(ctx.em, ctx.principal.tenant, baseUrl(ctx)) },
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/connections',
    operationId: 'createConnection',
    summary:
      'Save a CRM connection (tested against the login and instance hosts) or a code-agent api_key connection (tested with GET /v1/models)',
    description: `${access} A missing required field, an unknown mode, a malformed policy or a non-HTTPS host answers 400 naming the field and saves nothing; so does a host the egress policy never allows (\`EGRESS_REFUSED\`). Plain-http loopback hosts: a CRM's only with CRM_ALLOW_INSECURE_LOOPBACK=true, an api_key connection's only with PLATFORM_EGRESS_ALLOW_PRIVATE=true. Secrets are sealed with AES-256-GCM (key from PLATFORM_SECRETS_KEY, else a key file under PLATFORM_DATA_DIR).`,
    tags,
    access: manage,
    body: z.object({
      name: ConnectionName,
      type: z.enum(['crm', API_KEY_CONNECTION]),
      auth_mode: z
        .string()
        .describe('crm: user_oauth, jwt_bearer, refresh_token or client_credentials; api_key: api_key'),
      config: Config,
    }),
    successStatus: 201,
    responses: {
      201: { description: 'Saved; `connection_test` holds the test result', schema: successEnvelope(ConnectionSchema) },
      400: { description: `Invalid field (named in payload.fields); or ${HOST_REFUSED}` },
      409: { description: 'A connection with this name exists' },
    },
    handler: async (ctx) => ({
      success: true,
      data: await createAnyConnection(ctx.deps, ctx.em, ctx.principal, ctx.body, baseUrl(ctx)),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/connections/:name',
    operationId: 'getConnection',
    summary: 'One connection (secrets masked)',
    tags,
    access: view,
    params: NameParams,
    responses: {
      200: { description: 'Connection', schema: successEnvelope(ConnectionSchema) },
      404: { description: 'Unknown connection' },
    },
    handler: async (ctx) => ({
      success: true,
      data: await getConnectionView(ctx.em, ctx.principal.tenant, ctx.params.name, baseUrl(ctx)),
    }),
  }),
  defineRoute({
    method: 'patch',
    path: '/api/connections/:name',
    operationId: 'updateConnection',
    summary: 'Change fields (others kept; secrets kept unless replaced), then test again',
    description: 'Changing auth settings drops cached tokens. Same validation as create.',
    tags,
    access: manage,
    params: NameParams,
    body: z.object({ auth_mode: z.string().optional(), config: Config.optional() }),
    responses: {
      200: { description: 'Saved and tested', schema: successEnvelope(ConnectionSchema) },
      400: { description: `Invalid field; or ${HOST_REFUSED}` },
      404: { description: 'Unknown connection' },
    },
    handler: async (ctx) => ({
      success: true,
      data: await updateAnyConnection(ctx.deps, ctx.em, ctx.principal, ctx.params.name, ctx.body, baseUrl(ctx)),
    }),
  }),
  defineRoute({
    method: 'delete',
    path: '/api/connections/:name',
    operationId: 'deleteConnection',
    summary: 'Delete a connection (its sealed secrets and tokens with it)',
    tags,
    access: manage,
    params: NameParams,
    responses: {
      200: { description: 'Deleted', schema: successEnvelope(z.object({ deleted: z.literal(true) })) },
      404: { description: 'Unknown connection' },
    },
    handler: async (ctx) => {
      await deleteConnection(ctx.em, ctx.principal, ctx.params.name);
      return { success: true, data: { deleted: true } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/connections/:name/oauth/authorize',
    operationId: 'startConnectionAuthorization',
    summary: 'user_oauth: start the authorization-code flow (PKCE); open authorization_url in the browser',
    tags,
    access: manage,
    params: NameParams,
    responses: {
      200: {
        description: 'Where to send the browser',
        schema: successEnvelope(
          z.object({ authorization_url: z.string(), redirect_uri: z.string(), state: z.string() }),
        ),
      },
      404: { description: 'Unknown connection, or not a CRM connection' },
      409: {
        description:
          'Not a user_oauth connection; or, in container-service mode, `EGRESS_APPROVAL_REQUIRED`: its hosts are registered but not yet approved into the egress list (`payload.pending_entries`)',
      },
    },
    handler: async (ctx) => ({
      success: true,
      data: await startAuthorization(ctx.deps, ctx.em, ctx.principal, ctx.params.name, baseUrl(ctx)),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/connections/:name/oauth/callback',
    operationId: 'completeConnectionAuthorization',
    summary: 'user_oauth: the redirect URI the CRM sends the browser back to (the state authenticates it)',
    description:
      'On redirect_uri_mismatch the 400 names the redirect URI to register and the fix (re-copy it; a change can need a few minutes to propagate).',
    tags,
    access: { kind: 'public' },
    params: NameParams,
    query: z.object({
      code: z.string().max(2000).optional(),
      state: z.string().min(1).max(200),
      error: z.string().max(200).optional(),
      error_description: z.string().max(2000).optional(),
    }),
    responses: {
      200: {
        description:
          'Authorized; tokens cached; `connection_test` holds the test run with the new tokens (login and instance hosts)',
        schema: successEnvelope(ConnectionSchema),
      },
      400: {
        description: 'CRM error (payload.code e.g. redirect_uri_mismatch, with payload.fix) or unknown/expired state',
      },
      409: {
        description:
          'Container-service mode: the instance host the CRM named is not on the egress list; it is registered for approval (`EGRESS_APPROVAL_REQUIRED`, `payload.pending_entries`) and no tokens are kept',
      },
    },
    handler: async (ctx) => ({
      success: true,
      data: connectionView(await completeAuthorization(ctx.deps, ctx.em, ctx.params.name, ctx.query), baseUrl(ctx)),
    }),
  }),
];
