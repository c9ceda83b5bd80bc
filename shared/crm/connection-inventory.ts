/**
 * The tenant's saved connections as the connection routes answer them: CRM connections and the
 * code-agent `api_key` connections that share their table (each with its own view), and the inventory
 * the configuration panel reads (`GET /api/config/db-connections`, the egress hosts of
 * `GET /api/config/warehouse-host/context`).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import { API_KEY_CONNECTION } from '../code-agent/connection.js';
import { apiKeyConnectionView, createApiKeyConnection, updateApiKeyConnection } from '../code-agent/connections.js';
import { toIso } from '../dates.js';
import { CrmConnectionEntity, type CrmConnectionRow } from '../db/entities/index.js';
import { connectionView, createConnection, updateConnection } from './connections.js';
import { findConnectionRow } from './store.js';

/** `api_key` (code-agent) connections share the table and routes; their view has no CRM fields. */
export const anyConnectionView = (row: CrmConnectionRow, base: string) =>
  row.type === API_KEY_CONNECTION ? apiKeyConnectionView(row) : connectionView(row, base);

const tenantConnections = (em: EntityManager, tenant: string, refresh = false) =>
  em.find(CrmConnectionEntity, { tenant }, { orderBy: { name: 'asc' }, ...(refresh ? { refresh } : {}) });

/** Every connection of the tenant by name, read afresh (secrets masked). */
export async function listConnectionViews(em: EntityManager, tenant: string, base: string) {
  return (await tenantConnections(em, tenant, true)).map((row) => anyConnectionView(row, base));
}

export async function getConnectionView(em: EntityManager, tenant: string, name: string, base: string) {
  return anyConnectionView(await findConnectionRow(em, tenant, name, 'any'), base);
}

/** Creates a CRM or an `api_key` connection (validated and tested) and answers its view. */
export async function createAnyConnection(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  body: { name: string; type: string; auth_mode: string; config: Record<string, unknown> },
  base: string,
) {
  return body.type === API_KEY_CONNECTION
    ? apiKeyConnectionView(await createApiKeyConnection(deps, em, principal, body))
    : connectionView(await createConnection(deps, em, principal, body), base);
}

/** Changes a connection of either type (tested again) and answers its view. */
export async function updateAnyConnection(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  name: string,
  body: { auth_mode?: string; config?: Record<string, unknown> },
  base: string,
) {
  const row = await findConnectionRow(em, principal.tenant, name, 'any');
  if (row.type === API_KEY_CONNECTION) return apiKeyConnectionView(await updateApiKeyConnection(deps, em, row, body));
  return connectionView(await updateConnection(deps, em, principal, name, body), base);
}

/** The hosts the tenant's connections reach, by connection (what an outbound-access rule must admit). */
export async function tenantEgressHosts(em: EntityManager, tenant: string) {
  const rows = await tenantConnections(em, tenant);
  return rows.flatMap((r) => r.egressHosts.map((host) => ({ connection: r.name, host })));
}

function inventoryEntry(row: CrmConnectionRow, sensitive: boolean) {
  const settings = row.settings as Record<string, unknown>;
  const endpoint = [settings.instance_url, settings.login_host].find((v): v is string => typeof v === 'string');
  return {
    name: row.name,
    connection_kind: 'crm' as const,
    type: row.type,
    auth_mode: row.authMode,
    owner: row.createdBy,
    authorized: row.tokensSealed !== null,
    created_at: toIso(row.createdAt),
    updated_at: toIso(row.updatedAt),
    sensitive_fields_included: sensitive,
    ...(sensitive ? { allowed_bot_ids: null, allowed_user_ids: null, connection_string: endpoint ?? null } : {}),
  };
}

/**
 * The connection inventory of the configuration panel: sensitive fields only for a caller with
 * `manage_all_connections` and for each connection's owner (its creator).
 */
export async function connectionInventory(em: EntityManager, principal: Principal) {
  const manager = principal.permissions.has('manage_all_connections');
  const rows = await tenantConnections(em, principal.tenant);
  return rows.map((row) => inventoryEntry(row, manager || row.createdBy === principal.id));
}
