import { z } from 'zod';
import { authorizationServerMetadata, protectedResourceMetadata } from '../mcp/metadata.js';
import { AUTHORIZATION_SERVER_PATH, MCP_MOUNTS, PROTECTED_RESOURCE_PATH, publicOrigin } from '../mcp/public-url.js';
import { defineRoute, errorResponse, type AnyRoute } from '../http/route.js';

const ProtectedResourceSchema = z
  .object({
    resource: z.string(),
    authorization_servers: z
      .array(z.string())
      .optional()
      .describe('Omitted with header/proxy auth or sign-in off: use a personal access token'),
    scopes_supported: z.array(z.string()),
    bearer_methods_supported: z.array(z.literal('header')),
    resource_name: z.string(),
    resource_documentation: z.string(),
    platform_auth_mode: z
      .enum(['none', 'header', 'ingress', 'oidc', 'oauth_proxy'])
      .describe('Extension: how MCP clients authenticate here'),
    platform_auth_guidance: z.string().describe('Extension: what a client should do, in one sentence'),
  })
  .meta({ id: 'OAuthProtectedResourceMetadata' });

const ORIGIN_NOTE =
  'Public and CORS-open. URLs are built from PLATFORM_MCP_PUBLIC_URL, else PLATFORM_PUBLIC_BASE_URL, else the request origin as forwarded (X-Forwarded-Proto, X-Forwarded-Host).';

/** RFC 9728 documents for the origin and each mounted gateway path, and the RFC 8414 document. */
export const wellKnownRoutes: AnyRoute[] = [
  ...['', ...MCP_MOUNTS.map((m) => m.path)].map((mountPath) =>
    defineRoute({
      method: 'get',
      path: `${PROTECTED_RESOURCE_PATH}${mountPath}`,
      operationId: `getProtectedResourceMetadata${mountPath
        .split('/')
        .filter(Boolean)
        .map((p) => p[0]!.toUpperCase() + p.slice(1))
        .join('')}`,
      ownShape: 'Hosted gateway (MCP): RFC 9728 protected-resource metadata',
      summary: `OAuth protected-resource metadata (RFC 9728) for ${mountPath ? `the gateway at ${mountPath}/` : 'the platform origin'}`,
      description: `${ORIGIN_NOTE} \`authorization_servers\` is the platform itself with PLATFORM_OAUTH_PROXY_ENABLED, else AUTH_ISSUER; with AUTH_PROVIDER=proxy and no AUTH_ISSUER (header/proxy auth) or AUTH_PROVIDER=none it is omitted, \`scopes_supported\` is empty and \`platform_auth_mode\` says how to authenticate (a personal access token).`,
      tags: ['mcp'],
      access: { kind: 'public' },
      responses: { 200: { description: 'Metadata', schema: ProtectedResourceSchema } },
      handler: async ({ koa, deps }) =>
        protectedResourceMetadata(deps.config, publicOrigin(koa, deps.config), mountPath),
    }),
  ),
  defineRoute({
    method: 'get',
    path: AUTHORIZATION_SERVER_PATH,
    operationId: 'getAuthorizationServerMetadata',
    summary: 'OAuth authorization-server metadata (RFC 8414)',
    description: `${ORIGIN_NOTE} With the OAuth proxy on: the platform (issuer = public origin, /authorize, /oauth/token, public clients, PKCE S256, no registration endpoint: clients send any client_id and the redirect-URI rules decide). Otherwise a mirror of the upstream provider's discovery document (issuer = AUTH_ISSUER). Without an issuer: 404 \`not_found\` with payload.reason no_authorization_server.`,
    tags: ['mcp'],
    access: { kind: 'public' },
    responses: {
      200: { description: 'Metadata' },
      404: errorResponse('No authorization server (header/proxy auth or sign-in off)'),
    },
    handler: async ({ koa, deps }) => authorizationServerMetadata(deps.config, publicOrigin(koa, deps.config)),
  }),
];
