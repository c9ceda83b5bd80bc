/**
 * A person's own preferences (`/api/config/user-config`): one JSON document per tenant and user, at
 * most 64 KiB.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { toIso } from '../dates.js';
import { sql } from '../db/sql.js';
import { PayloadTooLargeError } from '../errors.js';

export const MAX_USER_CONFIG_BYTES = 64 * 1024;

/** The caller's preferences, empty (and `updated_at` null) until saved. */
export async function readUserConfig(em: EntityManager, principal: Principal) {
  const [row] = await sql<{ config: Record<string, unknown>; updated_at: Date }>(
    em,
    'select config, updated_at from user_configs where tenant = ? and user_id = ?',
    [principal.tenant, principal.id],
  );
  return { config: row?.config ?? {}, updated_at: row ? toIso(row.updated_at) : null };
}

/** Replaces the caller's preferences; more than 64 KiB of JSON is 413. */
export async function saveUserConfig(em: EntityManager, principal: Principal, config: Record<string, unknown>) {
  const json = JSON.stringify(config);
  if (Buffer.byteLength(json) > MAX_USER_CONFIG_BYTES) {
    throw new PayloadTooLargeError(`Preferences are limited to ${MAX_USER_CONFIG_BYTES} bytes.`, {
      limit_bytes: MAX_USER_CONFIG_BYTES,
    });
  }
  await sql(
    em,
    `insert into user_configs (tenant, user_id, config, updated_at) values (?, ?, ?::jsonb, ?)
     on conflict (tenant, user_id) do update set config = excluded.config, updated_at = excluded.updated_at`,
    [principal.tenant, principal.id, json, new Date()],
  );
}
