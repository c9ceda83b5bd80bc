import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { requireEgressAdmitted } from './egress-registrations.js';
import { crmEgress } from '../http/trust.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { CrmAuthError, CrmEgressError } from './errors.js';
import { authorizationCodeGrant } from './oauth.js';
import { findConnectionRow, openConnection, saveTokens } from './store.js';
import { CrmConnectionEntity } from '../db/entities/index.js';
import { BadRequestError, ConflictError } from '../errors.js';
import { openSecretBox, secretBox } from '../secrets/secret-box.js';
import type { AppDeps } from '../app-deps.js';
import { redirectUriFor, runTest } from './connections.js';
import { sql } from '../db/sql.js';
import { CrmCodes } from './error-codes.js';

/** A started authorization must come back within this time. */
const PENDING_TTL_MS = 10 * 60 * 1000;

interface Pending {
  state: string;
  verifier: string;
  redirectUri: string;
  startedAt: number;
}

const b64url = (b: Buffer) => b.toString('base64url');

/** Starts the authorization-code flow (with PKCE S256): answers the CRM's authorize URL for the person's browser. */
export async function startAuthorization(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  name: string,
  baseUrl: string,
) {
  const row = await findConnectionRow(em, principal.tenant, name);
  if (row.authMode !== 'user_oauth')
    throw new ConflictError(
      `Connection "${name}" uses ${row.authMode}; only user_oauth connections are authorized in a browser.`,
      { code: CrmCodes.not_user_oauth },
    );
  const conn = openConnection(deps.config, row);
  // The hosts the callback's token exchange reaches must be on the egress list before the user is sent to approve.
  await requireEgressAdmitted(em, deps.config, { tenant: principal.tenant, connection: name }, [
    conn.settings.login_host,
    conn.settings.token_url,
    conn.settings.instance_url,
  ]);
  const pending: Pending = {
    state: b64url(randomBytes(24)),
    verifier: b64url(randomBytes(48)),
    redirectUri: redirectUriFor(baseUrl, name),
    startedAt: Date.now(),
  };
  await sql(em, `update crm_connections set oauth_pending_sealed = ? where id = ?`, [
    secretBox(deps.config).seal(JSON.stringify(pending)),
    row.id,
  ]);
  const url = new URL(conn.settings.authorization_url!);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: conn.settings.client_id!,
    redirect_uri: pending.redirectUri,
    state: pending.state,
    scope: (conn.settings.scopes ?? []).join(' '),
    code_challenge: b64url(createHash('sha256').update(pending.verifier).digest()),
    code_challenge_method: 'S256',
  }).toString();
  return { authorization_url: url.toString(), redirect_uri: pending.redirectUri, state: pending.state };
}

const sameText = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * The CRM redirects the browser here: the `state` (unguessable, single use, 10 minutes) identifies
 * the connection and stands in for the caller's credential. Exchanges the code, caches the tokens,
 * then runs and stores the connection test.
 */
export async function completeAuthorization(
  deps: AppDeps,
  em: EntityManager,
  name: string,
  q: { code?: string; state?: string; error?: string; error_description?: string },
) {
  if (!q.state)
    throw new BadRequestError('The callback carries no state.', {
      fields: [{ field: 'query.state', message: 'required' }],
    });
  const box = await openSecretBox(em, deps.config);
  const candidates = await em.find(CrmConnectionEntity, { name, oauthPendingSealed: { $ne: null } }, { refresh: true });
  const row = candidates.find((c) => {
    const p = JSON.parse(box.open(c.oauthPendingSealed!)) as Pending;
    return sameText(p.state, q.state!) && Date.now() - p.startedAt < PENDING_TTL_MS;
  });
  if (!row)
    throw new BadRequestError('Unknown or expired authorization state: start the authorization again.', {
      code: CrmCodes.invalid_state,
    });
  const pending = JSON.parse(box.open(row.oauthPendingSealed!)) as Pending;
  await sql(em, `update crm_connections set oauth_pending_sealed = null where id = ?`, [row.id]);
  if (q.error)
    throw new CrmAuthError(q.error, q.error_description ?? 'no description', { redirect_uri: pending.redirectUri });
  if (!q.code)
    throw new BadRequestError('The callback carries neither code nor error.', {
      fields: [{ field: 'query.code', message: 'required' }],
    });
  const conn = openConnection(deps.config, row);
  const tokens = await authorizationCodeGrant(
    conn.settings,
    conn.secrets.client_secret!,
    q.code,
    pending.redirectUri,
    pending.verifier,
    crmEgress(deps.config),
  ).catch(async (err: unknown) => {
    // Container-service mode: an instance host the egress list lacks is registered for approval (409 names it).
    if (err instanceof CrmEgressError && err.discoveredUrl)
      await requireEgressAdmitted(
        em,
        deps.config,
        { tenant: row.tenant, connection: row.name },
        [err.discoveredUrl],
        'discovered',
      );
    throw err;
  });
  await saveTokens(em, deps.config, conn, tokens);
  // The save-time test could only reach the hosts; with tokens it can prove both, so its stored
  // result stops saying authorization_required.
  return runTest(deps, em, await findConnectionRow(em, row.tenant, row.name));
}
