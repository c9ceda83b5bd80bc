/**
 * Key-based warehouse-AI authentication (Snowflake-style): a programmatic access token sent as a
 * bearer token, or a key-pair JWT (RS256) whose issuer names the public key's fingerprint.
 */
import { createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';
import { onProcessReset } from '../process-state.js';

export const TOKEN_TYPE_HEADER = 'X-Snowflake-Authorization-Token-Type';

/** A key-pair JWT lives this long (the service accepts at most one hour). */
const JWT_LIFETIME_S = 3600;
/** A cached JWT is replaced this long before it expires. */
const JWT_RENEW_BEFORE_S = 300;

const s = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);

/**
 * The account identifier a JWT names, upper-cased: the `account` setting, else the first label of an
 * `<account>.snowflakecomputing.com` URL; a locator with a region (`xy12345.us-east-1`) keeps the locator.
 */
export function accountOf(fields: Record<string, unknown>): string | undefined {
  let account = s(fields.account);
  if (!account) {
    try {
      const host = new URL(s(fields.base_url) ?? '').hostname.toLowerCase();
      if (host.endsWith('.snowflakecomputing.com')) account = host.slice(0, -'.snowflakecomputing.com'.length);
    } catch {
      return undefined;
    }
  }
  return account?.split('.')[0]!.toUpperCase() || undefined;
}

/** Reads a PEM private key (PKCS#8 or PKCS#1, unencrypted); answers what is wrong, or null. */
export function privateKeyProblem(pem: unknown): string | null {
  if (typeof pem !== 'string') return 'private_key is required';
  try {
    const key = createPrivateKey(pem);
    return key.asymmetricKeyType === 'rsa' ? null : 'private_key must be an RSA key';
  } catch {
    return 'private_key is not a readable PEM private key (PKCS#8 or PKCS#1, unencrypted)';
  }
}

/** `SHA256:` and the base64 SHA-256 of the public key's DER (SubjectPublicKeyInfo). */
export function publicKeyFingerprint(key: KeyObject): string {
  const der = createPublicKey(key).export({ type: 'spki', format: 'der' });
  return `SHA256:${createHash('sha256').update(der).digest('base64')}`;
}

const b64url = (data: string | Buffer) => Buffer.from(data).toString('base64url');

const jwtCache = new Map<string, { token: string; exp: number }>();
onProcessReset('shared/llm/warehouse-auth.ts#jwtCache', () => {
  jwtCache.clear();
});

/**
 * A key-pair JWT: `iss` `<ACCOUNT>.<USER>.SHA256:<fingerprint>`, `sub` `<ACCOUNT>.<USER>`, `iat`,
 * `exp` one hour later; cached until five minutes before it expires.
 */
export function keypairJwt(account: string, user: string, privateKeyPem: string, nowMs = Date.now()): string {
  const key = createPrivateKey(privateKeyPem);
  const fingerprint = publicKeyFingerprint(key);
  const sub = `${account.toUpperCase()}.${user.toUpperCase()}`;
  const cacheKey = `${sub}.${fingerprint}`;
  const now = Math.floor(nowMs / 1000);
  const hit = jwtCache.get(cacheKey);
  if (hit && hit.exp - JWT_RENEW_BEFORE_S > now) return hit.token;
  const exp = now + JWT_LIFETIME_S;
  const input = `${b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }))}.${b64url(
    JSON.stringify({ iss: `${sub}.${fingerprint}`, sub, iat: now, exp }),
  )}`;
  const token = `${input}.${b64url(sign('sha256', Buffer.from(input), key))}`;
  jwtCache.set(cacheKey, { token, exp });
  return token;
}

/** The headers of one call: PAT or key-pair JWT, each with its token-type header. */
export function warehouseAuthHeaders(fields: Record<string, unknown>): Record<string, string> {
  if (fields.auth_method === 'keypair')
    return {
      authorization: `Bearer ${keypairJwt(accountOf(fields) ?? '', s(fields.user) ?? '', String(fields.private_key ?? ''))}`,
      [TOKEN_TYPE_HEADER]: 'KEYPAIR_JWT',
    };
  return { authorization: `Bearer ${s(fields.pat) ?? ''}`, [TOKEN_TYPE_HEADER]: 'PROGRAMMATIC_ACCESS_TOKEN' };
}
