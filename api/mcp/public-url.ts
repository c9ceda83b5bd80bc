import type Koa from 'koa';
import type { AppConfig } from '../../shared/config.js';
import type { GatewayVersion } from './actions/registry.js';

/** Where the gateway is mounted; each path is served with and without the trailing slash (the SDK client follows no 301 on POST). */
export const MCP_MOUNTS: ReadonlyArray<{ path: string; version: GatewayVersion; label: string }> = [
  { path: '/mcp', version: 'v2', label: 'default interactive v2' },
  { path: '/mcp/v2', version: 'v2', label: 'explicit v2' },
  { path: '/mcp/v1', version: 'v1', label: 'legacy v1' },
];

const MCP_PATHS = new Set(MCP_MOUNTS.flatMap((m) => [m.path, `${m.path}/`]));
export const isMcpPath = (path: string): boolean => MCP_PATHS.has(path);

export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';
export const AUTHORIZATION_SERVER_PATH = '/.well-known/oauth-authorization-server';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
export const isLoopbackHost = (hostname: string): boolean => LOOPBACK_HOSTS.has(hostname);

/**
 * The origin clients see: `PLATFORM_MCP_PUBLIC_URL` / `PLATFORM_PUBLIC_BASE_URL` when set, else the
 * request's origin as the proxy forwarded it (`X-Forwarded-Proto`, `X-Forwarded-Host`; the app trusts
 * proxies). A Host that is not a valid authority falls back to the socket's address.
 */
export function publicOrigin(ctx: Koa.Context, config: AppConfig): string {
  if (config.mcp.publicOrigin) return config.mcp.publicOrigin;
  try {
    return new URL(`${ctx.protocol}://${ctx.host}`).origin;
  } catch {
    return `${ctx.protocol}://${ctx.req.socket.localAddress ?? '127.0.0.1'}:${ctx.req.socket.localPort ?? ''}`;
  }
}

/** The RFC 9728 metadata URL for a mount (`/mcp/` and `/mcp` share `/.well-known/oauth-protected-resource/mcp`). */
export function resourceMetadataUrl(origin: string, mountPath: string): string {
  return `${origin}${PROTECTED_RESOURCE_PATH}${mountPath}`;
}

/**
 * Browser Origin check against DNS rebinding: an absent Origin (non-browser clients) passes; a
 * present one must be the configured public origin or a loopback origin. Without a configured
 * public URL only loopback origins pass, since the request's own Host is what a rebinding attack controls.
 */
export function originAllowed(origin: string, config: AppConfig): boolean {
  if (config.mcp.publicOrigin && origin === config.mcp.publicOrigin) return true;
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.hostname);
  } catch {
    return false;
  }
}
