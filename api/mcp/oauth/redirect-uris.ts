/**
 * Which client callbacks the OAuth proxy redirects to (spec, Hosted gateway). Pure: no I/O.
 *
 * Accepted: loopback callbacks (`localhost`, `127.0.0.1`, `[::1]`; any port and path; http allowed,
 * RFC 8252), the fixed callbacks of the built-in clients below, and anything listed verbatim in
 * `auth.mcp_client_redirect_uris`. Always refused: unsafe schemes, fragments, embedded credentials.
 * Anything else that is not HTTPS, or is HTTPS but unlisted, is refused.
 */

/** Fixed callbacks of well-known MCP clients (exact match). Custom schemes are safe here because the code is PKCE-bound. */
export const BUILT_IN_CLIENT_CALLBACKS: ReadonlyArray<{ client: string; uri: string }> = [
  { client: 'Claude (claude.ai, Claude Desktop)', uri: 'https://claude.ai/api/mcp/auth_callback' },
  { client: 'Claude (claude.com)', uri: 'https://claude.com/api/mcp/auth_callback' },
  { client: 'ChatGPT connectors', uri: 'https://chatgpt.com/connector_platform_oauth_redirect' },
  { client: 'Visual Studio Code', uri: 'https://vscode.dev/redirect' },
  { client: 'Cursor (desktop)', uri: 'cursor://anysphere.cursor-mcp/oauth/callback' },
  { client: 'Cursor (agents)', uri: 'https://www.cursor.com/agents/mcp/oauth/callback' },
];

export const UNSAFE_SCHEMES = ['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:'];
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export type RedirectUriRefusal =
  'malformed' | 'unsafe_scheme' | 'fragment' | 'credentials' | 'not_https' | 'not_listed';

export type RedirectUriDecision =
  | { ok: true; kind: 'loopback' | 'built_in' | 'configured' }
  | { ok: false; reason: RedirectUriRefusal; message: string };

const refuse = (reason: RedirectUriRefusal, message: string): RedirectUriDecision => ({ ok: false, reason, message });

export function checkClientRedirectUri(uri: string, configured: readonly string[]): RedirectUriDecision {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return refuse('malformed', 'redirect_uri is not an absolute URI.');
  }
  // Checked first and unconditionally: listing an unsafe URI does not make it safe.
  if (UNSAFE_SCHEMES.includes(url.protocol))
    return refuse('unsafe_scheme', `redirect_uri scheme "${url.protocol}" is never accepted.`);
  if (uri.includes('#'))
    return refuse('fragment', 'redirect_uri must not contain a fragment (RFC 6749 section 3.1.2).');
  if (url.username || url.password) return refuse('credentials', 'redirect_uri must not embed credentials.');
  if (configured.includes(uri)) return { ok: true, kind: 'configured' };
  if (BUILT_IN_CLIENT_CALLBACKS.some((c) => c.uri === uri)) return { ok: true, kind: 'built_in' };
  if ((url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_HOSTS.has(url.hostname))
    return { ok: true, kind: 'loopback' };
  if (url.protocol !== 'https:') {
    return refuse(
      'not_https',
      'redirect_uri must be HTTPS (or a loopback callback) unless an administrator lists it in AUTH_MCP_CLIENT_REDIRECT_URIS.',
    );
  }
  return refuse(
    'not_listed',
    'redirect_uri is not a loopback callback, not a built-in client callback, and not listed in AUTH_MCP_CLIENT_REDIRECT_URIS.',
  );
}
