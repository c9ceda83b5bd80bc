import type { EntityManager } from '@mikro-orm/postgresql';
import { crmEgress } from '../http/trust.js';
import type { AppConfig } from '../config.js';
import { CrmEgressError } from './errors.js';
import { crmFetch } from './http.js';
import { listVersions } from './rest.js';
import { CrmSession } from './session.js';
import type { LoadedConnection } from './store.js';
import { EgressCodes } from '../http/egress-policy.js';

export interface ConnectionCheck {
  target: 'login_host' | 'instance_url';
  host: string;
  ok: boolean;
  detail: string;
}

export interface ConnectionTestResult {
  status: 'passed' | 'failed' | 'authorization_required';
  tested_at: string;
  checks: ConnectionCheck[];
}

const describe = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Any HTTP answer proves the host is reachable (used before a user_oauth connection is authorized). */
async function reachable(config: AppConfig, url: string): Promise<string | null> {
  try {
    await crmFetch(url, {
      policy: crmEgress(config),
      method: 'GET',
      redirect: 'manual',
      timeoutMs: 10_000,
      maxResponseBytes: 1024 * 1024,
    });
    return null;
  } catch (err) {
    // An answer too large to read is still an answer.
    if (err instanceof CrmEgressError && err.egress.code === EgressCodes.egress_too_large) return null;
    return describe(err);
  }
}

/**
 * The save-time connection test: the login host by obtaining a token with the mode's grant (or, for
 * an unauthorized user_oauth connection, by reaching it), then the instance host by an authorized
 * REST call. Never throws: the result is stored and returned with the connection.
 */
export async function testConnection(
  em: EntityManager,
  config: AppConfig,
  conn: LoadedConnection,
): Promise<ConnectionTestResult> {
  const checks: ConnectionCheck[] = [];
  const session = new CrmSession(conn, em, config);
  const awaitingAuthorization = conn.authMode === 'user_oauth' && !conn.tokens?.refresh_token;
  if (awaitingAuthorization) {
    const failure = await reachable(config, conn.settings.login_host);
    checks.push({
      target: 'login_host',
      host: conn.settings.login_host,
      ok: !failure,
      detail: failure ?? 'reachable; authorize the connection to obtain tokens',
    });
  } else {
    try {
      await session.token(true);
      checks.push({ target: 'login_host', host: conn.settings.login_host, ok: true, detail: 'token obtained' });
    } catch (err) {
      checks.push({ target: 'login_host', host: conn.settings.login_host, ok: false, detail: describe(err) });
    }
  }
  const instance = conn.settings.instance_url ?? conn.tokens?.instance_url ?? null;
  if (instance) {
    if (conn.tokens) {
      try {
        await listVersions(session);
        checks.push({ target: 'instance_url', host: instance, ok: true, detail: 'REST API answered' });
      } catch (err) {
        checks.push({ target: 'instance_url', host: instance, ok: false, detail: describe(err) });
      }
    } else {
      const failure = await reachable(config, instance);
      checks.push({ target: 'instance_url', host: instance, ok: !failure, detail: failure ?? 'reachable' });
    }
  }
  const failed = checks.some((c) => !c.ok);
  return {
    status: failed ? 'failed' : awaitingAuthorization ? 'authorization_required' : 'passed',
    tested_at: new Date().toISOString(),
    checks,
  };
}
