import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 43 to 128 characters of the RFC 7636 unreserved set: the form of both verifier and S256 challenge. */
export const PKCE_PATTERN = /^[A-Za-z0-9\-._~]{43,128}$/;

export const s256 = (verifier: string): string => createHash('sha256').update(verifier).digest('base64url');

export function verifierMatches(verifier: string, challenge: string): boolean {
  if (!PKCE_PATTERN.test(verifier)) return false;
  const a = Buffer.from(s256(verifier));
  const b = Buffer.from(challenge);
  return a.length === b.length && timingSafeEqual(a, b);
}

export const randomToken = (): string => randomBytes(32).toString('base64url');
export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');
