import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { CodeAgentApiError, CodeAgentClient } from './client.js';
import {
  API_KEY_CONNECTION,
  openApiKeyConnection,
  validateApiKeyConnection,
  type ValidatedApiKeyConnection,
} from './connection.js';
import { insertConnectionRow, storeTestResult } from '../crm/store.js';
import { toIso } from '../dates.js';
import type { CrmConnectionRow } from '../db/entities/index.js';
import { EgressError } from '../http/egress.js';
import { egressFor } from '../http/trust.js';
import { secretBox } from '../secrets/secret-box.js';
import type { AppDeps } from '../app-deps.js';

const MASK = '********';

/** An `api_key` connection as callers read it: the key masked, the base URL, the last test. */
export function apiKeyConnectionView(row: CrmConnectionRow) {
  const settings = row.settings as { api_base_url?: string; scope?: string };
  return {
    name: row.name,
    type: row.type,
    category: 'Dev Tools',
    auth_mode: row.authMode,
    config: { api_key: MASK, api_base_url: settings.api_base_url ?? null, scope: settings.scope ?? 'shared' },
    egress_hosts: row.egressHosts,
    redirect_uri: null,
    authorized: true,
    connection_test: row.testResult,
    created_at: toIso(row.createdAt),
    updated_at: toIso(row.updatedAt),
  };
}

/** The spec's connection test: `GET /v1/models` on the base URL. A failure is recorded, never thrown. */
async function runApiKeyTest(deps: AppDeps, em: EntityManager, row: CrmConnectionRow): Promise<CrmConnectionRow> {
  const cred = openApiKeyConnection(deps.config, row);
  const host = new URL(cred.apiBaseUrl).host;
  let check: { target: string; host: string; ok: boolean; detail: string; models?: string[] };
  try {
    const models = await new CodeAgentClient(cred, deps.config).models();
    check = {
      target: 'GET /v1/models',
      host,
      ok: true,
      detail: `${models.length} models`,
      models: models.slice(0, 50),
    };
  } catch (err) {
    const detail =
      err instanceof CodeAgentApiError
        ? `the provider answered ${err.status}${err.status === 401 || err.status === 403 ? ' (the API key was refused)' : ''}`
        : err instanceof EgressError
          ? err.message
          : 'the request failed';
    check = { target: 'GET /v1/models', host, ok: false, detail };
  }
  const result = { status: check.ok ? 'passed' : 'failed', tested_at: new Date().toISOString(), checks: [check] };
  return storeTestResult(em, row, result, 'api_key');
}

function columns(deps: AppDeps, v: ValidatedApiKeyConnection) {
  return {
    authMode: API_KEY_CONNECTION,
    settings: v.settings as unknown as Record<string, unknown>,
    secretsSealed: secretBox(deps.config).seal(JSON.stringify(v.secrets)),
    mergeEnabled: false,
    policy: null,
    egressHosts: [new URL(v.settings.api_base_url).host],
  };
}

/** Validates (nothing saved on a bad field, personal scope refused), seals the key, then tests `GET /v1/models`. */
export async function createApiKeyConnection(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  body: { name: string; auth_mode: string; config: Record<string, unknown> },
): Promise<CrmConnectionRow> {
  const v = validateApiKeyConnection(
    { ...body.config, ...(body.auth_mode !== API_KEY_CONNECTION ? { auth_mode: body.auth_mode } : {}) },
    { policy: egressFor(deps.config, 'admin') },
  );
  const row = await insertConnectionRow(em, principal, body.name, API_KEY_CONNECTION, () => columns(deps, v));
  return runApiKeyTest(deps, em, row);
}

/** PATCH: given fields over the stored ones (the key kept unless replaced), then test again. */
export async function updateApiKeyConnection(
  deps: AppDeps,
  em: EntityManager,
  row: CrmConnectionRow,
  body: { auth_mode?: string | undefined; config?: Record<string, unknown> | undefined },
): Promise<CrmConnectionRow> {
  const current = openApiKeyConnection(deps.config, row);
  const merged: Record<string, unknown> = { api_base_url: current.apiBaseUrl, ...(body.config ?? {}) };
  if (body.auth_mode !== undefined && body.auth_mode !== API_KEY_CONNECTION) merged.auth_mode = body.auth_mode;
  const v = validateApiKeyConnection(merged, {
    policy: egressFor(deps.config, 'admin'),
    storedApiKey: current.apiKey,
  });
  em.assign(row, { ...columns(deps, v), updatedAt: new Date() });
  await em.flush();
  return runApiKeyTest(deps, em, row);
}
