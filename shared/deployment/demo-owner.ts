import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError } from '../errors.js';
import { readSettingRow, writeSettingRow } from './settings-rows.js';
import { sql } from '../db/sql.js';
import { DemoCodes } from '../demo/error-codes.js';

/**
 * The hosted demo's owner (spec: `PUT /api/internal/demo-access/owner`), one per deployment, kept in
 * `deployment_settings` under `demo_access.owner`. "Verified" means the caller (the provisioner,
 * holding the internal token) attests that the identity provider verified the address:
 * `email_verified: true` is required by the route. `sub` may be empty (the owner has not signed in
 * yet); the display name comes from `users` (by `sub`, else by e-mail) when the person is known.
 *
 * Same owner: the same address (case-insensitive) and no conflicting non-empty `sub`; then a newly
 * given `sub` or display name is recorded (`changed` true only if something changed). A different
 * owner is refused 409 (`DEMO_OWNER_EXISTS`) unless `force`.
 */
export const DEMO_OWNER_KEY = 'demo_access.owner';

export interface DemoOwner {
  sub: string | null;
  email: string;
  display_name: string | null;
}

export interface DemoOwnerView {
  owner_sub: string | null;
  owner_email: string;
  owner_display_name: string | null;
  changed: boolean;
}

export async function readDemoOwner(em: EntityManager): Promise<DemoOwner | null> {
  return (await readSettingRow<DemoOwner>(em, DEMO_OWNER_KEY))?.value ?? null;
}

async function displayNameFor(em: EntityManager, sub: string | null, email: string): Promise<string | null> {
  const rows = sub
    ? await sql<{ display_name: string | null }>(em, 'select display_name from users where id = ?', [sub])
    : await sql<{ display_name: string | null }>(
        em,
        `select display_name from users where kind = 'person' and lower(email) = lower(?)
         order by last_sign_in_at desc limit 1`,
        [email],
      );
  return rows[0]?.display_name ?? null;
}

export async function setDemoOwner(
  em: EntityManager,
  input: { email: string; sub: string; force: boolean },
  updatedBy: string,
): Promise<DemoOwnerView> {
  const email = input.email.trim();
  const sub = input.sub.trim() === '' ? null : input.sub.trim();
  return em.transactional(async (tx) => {
    const t = tx as EntityManager;
    // One writer at a time, whether or not an owner row exists yet.
    await sql(t, `select pg_advisory_xact_lock(hashtext(?))`, [DEMO_OWNER_KEY]);
    const current = (await readSettingRow<DemoOwner>(t, DEMO_OWNER_KEY))?.value ?? null;
    const sameOwner =
      current !== null &&
      current.email.toLowerCase() === email.toLowerCase() &&
      (sub === null || current.sub === null || current.sub === sub);
    if (current && !sameOwner && !input.force) {
      throw new ConflictError('The demo already has a different owner; send `force: true` to replace it.', {
        code: DemoCodes.DEMO_OWNER_EXISTS,
        owner_email: current.email,
        owner_sub: current.sub,
      });
    }
    const next: DemoOwner = {
      email: sameOwner ? current.email : email,
      sub: sub ?? (sameOwner ? current.sub : null),
      display_name: null,
    };
    next.display_name = (await displayNameFor(t, next.sub, next.email)) ?? (sameOwner ? current.display_name : null);
    const changed =
      !current ||
      current.email !== next.email ||
      current.sub !== next.sub ||
      current.display_name !== next.display_name;
    if (changed) await writeSettingRow(t, DEMO_OWNER_KEY, next, updatedBy);
    return { owner_sub: next.sub, owner_email: next.email, owner_display_name: next.display_name, changed };
  });
}
