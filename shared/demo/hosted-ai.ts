import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { desktopNow } from '../desktop/clock.js';
import { ProvisionerClient, ProvisionerError, type ProvisionerCredit } from '../desktop/provisioner.js';
import { readDemoOwner } from '../deployment/demo-owner.js';
import { readSettingRow, writeSettingRow } from '../deployment/settings-rows.js';
import { ForbiddenError, NotFoundError, PlatformError, TooManyRequestsError } from '../errors.js';
import { openSecretBox } from '../secrets/secret-box.js';
import type { AppDeps } from '../app-deps.js';
import { CREDIT_FRESH_AGE_MS, CREDIT_MAX_AGE_MS, creditView } from '../desktop/service.js';
import { sql } from '../db/sql.js';
import { DemoCodes } from './error-codes.js';

/**
 * The hosted demo's AI (spec: hosted AI status, activation and credit; paths are ours:
 * `/api/hosted-ai/*`). A deployment is a provisioned instance when `PLATFORM_HOSTED_AI_PROVISIONER_URL`
 * is set; the provisioner (the same HTTP client as desktop mode, shared/desktop/provisioner.ts) issues
 * one AI key for the demo's owner and reports its credit.
 *
 * - The key is kept in `deployment_settings` under `hosted_ai.key`, its secret sealed with the secret
 *   box (never answered). Activation is idempotent: with a key stored it answers the same state and
 *   issues nothing. Concurrent activations are serialised by an advisory lock.
 * - Key issuance is limited to 10 provisioner requests per minute per API process (a sliding window
 *   of 60 s kept in memory; spec, Limits: hosted AI provisioner): the 11th answers 429
 *   `too_many_requests` with `Retry-After` (seconds until the oldest request leaves the window).
 * - Credit: the reading is cached under `hosted_ai.credit`; one up to 180 s old is answered, `fresh`
 *   refreshes one older than 15 s (the desktop credit rules); a provisioner failure answers the
 *   cached reading when there is one, else 503.
 */
export const KEY_ROW = 'hosted_ai.key';
export const CREDIT_ROW = 'hosted_ai.credit';
export const ISSUANCE_LIMIT = 10;
export const ISSUANCE_WINDOW_MS = 60_000;

interface StoredKey {
  key_id: string;
  secret_sealed: string;
  activated_at: string;
  activated_by: string;
}

interface StoredCredit {
  reading: ProvisionerCredit;
  read_at: number;
}

const windows = new WeakMap<object, number[]>();

/** Records one issuance request in this process's window, or throws 429 when the window is full. */
function takeIssuanceSlot(deps: AppDeps): void {
  const now = desktopNow();
  const recent = (windows.get(deps) ?? []).filter((t) => now - t < ISSUANCE_WINDOW_MS);
  if (recent.length >= ISSUANCE_LIMIT) {
    const retryAfter = Math.max(1, Math.ceil((recent[0]! + ISSUANCE_WINDOW_MS - now) / 1000));
    windows.set(deps, recent);
    throw new TooManyRequestsError(
      `Hosted AI key issuance is limited to ${ISSUANCE_LIMIT} requests per minute; retry in ${retryAfter} s.`,
      retryAfter,
      { code: DemoCodes.hosted_ai_rate_limited, limit: ISSUANCE_LIMIT, window_seconds: ISSUANCE_WINDOW_MS / 1000 },
    );
  }
  recent.push(now);
  windows.set(deps, recent);
}

async function provisioner(deps: AppDeps): Promise<ProvisionerClient | null> {
  const baseUrl = await deps.settings.get('hosted_ai.provisioner_url');
  if (!baseUrl) return null;
  return new ProvisionerClient({
    baseUrl,
    clientId: await deps.settings.get('hosted_ai.provisioner_client_id'),
    clientSecret: await deps.settings.get('hosted_ai.provisioner_client_secret'),
    egress: deps.config.egress,
  });
}

function notProvisioned(): NotFoundError {
  return new NotFoundError('This deployment is not a provisioned hosted instance (no hosted AI provisioner).', {
    code: DemoCodes.hosted_ai_not_provisioned,
  });
}

function unavailable(err: unknown): PlatformError {
  const detail = err instanceof ProvisionerError ? err.message : 'the provisioner failed';
  return new PlatformError('service_unavailable', `The hosted AI provisioner is unavailable: ${detail}.`, {
    dependency: 'hosted_ai_provisioner',
  });
}

