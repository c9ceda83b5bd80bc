import { createHmac, timingSafeEqual } from 'node:crypto';
import { importPKCS8, SignJWT } from 'jose';
import { assertEgressAllowed, EgressError, type EgressPolicy } from '../http/egress.js';
import { hostOrigin, type CrmSettings } from './connection-config.js';
import { CrmApiError, CrmAuthError, CrmEgressError } from './errors.js';
import { crmFetch } from './http.js';

/** What the token endpoint answers (PROTOCOLS.md, CRM). */
export interface TokenSet {
  access_token: string;
  instance_url: string | null;
  refresh_token?: string;
  issued_at: string;
  id?: string;
  scope?: string;
}

export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** The CRM accepts assertions that expire within 3 minutes; stay well inside it. */
const ASSERTION_LIFETIME_SECONDS = 150;
const TIMEOUT_MS = 20_000;

/** `signature` = base64(HMAC-SHA256(client_secret, id + issued_at)); checked when both are present. */
function checkSignature(body: Record<string, unknown>, clientSecret: string | undefined): void {
  if (!clientSecret || typeof body.signature !== 'string' || typeof body.id !== 'string') return;
  const expected = createHmac('sha256', clientSecret)
    .update(`${body.id}${String(body.issued_at)}`)
    .digest();
  const given = Buffer.from(body.signature, 'base64');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new CrmAuthError('invalid_signature', 'the token response signature does not match the client secret');
  }
}

/**
 * The instance host a token response names is discovered, not configured: it must be an https
 * origin (plain http only on loopback with CRM_ALLOW_INSECURE_LOOPBACK) that the egress policy
 * allows, or the tokens are refused (never stored, never used).
 */
async function checkInstanceUrl(instanceUrl: string, egress: EgressPolicy): Promise<void> {
  const origin = hostOrigin(instanceUrl, egress.allowLoopback);
  if (Array.isArray(origin)) {
    throw new CrmAuthError(
      'invalid_instance_url',
      `the token response names instance_url ${instanceUrl}, which ${origin.join('; ')}`,
    );
  }
  try {
    await assertEgressAllowed(origin, egress);
  } catch (err) {
    if (err instanceof EgressError)
      throw new CrmEgressError(err, 'The CRM instance (instance_url from the token response)', instanceUrl);
    throw err;
  }
}

/** One form-encoded token request; the CRM's `{error, error_description}` becomes a CrmAuthError. */
export async function tokenRequest(
  tokenUrl: string,
  form: Record<string, string>,
  egress: EgressPolicy,
  clientSecret?: string,
  extra: Record<string, unknown> = {},
): Promise<TokenSet> {
  const res = await crmFetch(tokenUrl, {
    policy: egress,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form).toString(),
    timeoutMs: TIMEOUT_MS,
  });
  const text = await res.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new CrmApiError(res.status, 'unexpected_response', text);
  }
  if (!res.ok || typeof body.access_token !== 'string') {
    throw new CrmAuthError(
      String(body.error ?? `http_${res.status}`),
      String(body.error_description ?? 'no description'),
      extra,
    );
  }
  checkSignature(body, clientSecret);
  if (typeof body.instance_url === 'string') await checkInstanceUrl(body.instance_url, egress);
  return {
    access_token: body.access_token,
    instance_url: typeof body.instance_url === 'string' ? body.instance_url : null,
    ...(typeof body.refresh_token === 'string' ? { refresh_token: body.refresh_token } : {}),
    issued_at: String(body.issued_at ?? Date.now()),
    ...(typeof body.id === 'string' ? { id: body.id } : {}),
    ...(typeof body.scope === 'string' ? { scope: body.scope } : {}),
  };
}

/** JWT bearer: RS256 assertion, iss = consumer key, sub = username, aud = the login host URL, short exp. */
export async function jwtBearerGrant(
  settings: CrmSettings,
  privateKeyPem: string,
  egress: EgressPolicy,
): Promise<TokenSet> {
  const key = await importPKCS8(privateKeyPem, 'RS256');
  const now = Math.floor(Date.now() / 1000);
  const assertion = await new SignJWT({})
    .setProtectedHeader({ alg: 'RS256' })
    .setIssuer(settings.consumer_key!)
    .setSubject(settings.username!)
    .setAudience(settings.login_host)
    .setExpirationTime(now + ASSERTION_LIFETIME_SECONDS)
    .sign(key);
  return tokenRequest(settings.token_url, { grant_type: JWT_BEARER_GRANT, assertion }, egress);
}

export function refreshTokenGrant(
  settings: CrmSettings,
  clientSecret: string | undefined,
  refreshToken: string,
  egress: EgressPolicy,
): Promise<TokenSet> {
  const form: Record<string, string> = {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: settings.client_id!,
  };
  if (clientSecret) form.client_secret = clientSecret;
  return tokenRequest(settings.token_url, form, egress, clientSecret);
}

export function clientCredentialsGrant(
  settings: CrmSettings,
  clientSecret: string,
  egress: EgressPolicy,
): Promise<TokenSet> {
  return tokenRequest(
    settings.token_url,
    { grant_type: 'client_credentials', client_id: settings.client_id!, client_secret: clientSecret },
    egress,
    clientSecret,
  );
}

export function authorizationCodeGrant(
  settings: CrmSettings,
  clientSecret: string,
  code: string,
  redirectUri: string,
  codeVerifier: string,
  egress: EgressPolicy,
): Promise<TokenSet> {
  return tokenRequest(
    settings.token_url,
    {
      grant_type: 'authorization_code',
      code,
      client_id: settings.client_id!,
      client_secret: clientSecret,
      redirect_uri: redirectUri,
      code_verifier: codeVerifier,
    },
    egress,
    clientSecret,
    { redirect_uri: redirectUri },
  );
}
