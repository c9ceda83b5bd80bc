import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { validateCrmConnection, type ValidatedConnection } from './connection-config.js';
import { AUTHORIZE_PATH, CRM_MODE_FIELDS, MASK, SECRET_FIELDS, TOKEN_PATH } from './connection-types.js';
import { findConnectionRow, insertConnectionRow, openConnection, storeTestResult } from './store.js';
import type { CrmConnectionRow } from '../db/entities/index.js';
import { crmEgress } from '../http/trust.js';
import { secretBox } from '../secrets/secret-box.js';
import type { AppDeps } from '../app-deps.js';
import { testConnection } from './connection-test.js';
import { toIso } from '../dates.js';
import { registerEgress } from './egress-registrations.js';

/** The hosts this process reaches for a connection: container-service mode registers those its egress list lacks. */
const declaredUrls = (v: ValidatedConnection) => [v.settings.login_host, v.settings.instance_url, v.settings.token_url];

/** The hosts a deployment's outbound allowlist must admit (spec, rule 3). */
const egressHosts = (v: ValidatedConnection) => [
  ...new Set(
    [v.settings.login_host, v.settings.instance_url].filter((h): h is string => !!h).map((h) => new URL(h).host),
  ),
];

/** The callback a user_oauth connection's OAuth app must register: it embeds the connection name. */
export function redirectUriFor(baseUrl: string, name: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/api/connections/${encodeURIComponent(name)}/oauth/callback`;
}

/** A connection as callers read it: settings, secrets masked, egress hosts, last test. */
export function connectionView(row: CrmConnectionRow, baseUrl: string) {
  const settings = row.settings as Record<string, unknown>;
  const config: Record<string, unknown> = {};
  for (const spec of CRM_MODE_FIELDS[row.authMode as keyof typeof CRM_MODE_FIELDS]) {
    if (SECRET_FIELDS.has(spec.name)) config[spec.name] = MASK;
    else if (spec.name === 'scopes') config.scopes = (settings.scopes as string[] | undefined)?.join(' ') ?? null;
    else config[spec.name] = settings[spec.name] ?? null;
  }
  config.merge_enabled = row.mergeEnabled ? 'true' : 'false';
  config.merge_survivorship_policy = row.policy ? JSON.stringify(row.policy) : null;
  return {
    name: row.name,
    type: row.type,
    category: 'Dev Tools',
    auth_mode: row.authMode,
    config,
    egress_hosts: row.egressHosts,
    redirect_uri: row.authMode === 'user_oauth' ? redirectUriFor(baseUrl, row.name) : null,
    authorized: row.tokensSealed !== null,
    connection_test: row.testResult,
    created_at: toIso(row.createdAt),
    updated_at: toIso(row.updatedAt),
  };
}

/** Runs the connection test, stores its result on the row and answers the row as stored. */
export async function runTest(deps: AppDeps, em: EntityManager, row: CrmConnectionRow): Promise<CrmConnectionRow> {
  const result = await testConnection(em, deps.config, openConnection(deps.config, row));
  return storeTestResult(em, row, result, 'crm');
}

function columns(deps: AppDeps, v: ValidatedConnection) {
  return {
    authMode: v.authMode,
    settings: v.settings as unknown as Record<string, unknown>,
    secretsSealed: secretBox(deps.config).seal(JSON.stringify(v.secrets)),
    mergeEnabled: v.mergeEnabled,
    policy: v.policy as Record<string, unknown> | null,
    egressHosts: egressHosts(v),
  };
}

/** Validates (nothing saved on a bad field), stores secrets sealed, then runs and stores the connection test. */
export async function createConnection(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  body: { name: string; auth_mode: string; config: Record<string, unknown> },
) {
  const v = await validateCrmConnection(body.auth_mode, body.config, {
    policy: crmEgress(deps.config),
  });
  const row = await insertConnectionRow(em, principal, body.name, 'crm', () => columns(deps, v));
  await registerEgress(
    em,
    deps.config,
    { tenant: principal.tenant, connection: body.name, origin: 'declared' },
    declaredUrls(v),
  );
  return runTest(deps, em, row);
}

/** PATCH: the given config fields over the stored ones (secrets kept unless replaced); tokens are dropped when auth settings change. */
export async function updateConnection(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  name: string,
  body: { auth_mode?: string; config?: Record<string, unknown> },
) {
  const row = await findConnectionRow(em, principal.tenant, name);
  const current = openConnection(deps.config, row);
  const stored = connectionView(row, '').config;
  const authMode = body.auth_mode ?? row.authMode;
  const login = (row.settings as { login_host?: string }).login_host;
  const derived = new Set([`${login}${TOKEN_PATH}`, `${login}${AUTHORIZE_PATH}`]);
  // Kept: merge settings always; the mode's settings only while the mode stays (derived URLs re-derive).
  const merged: Record<string, unknown> = {};
  for (const [k, value] of Object.entries(stored)) {
    const keep = authMode === row.authMode || k.startsWith('merge_');
    if (keep && value !== null && value !== MASK && !derived.has(String(value))) merged[k] = value;
  }
  Object.assign(merged, body.config ?? {});
  const v = await validateCrmConnection(authMode, merged, {
    policy: crmEgress(deps.config),
    storedSecrets: authMode === row.authMode ? current.secrets : {},
  });
  const authChanged =
    JSON.stringify(v.settings) !== JSON.stringify(row.settings) ||
    JSON.stringify(v.secrets) !== JSON.stringify(current.secrets) ||
    authMode !== row.authMode;
  em.assign(row, { ...columns(deps, v), ...(authChanged ? { tokensSealed: null } : {}), updatedAt: new Date() });
  await em.flush();
  await registerEgress(
    em,
    deps.config,
    { tenant: principal.tenant, connection: name, origin: 'declared' },
    declaredUrls(v),
  );
  return runTest(deps, em, row);
}

export async function deleteConnection(em: EntityManager, principal: Principal, name: string): Promise<void> {
  const row = await findConnectionRow(em, principal.tenant, name, 'any');
  await em.removeAndFlush(row);
}
