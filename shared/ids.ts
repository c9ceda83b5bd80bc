import { createHash } from 'node:crypto';

/**
 * A stable UUID (version-4 shaped) derived from an idempotency key, so a retried call addresses
 * the same resource instead of creating another.
 */
export function uuidFromKey(key: string): string {
  const h = createHash('sha256').update(key).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
