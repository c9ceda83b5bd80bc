import { z } from 'zod';
import { ServiceUnavailableError } from '../../../shared/errors.js';
import { EgressError, egressFetch, type EgressPolicy } from '../../../shared/http/egress.js';
import { EgressCodes } from '../../../shared/http/egress-policy.js';
import { onProcessReset } from '../../../shared/process-state.js';

const DiscoverySchema = z.looseObject({
  issuer: z.string(),
  authorization_endpoint: z.string().url(),
  token_endpoint: z.string().url(),
  jwks_uri: z.string().url().optional(),
  grant_types_supported: z.array(z.string()).optional(),
  token_endpoint_auth_methods_supported: z.array(z.string()).optional(),
  scopes_supported: z.array(z.string()).optional(),
  registration_endpoint: z.string().url().optional(),
  revocation_endpoint: z.string().url().optional(),
});
export type UpstreamMetadata = z.infer<typeof DiscoverySchema>;

const CACHE_MS = 5 * 60_000;
const TIMEOUT_MS = 5_000;
const cache = new Map<string, { at: number; doc: UpstreamMetadata }>();
onProcessReset('api/mcp/oauth/upstream.ts#cache', () => {
  cache.clear();
});

/** Refused by the egress policy: the classified reason (a deployment setting to fix, not a retry). */
const unavailable = (what: string, err?: unknown) =>
  err instanceof EgressError && err.code === EgressCodes.egress_refused
    ? new ServiceUnavailableError(
        'identity_provider',
        `The identity provider's ${what} is not allowed for outbound requests: ${err.message}.`,
      )
    : new ServiceUnavailableError(
        'identity_provider',
        `The identity provider's ${what} cannot be reached; retry shortly.`,
      );

/** The upstream provider's OpenID discovery document (`<AUTH_ISSUER>/.well-known/openid-configuration`), cached for five minutes. */
export async function discoverUpstream(
  issuer: string,
  egress: EgressPolicy,
  now = Date.now(),
): Promise<UpstreamMetadata> {
  const hit = cache.get(issuer);
  if (hit && now - hit.at < CACHE_MS) return hit.doc;
  let body: unknown;
  try {
    const res = await egressFetch(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, {
      policy: egress,
      timeoutMs: TIMEOUT_MS,
      maxResponseBytes: 1024 * 1024,
    });
    if (!res.ok) throw new Error(`status ${res.status}`);
    body = await res.json();
  } catch (err) {
    throw unavailable('discovery document', err);
  }
  const parsed = DiscoverySchema.safeParse(body);
  if (!parsed.success) throw unavailable('discovery document (it is not valid)');
  cache.set(issuer, { at: now, doc: parsed.data });
  return parsed.data;
}

/** Posts a form to the upstream token endpoint and returns its status and JSON body as they are. */
export async function postUpstreamToken(
  tokenEndpoint: string,
  form: Record<string, string>,
  egress: EgressPolicy,
): Promise<{ status: number; body: Record<string, unknown> }> {
  try {
    const res = await egressFetch(tokenEndpoint, {
      policy: egress,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(form).toString(),
      timeoutMs: TIMEOUT_MS,
      maxResponseBytes: 1024 * 1024,
    });
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    return { status: res.status, body };
  } catch (err) {
    throw unavailable('token endpoint', err);
  }
}
