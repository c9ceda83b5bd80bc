import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Prefixes the spec fixes for platform-issued bearer tokens. */
export const PAT_PREFIX = 'gp_';
export const SANDBOX_PREFIX = 'gsk_';

/** A new opaque token: prefix + 32 random bytes (base64url). Only its hash is ever stored. */
export function mintToken(prefix: string): { token: string; hash: string; displayPrefix: string } {
  const token = prefix + randomBytes(32).toString('base64url');
  return { token, hash: hashToken(token), displayPrefix: token.slice(0, prefix.length + 6) };
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Constant-time comparison of two secrets of any length. */
export function secretsEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
