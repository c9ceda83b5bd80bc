/**
 * Dynamic egress of CRM connections in container-service mode (spec, CRM connection; issue 31, item 7).
 * The enforced outbound list is the setting `mesh.egress`. A connection's declared hosts (`login_host`,
 * `instance_url`, the authorize and token URLs) and the instance host discovered at authorization are
 * registered here as `host:port` entries the list does not admit yet; a person with `manage_secrets`
 * approves them into `mesh.egress` (the approval step) or rejects them. The browser authorization of a
 * user_oauth connection is opened only once its hosts are admitted (409 `EGRESS_APPROVAL_REQUIRED`
 * names what is pending), so its token exchange is never refused by the list. Outside container-service
 * mode nothing is registered: no list is enforced there.
 */
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import type { AppConfig } from '../config.js';
import { toIso } from '../dates.js';
import { sql } from '../db/sql.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { DEFAULT_DESTINATIONS, destinationAllowed } from '../http/egress-policy.js';
import { saveMeshEgress } from '../secrets/mesh-setup.js';
import { CrmCodes } from './error-codes.js';

export type EgressOrigin = 'declared' | 'discovered';

interface RegistrationRow {
  id: string;
  connection_name: string;
  entry: string;
  origin: EgressOrigin;
  status: 'pending' | 'approved' | 'rejected';
  registered_at: Date;
  decided_by: string | null;
  decided_at: Date | null;
}

const APPROVE_ROUTE = 'POST /api/secrets/mesh-auth-key/egress/registrations/approve';

/** `host:port` of a URL (443 for https, 80 for http when none is given), lower-cased. */
export function egressEntry(url: string): string {
  const u = new URL(url);
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  return `${u.hostname.toLowerCase()}:${port}`;
}

/** The enforced list now (the process's source of `mesh.egress`, else the default). */
async function effectiveList(config: AppConfig): Promise<readonly string[]> {
  return config.egress.destinations ? await config.egress.destinations() : DEFAULT_DESTINATIONS;
}

const admitted = (entry: string, list: readonly string[]) => {
  const i = entry.lastIndexOf(':');
  return destinationAllowed(entry.slice(0, i), Number(entry.slice(i + 1)), list);
};

/**
 * Registers the entries of `urls` the enforced list does not admit, as pending, for the connection;
 * answers the entries still waiting for approval (registered now or before). A rejected entry stays
 * rejected (an operator said no); none are registered outside container-service mode.
 */
export async function registerEgress(
  em: EntityManager,
  config: AppConfig,
  at: { tenant: string; connection: string; origin: EgressOrigin },
  urls: ReadonlyArray<string | undefined | null>,
): Promise<string[]> {
  if (!config.egress.containerService) return [];
  const list = await effectiveList(config);
  const entries = [...new Set(urls.filter((u): u is string => !!u).map(egressEntry))];
  const waiting = entries.filter((e) => !admitted(e, list));
  for (const entry of waiting) {
    await sql(
      em,
      `insert into egress_registrations (id, tenant, connection_name, entry, origin, status, registered_at)
       values (?, ?, ?, ?, ?, 'pending', now()) on conflict (tenant, connection_name, entry) do nothing`,
      [`egr_${randomUUID().replace(/-/g, '')}`, at.tenant, at.connection, entry, at.origin],
    );
  }
  return waiting;
}

/**
 * Before the browser authorization of a user_oauth connection: its hosts are registered, and the
 * authorization refused (409 `EGRESS_APPROVAL_REQUIRED`) while any is not admitted.
 */
export async function requireEgressAdmitted(
  em: EntityManager,
  config: AppConfig,
  at: { tenant: string; connection: string },
  urls: ReadonlyArray<string | undefined | null>,
  origin: EgressOrigin = 'declared',
): Promise<void> {
  const waiting = await registerEgress(em, config, { ...at, origin }, urls);
  if (waiting.length === 0) return;
  throw new ConflictError(
    `The mesh egress list does not admit ${waiting.join(', ')} yet${origin === 'discovered' ? ' (the instance the CRM named at authorization; no tokens were kept)' : ''}. A person with "manage_secrets" approves the registration (${APPROVE_ROUTE}), then start the authorization again.`,
    { code: CrmCodes.EGRESS_APPROVAL_REQUIRED, pending_entries: waiting, approve_with: APPROVE_ROUTE },
  );
}

function view(row: RegistrationRow, list: readonly string[]) {
  return {
    registration_id: row.id,
    connection_name: row.connection_name,
    entry: row.entry,
    origin: row.origin,
    status: row.status,
    admitted: admitted(row.entry, list),
    registered_at: toIso(row.registered_at),
    decided_by: row.decided_by,
    decided_at: toIso(row.decided_at),
  };
}

/** The caller tenant's registrations, newest first, each with whether the list admits it now. */
export async function listEgressRegistrations(deps: AppDeps, em: EntityManager, principal: Principal) {
  const rows = await sql<RegistrationRow>(
    em,
    `select * from egress_registrations where tenant = ? order by registered_at desc, entry limit 500`,
    [principal.tenant],
  );
  const list = await deps.settings.get('mesh.egress');
  return rows.map((r) => view(r, list.length ? list : DEFAULT_DESTINATIONS));
}

/**
 * The approval step: approves (adds to `mesh.egress`, which the outbound policy follows at once) or
 * rejects pending registrations of the caller's tenant. An unknown id is 404; one already decided 409.
 */
export async function decideEgressRegistrations(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  ids: string[],
  decision: 'approved' | 'rejected',
) {
  return em.transactional(async (tx) => {
    const rows = await sql<RegistrationRow>(
      tx,
      `select * from egress_registrations where tenant = ? and id in (?) for update`,
      [principal.tenant, ids],
    );
    const missing = ids.filter((id) => !rows.some((r) => r.id === id));
    if (missing.length)
      throw new NotFoundError(`No egress registration ${missing.join(', ')}.`, { missing_ids: missing });
    const decided = rows.filter((r) => r.status !== 'pending');
    if (decided.length)
      throw new ConflictError(`Already decided: ${decided.map((r) => `${r.id} (${r.status})`).join(', ')}.`, {
        code: CrmCodes.egress_registration_not_pending,
        registration_ids: decided.map((r) => r.id),
      });
    const current = await deps.settings.get('mesh.egress');
    let list: readonly string[] = current.length ? current : DEFAULT_DESTINATIONS;
    if (decision === 'approved') {
      list = [...new Set([...list, ...rows.map((r) => r.entry)])];
      await saveMeshEgress(deps, tx, principal, [...list]);
    }
    await sql(
      tx,
      `update egress_registrations set status = ?, decided_by = ?, decided_at = now() where tenant = ? and id in (?)`,
      [decision, principal.id, principal.tenant, ids],
    );
    const after = await sql<RegistrationRow>(tx, `select * from egress_registrations where id in (?)`, [ids]);
    return after.map((r) => view(r, list));
  });
}
