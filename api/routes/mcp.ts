import { z } from 'zod';
import { guardGatewayPost, handleGatewayPost, refuseGatewayMethod } from '../mcp/gateway.js';
import { MCP_MOUNTS } from '../mcp/public-url.js';
import { defineRoute, errorResponse, type AnyRoute } from '../http/route.js';

const JsonRpcBody = z
  .unknown()
  .describe(
    'One JSON-RPC 2.0 message or a batch (MCP Streamable HTTP); sent with Accept: application/json, text/event-stream',
  );

const POST_DESCRIPTION = [
  'Streamable HTTP MCP, stateless: every POST gets a new server and transport, responses are JSON (no SSE, no session id).',
  "One tool, `platform`, with parameter `action` and each action's parameters as optional fields of one flat input schema; the action enum is advertised per version and an action of the other version is refused naming its path.",
  'Authentication: identity-provider bearer tokens or `gp_` personal access tokens (none with AUTH_PROVIDER=none). 401 carries `WWW-Authenticate: Bearer resource_metadata="<public origin>/.well-known/oauth-protected-resource/<mount>"`, with `error="invalid_token"` when a presented credential fails.',
  'A browser `Origin` other than the public origin (PLATFORM_MCP_PUBLIC_URL / PLATFORM_PUBLIC_BASE_URL) or a loopback origin is refused with 403; without a configured public URL only loopback origins pass.',
].join(' ');

const slug = (path: string) =>
  path
    .split('/')
    .filter(Boolean)
    .map((p) => p[0]!.toUpperCase() + p.slice(1))
    .join('');

const POST_RESPONSES = {
  200: { description: 'JSON-RPC response (application/json)' },
  202: { description: 'Notification or response accepted' },
  401: errorResponse('Missing or invalid credential, with the MCP WWW-Authenticate challenge'),
  403: errorResponse('Origin not allowed (`forbidden`, payload.reason origin_not_allowed)'),
  406: {
    description: 'Accept lacks application/json and text/event-stream (JSON-RPC error from the transport)',
  },
};

type Mount = (typeof MCP_MOUNTS)[number];

const postRoute = (mount: Mount, path: string, id: string) =>
  defineRoute({
    method: 'post',
    path,
    operationId: `post${id}`,
    summary: `MCP gateway, ${mount.label}`,
    description: POST_DESCRIPTION,
    tags: ['mcp'],
    access: { kind: 'public' },
    guard: (koa, deps, em) => guardGatewayPost(koa, deps, em, mount.path),
    body: JsonRpcBody,
    bodyKind: 'jsonrpc',
    responses: POST_RESPONSES,
    handler: async ({ koa, deps, em, requestId, log }) => handleGatewayPost({ koa, deps, em, requestId, log }, mount),
  });

const refusedMethodRoute = (mount: Mount, path: string, id: string, method: 'get' | 'delete') =>
  defineRoute({
    method,
    path,
    operationId: `${method}${id}`,
    summary: `MCP gateway, ${mount.label}: ${method.toUpperCase()} is not supported`,
    description:
      'The gateway is stateless: no standalone SSE stream (GET) and no session to end (DELETE). Answers 405 with `Allow: POST`.',
    tags: ['mcp'],
    access: { kind: 'public' },
    responses: { 405: errorResponse('Method not allowed') },
    handler: async ({ koa, deps }) => refuseGatewayMethod(koa, deps),
  });

/** The gateway at /mcp, /mcp/v2 and /mcp/v1, each with and without the trailing slash (POST; GET and DELETE answer 405). */
export const mcpRoutes: AnyRoute[] = MCP_MOUNTS.flatMap((mount) =>
  [mount.path, `${mount.path}/`].flatMap((path) => {
    const id = `${slug(mount.path)}${path.endsWith('/') ? 'Slash' : ''}`;
    const refused = (['get', 'delete'] as const).map((method) => refusedMethodRoute(mount, path, id, method));
    return [postRoute(mount, path, id), ...refused];
  }),
);
