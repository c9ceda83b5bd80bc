import { createHash } from 'node:crypto';

/** JSON with object keys sorted, so equal content always hashes equal. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The decision context a reviewer pins: what will be done, to what, with what stated effect. */
export function proposalDigest(parts: {
  actionType: string;
  payload: unknown;
  expectedEffect: string;
  subject: unknown;
}): string {
  return `sha256:${createHash('sha256').update(canonicalJson(parts)).digest('hex')}`;
}