export interface HostedAiStatus {
  available: boolean;
  configured: boolean;
  active: boolean;
  ai_only: boolean;
  activated_at: string | null;
}

export async function hostedAiStatus(deps: AppDeps, em: EntityManager): Promise<HostedAiStatus> {
  const available = (await deps.settings.get('hosted_ai.provisioner_url')) !== null;
  const key = (await readSettingRow<StoredKey>(em, KEY_ROW))?.value ?? null;
  const credit = (await readSettingRow<StoredCredit>(em, CREDIT_ROW))?.value ?? null;
  const exhausted = credit ? credit.reading.spend_usd >= credit.reading.max_budget_usd : false;
  return {
    available,
    configured: key !== null,
    active: available && key !== null && !exhausted,
    ai_only: await deps.settings.get('hosted_ai.ai_only'),
    activated_at: key?.activated_at ?? null,
  };
}

/**
 * The owner check: the caller is the demo owner and their recorded sign-in carries an e-mail address and a
 * name (`users.name_claim`: the token's `name` or `preferred_username`). Any name counts, one equal to the
 * login id or the e-mail included; only a missing (absent or blank) one is refused.
 */
async function requireOwner(em: EntityManager, principal: Principal) {
  const owner = await readDemoOwner(em);
  const rows = await sql<{ email: string | null; name_claim: string | null }>(
    em,
    'select email, name_claim from users where id = ?',
    [principal.id],
  );
  const user = rows[0];
  const isOwner =
    owner !== null &&
    principal.kind === 'person' &&
    (owner.sub !== null
      ? owner.sub === principal.id
      : !!user?.email && user.email.toLowerCase() === owner.email.toLowerCase());
  if (!isOwner)
    throw new ForbiddenError("Only the demo's owner may activate the hosted AI (sign in as the owner).", {
      code: DemoCodes.not_demo_owner,
    });
  const missing = [...(user?.email ? [] : ['email']), ...(user?.name_claim?.trim() ? [] : ['name'])];
  if (missing.length > 0)
    throw new ForbiddenError(
      `Complete your profile first: the identity provider's token must carry your ${missing.join(' and ')}.`,
      { code: DemoCodes.profile_incomplete, missing },
    );
  return { sub: principal.id, email: user!.email!, name: user!.name_claim! };
}

export async function activateHostedAi(deps: AppDeps, em: EntityManager, principal: Principal) {
  const client = await provisioner(deps);
  if (!client) throw notProvisioned();
  const owner = await requireOwner(em, principal);
  await em.transactional(async (tx) => {
    const t = tx as EntityManager;
    await sql(t, 'select pg_advisory_xact_lock(hashtext(?))', [KEY_ROW]);
    if (await readSettingRow<StoredKey>(t, KEY_ROW)) return; // already configured: no second key
    takeIssuanceSlot(deps);
    let key: { id: string; secret: string };
    try {
      key = await client.issueHostedAiKey({
        owner_sub: owner.sub,
        owner_email: owner.email,
        owner_display_name: owner.name,
      });
    } catch (err) {
      throw unavailable(err);
    }
    const box = await openSecretBox(t, deps.config);
    const stored: StoredKey = {
      key_id: key.id,
      secret_sealed: box.seal(key.secret),
      activated_at: new Date(desktopNow()).toISOString(),
      activated_by: principal.id,
    };
    await writeSettingRow(t, KEY_ROW, stored, principal.id);
  });
  return hostedAiStatus(deps, em);
}

export async function hostedAiCredit(deps: AppDeps, em: EntityManager, fresh: boolean) {
  const client = await provisioner(deps);
  if (!client) throw notProvisioned();
  const key = (await readSettingRow<StoredKey>(em, KEY_ROW))?.value ?? null;
  const view = (c: StoredCredit | null) => {
    const { device_credential_refused: _ignored, ...rest } = creditView(c, null, null);
    return rest;
  };
  if (!key) return view(null);
  const cached = (await readSettingRow<StoredCredit>(em, CREDIT_ROW))?.value ?? null;
  const now = desktopNow();
  if (cached && now - cached.read_at <= (fresh ? CREDIT_FRESH_AGE_MS : CREDIT_MAX_AGE_MS)) return view(cached);
  try {
    const next: StoredCredit = { reading: await client.hostedCredit(key.key_id), read_at: now };
    await writeSettingRow(em, CREDIT_ROW, next, 'hosted-ai');
    return view(next);
  } catch (err) {
    if (cached) return view(cached);
    throw unavailable(err);
  }
}
