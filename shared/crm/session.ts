import type { EntityManager } from '@mikro-orm/postgresql';
import { crmEgress } from '../http/trust.js';
import type { AppConfig } from '../config.js';
import type { EgressPolicy } from '../http/egress.js';
import { CrmAuthorizationRequiredError } from './errors.js';
import { crmFetch } from './http.js';
import { clientCredentialsGrant, jwtBearerGrant, refreshTokenGrant, type TokenSet } from './oauth.js';
import { saveTokens, type LoadedConnection } from './store.js';

/** The REST and SOAP API version the client speaks. */
export const CRM_API_VERSION = '62.0';

const TIMEOUT_MS = 30_000;

/** Obtains a fresh access token with the connection's own grant. */
async function grant(conn: LoadedConnection, egress: EgressPolicy): Promise<TokenSet> {
  const { settings, secrets } = conn;
  switch (conn.authMode) {
    case 'jwt_bearer':
      return jwtBearerGrant(settings, secrets.private_key!, egress);
    case 'client_credentials':
      return clientCredentialsGrant(settings, secrets.client_secret!, egress);
    case 'refresh_token':
      return refreshTokenGrant(settings, secrets.client_secret, secrets.refresh_token!, egress);
    case 'user_oauth': {
      const refresh = conn.tokens?.refresh_token;
      if (!refresh) throw new CrmAuthorizationRequiredError(conn.name);
      const fresh = await refreshTokenGrant(settings, secrets.client_secret, refresh, egress);
      // The refresh token is reused unless the CRM rotates it.
      return { ...fresh, refresh_token: fresh.refresh_token ?? refresh };
    }
  }
}

/**
 * Authorized calls for one connection: the cached access token first, a new one from the mode's
 * grant when none is cached or the CRM answers 401 (once per call).
 */
export class CrmSession {
  constructor(
    readonly conn: LoadedConnection,
    private readonly em: EntityManager,
    private readonly config: AppConfig,
  ) {}

  async token(forceNew = false): Promise<TokenSet> {
    if (this.conn.tokens && !forceNew) return this.conn.tokens;
    const tokens = await grant(this.conn, crmEgress(this.config));
    await saveTokens(this.em, this.config, this.conn, tokens);
    return tokens;
  }

  instanceUrl(): string {
    return (this.conn.settings.instance_url ?? this.conn.tokens?.instance_url ?? this.conn.settings.login_host).replace(
      /\/+$/,
      '',
    );
  }

  /**
   * One request to the instance host. `isUnauthorized` recognises an expired session in the answer
   * (401 for REST; a SOAP fault for SOAP), which is safe to retry: the CRM did nothing with it.
   */
  async fetch(
    path: string,
    init: { method: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal },
    build?: (accessToken: string) => { headers?: Record<string, string>; body?: string },
    isUnauthorized: (res: Response, text: string) => boolean = (res) => res.status === 401,
  ): Promise<{ res: Response; text: string }> {
    const once = async (tokens: TokenSet) => {
      const extra = build?.(tokens.access_token) ?? {};
      const body = extra.body ?? init.body;
      const res = await crmFetch(`${this.instanceUrl()}${path}`, {
        policy: crmEgress(this.config),
        method: init.method,
        headers: {
          authorization: `Bearer ${tokens.access_token}`,
          accept: 'application/json',
          ...init.headers,
          ...extra.headers,
        },
        ...(body !== undefined ? { body } : {}),
        ...(init.signal ? { signal: init.signal } : {}),
        timeoutMs: TIMEOUT_MS,
      });
      return { res, text: await res.text() };
    };
    const first = await once(await this.token());
    if (!isUnauthorized(first.res, first.text)) return first;
    return once(await this.token(true));
  }
}
