import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { desktopNow } from './clock.js';
import { type ProvisionerClient, ProvisionerError, type ProvisionerCredit } from './provisioner.js';
import { evaluatePolicy } from './versions.js';
import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  type PlatformError,
  ServiceUnavailableError,
  UpdateRequiredError,
} from '../errors.js';
import type { AppDeps } from '../app-deps.js';
import { desktopSetup, type DesktopSetup } from './setup.js';
import { loadState, saveState, type DesktopState, type LoadedState } from './state.js';
import { sql } from '../db/sql.js';
import { DesktopCodes } from './error-codes.js';

/** Spec, Limits: the loopback ports a sign-in callback may use. */
export const SIGN_IN_PORTS = [47080, 47081, 47082, 47083] as const;
/** How long a sign-in attempt waits for its callback. */
export const SIGN_IN_TTL_MS = 10 * 60_000;
/** Spec, Limits (desktop credit cache). */
export const CREDIT_MAX_AGE_MS = 180_000;
export const CREDIT_FRESH_AGE_MS = 15_000;
export const CREDIT_REFUSED_WAIT_MS = 180_000;
/** A credit reading this used is "heads-up due" (the app shows a warning). */
export const CREDIT_HEADS_UP_FRACTION = 0.8;

export const CALLBACK_PATH = '/api/desktop/auth/callback';

function requireProvisioner(setup: DesktopSetup): ProvisionerClient {
  if (!setup.provisioner)
    throw new ServiceUnavailableError(
      'desktop_provisioner',
      'The desktop provisioner is not configured (PLATFORM_DESKTOP_PROVISIONER_URL).',
    );
  return setup.provisioner;
}

function provisionerUnavailable(err: unknown): PlatformError {
  return new ServiceUnavailableError(
    'desktop_provisioner',
    `The desktop provisioner is unavailable: ${err instanceof Error ? err.message : String(err)}`,
  );
}

const hashState = (state: string) => createHash('sha256').update(state, 'utf8').digest('hex');

// ---------------------------------------------------------------------------------------------
// Sign-in

export type AttemptStatus = 'waiting' | 'succeeded' | 'failed';

export interface AttemptView {
  status: AttemptStatus;
  failure_reason: string | null;
  created_at: string;
  finished_at: string | null;
  expires_at: string;
}

interface AttemptRow {
  state_hash: string;
  status: AttemptStatus;
  port: number;
  redirect_uri: string;
  failure_reason: string | null;
  created_at: Date;
  finished_at: Date | null;
  expires_at: Date;
}

function attemptView(row: AttemptRow): AttemptView {
  return {
    status: row.status,
    failure_reason: row.failure_reason,
    created_at: new Date(row.created_at).toISOString(),
    finished_at: row.finished_at ? new Date(row.finished_at).toISOString() : null,
    expires_at: new Date(row.expires_at).toISOString(),
  };
}

export async function startSignIn(deps: AppDeps, em: EntityManager, port: number) {
  const setup = await desktopSetup(deps);
  if (!(SIGN_IN_PORTS as readonly number[]).includes(port))
    throw new BadRequestError(`Port ${port} is not a registered sign-in callback port.`, {
      reason: 'sign_in_port_not_registered',
      sign_in_ports: [...SIGN_IN_PORTS],
    });
  const provisioner = requireProvisioner(setup);
  const state = randomBytes(32).toString('base64url');
  const redirectUri = `http://127.0.0.1:${port}${CALLBACK_PATH}`;
  const now = desktopNow();
  // Attempts finished or expired a day ago are of no further use.
  await sql(em, 'delete from desktop_sign_in_attempts where expires_at < ?', [new Date(now - 86_400_000)]);
  await sql(
    em,
    `insert into desktop_sign_in_attempts (state_hash, status, port, redirect_uri, created_at, expires_at)
     values (?, 'waiting', ?, ?, ?, ?)`,
    [hashState(state), port, redirectUri, new Date(now), new Date(now + SIGN_IN_TTL_MS)],
  );
  return { authorize_url: provisioner.authorizeUrl(redirectUri, state), state, redirect_uri: redirectUri };
}

async function findAttempt(em: EntityManager, state: string, forUpdate = false): Promise<AttemptRow> {
  const rows = await sql<AttemptRow>(
    em,
    `select * from desktop_sign_in_attempts where state_hash = ?${forUpdate ? ' for update' : ''}`,
    [hashState(state)],
  );
  const row = rows[0];
  if (!row) throw new NotFoundError('No sign-in attempt has this state.');
  return row;
}

async function finishAttempt(
  em: EntityManager,
  row: AttemptRow,
  status: 'succeeded' | 'failed',
  reason: string | null,
): Promise<AttemptRow> {
  const rows = await sql<AttemptRow>(
    em,
    `update desktop_sign_in_attempts set status = ?, failure_reason = ?, finished_at = ?
       where state_hash = ? and status = 'waiting' returning *`,
    [status, reason, new Date(desktopNow()), row.state_hash],
  );
  return rows[0] ?? row;
}

/** A waiting attempt past its expiry is failed (`expired`) when next looked at. */
async function settleExpiry(em: EntityManager, row: AttemptRow): Promise<AttemptRow> {
  if (row.status === 'waiting' && new Date(row.expires_at).getTime() <= desktopNow())
    return finishAttempt(em, row, 'failed', 'expired');
  return row;
}

export async function signInStatus(deps: AppDeps, em: EntityManager, state: string): Promise<AttemptView> {
  await desktopSetup(deps);
  return attemptView(await settleExpiry(em, await findAttempt(em, state)));
}

/** Cancels a waiting attempt (failed, `cancelled`); a finished one is answered as it is. */
export async function cancelSignIn(deps: AppDeps, em: EntityManager, state: string): Promise<AttemptView> {
  await desktopSetup(deps);
  const row = await settleExpiry(em, await findAttempt(em, state));
  if (row.status !== 'waiting') return attemptView(row);
  return attemptView(await finishAttempt(em, row, 'failed', 'cancelled'));
}

/**
 * The provisioner's redirect back to the loopback port. The previous AI key is removed first (503
 * when it cannot be: the attempt stays waiting and the code unspent, so the browser may retry), then
 * the code is exchanged for a device credential and a new AI key, sealed at rest.
 */
export async function completeSignIn(
  deps: AppDeps,
  em: EntityManager,
  input: { state: string; code?: string; error?: string },
): Promise<AttemptView> {
  const setup = await desktopSetup(deps);
  let row = await settleExpiry(em, await findAttempt(em, input.state));
  if (row.status !== 'waiting')
    throw new ConflictError(
      `This sign-in attempt has already ${row.status === 'succeeded' ? 'succeeded' : 'failed'}.`,
      {
        code: DesktopCodes.sign_in_attempt_finished,
        status: row.status,
        failure_reason: row.failure_reason,
      },
    );
  if (input.error !== undefined || input.code === undefined) {
    row = await finishAttempt(em, row, 'failed', input.error === undefined ? 'no_code' : 'denied');
    return attemptView(row);
  }
  const provisioner = requireProvisioner(setup);
  const loaded = await loadState(em, deps.config);
  if (loaded.credentials?.ai_key) {
    try {
      await provisioner.revokeAiKey(loaded.credentials.ai_key.id, loaded.credentials.device_credential);
    } catch (err) {
      throw new ServiceUnavailableError(
        'desktop_provisioner',
        `The previous AI key cannot be removed, so sign-in cannot finish yet; retry shortly. (${(err as Error).message})`,
      );
    }
    await saveState(em, deps.config, loaded.state, { ...loaded.credentials, ai_key: null });
  }
  let issued;
  try {
    issued = await provisioner.exchangeCode(input.code, row.redirect_uri);
  } catch (err) {
    if (err instanceof ProvisionerError && err.kind !== 'unavailable')
      return attemptView(await finishAttempt(em, row, 'failed', 'code_refused'));
    throw provisionerUnavailable(err);
  }
  return em.fork().transactional(async (tx) => {
    const locked = await findAttempt(tx, input.state, true);
    if (locked.status !== 'waiting') return attemptView(locked);
    const current = await loadState(tx, deps.config, { forUpdate: true });
    // A new sign-in starts a new activation: the app activates again with the new credential.
    const state: DesktopState = { ...current.state, activated: false, credit: null, credit_refused_at: null };
    await saveState(tx, deps.config, state, { device_credential: issued.device_credential, ai_key: issued.ai_key });
    return attemptView(await finishAttempt(tx, locked, 'succeeded', null));
  });
}

// ---------------------------------------------------------------------------------------------
// Activation, check-in, sign-out

export interface ActivationAnswer {
  activation: { activated: boolean; llm: DesktopState['llm'] };
  trial: DesktopState['trial'];
}

function activationAnswer(state: DesktopState): ActivationAnswer {
  return { activation: { activated: state.activated, llm: state.activated ? state.llm : null }, trial: state.trial };
}

export async function activate(
  deps: AppDeps,
  em: EntityManager,
  kind: 'activate' | 'check-in',
  appVersion: string | undefined,
): Promise<ActivationAnswer> {
  const setup = await desktopSetup(deps);
  const loaded = await loadState(em, deps.config);
  if (!loaded.credentials)
    throw new ConflictError('Sign in first: this laptop holds no device credential.', {
      code: DesktopCodes.not_signed_in,
    });
  if (kind === 'check-in' && !loaded.state.activated)
    throw new ConflictError('This laptop is not activated.', { code: DesktopCodes.not_activated });
  const provisioner = requireProvisioner(setup);
  const version = appVersion ?? loaded.state.app_version;
  let answer;
  try {
    answer = await provisioner.activate(kind, loaded.credentials.device_credential, version);
  } catch (err) {
    if (err instanceof ProvisionerError && err.kind !== 'unavailable')
      throw new ConflictError('The provisioner refused this device credential: sign in again.', {
        code: DesktopCodes.device_credential_refused,
      });
    throw provisionerUnavailable(err);
  }
  const state: DesktopState = {
    ...loaded.state,
    activated: true,
    llm: answer.llm,
    trial: answer.trial ?? null,
    version_policy: answer.version_policy,
    app_version: version,
    last_check_in_at: new Date(desktopNow()).toISOString(),
  };
  await saveState(em, deps.config, state);
  return activationAnswer(state);
}

/** Signs out: tells the provisioner (best effort), then forgets credentials and activation here. */
export async function signOut(deps: AppDeps, em: EntityManager): Promise<ActivationAnswer> {
  const setup = await desktopSetup(deps);
  const loaded = await loadState(em, deps.config);
  if (loaded.credentials && setup.provisioner) {
    try {
      await setup.provisioner.signOut(loaded.credentials.device_credential);
    } catch (err) {
      deps.log.warn('desktop sign-out: the provisioner was not told', { error_message: (err as Error).message });
    }
  }
  const state: DesktopState = {
    ...loaded.state,
    activated: false,
    llm: null,
    trial: null,
    credit: null,
    credit_refused_at: null,
    credit_model: null,
  };
  await saveState(em, deps.config, state, null);
  return activationAnswer(state);
}

// ---------------------------------------------------------------------------------------------
// Version policy

/** Refuses with 426 while a required version notice locks the app. */
export function assertNotLocked(state: DesktopState): void {
  const { required } = evaluatePolicy(state.version_policy, state.app_version);
  if (required) throw new UpdateRequiredError({ ...required });
}

// ---------------------------------------------------------------------------------------------
// Credit

export interface CreditView {
  available: boolean;
  model: string | null;
  max_budget_usd: number | null;
  spend_usd: number | null;
  used_fraction: number | null;
  exhausted: boolean | null;
  heads_up_due: boolean | null;
  alternatives: string[];
  percent_used: number | null;
  resets_at: string | null;
  read_at: string | null;
  device_credential_refused: boolean;
}

export function creditView(
  credit: DesktopState['credit'],
  chosenModel: string | null,
  refusedAt: number | null,
): CreditView {
  const refused = refusedAt !== null && desktopNow() - refusedAt < CREDIT_REFUSED_WAIT_MS;
  if (!credit)
    return {
      available: false,
      model: null,
      max_budget_usd: null,
      spend_usd: null,
      used_fraction: null,
      exhausted: null,
      heads_up_due: null,
      alternatives: [],
      percent_used: null,
      resets_at: null,
      read_at: null,
      device_credential_refused: refused,
    };
  const r: ProvisionerCredit = credit.reading;
  const used = r.max_budget_usd > 0 ? Math.min(1, r.spend_usd / r.max_budget_usd) : 1;
  const exhausted = r.spend_usd >= r.max_budget_usd;
  return {
    available: true,
    model: chosenModel && r.alternatives.includes(chosenModel) ? chosenModel : r.model,
    max_budget_usd: r.max_budget_usd,
    spend_usd: r.spend_usd,
    used_fraction: used,
    exhausted,
    heads_up_due: !exhausted && used >= CREDIT_HEADS_UP_FRACTION,
    alternatives: r.alternatives,
    percent_used: Math.round(used * 1000) / 10,
    resets_at: r.resets_at,
    read_at: new Date(credit.read_at).toISOString(),
    device_credential_refused: refused,
  };
}

/**
 * The credit reading, from the cache when it is young enough (spec, Limits): a reading up to 180 s
 * old by default; `fresh` refreshes one older than 15 s; after the provisioner refused the device
 * credential, no call for 180 s (the cached reading, if any, is answered meanwhile).
 */
export async function readCredit(deps: AppDeps, em: EntityManager, fresh: boolean): Promise<CreditView> {
  const setup = await desktopSetup(deps);
  const loaded: LoadedState = await loadState(em, deps.config);
  const { state } = loaded;
  assertNotLocked(state);
  const now = desktopNow();
  if (!loaded.credentials || !state.activated) return creditView(null, null, null);
  const cached = state.credit;
  const waiting = state.credit_refused_at !== null && now - state.credit_refused_at < CREDIT_REFUSED_WAIT_MS;
  const maxAge = fresh ? CREDIT_FRESH_AGE_MS : CREDIT_MAX_AGE_MS;
  if (waiting || (cached && now - cached.read_at <= maxAge))
    return creditView(cached, state.credit_model, state.credit_refused_at);
  const provisioner = requireProvisioner(setup);
  try {
    const reading = await provisioner.credit(loaded.credentials.device_credential);
    const next: DesktopState = { ...state, credit: { reading, read_at: now }, credit_refused_at: null };
    await saveState(em, deps.config, next);
    return creditView(next.credit, next.credit_model, null);
  } catch (err) {
    if (err instanceof ProvisionerError && err.kind === 'refused') {
      await saveState(em, deps.config, { ...state, credit_refused_at: now });
      return creditView(cached, state.credit_model, now);
    }
    if (cached) return creditView(cached, state.credit_model, state.credit_refused_at);
    throw provisionerUnavailable(err);
  }
}

// ---------------------------------------------------------------------------------------------
// Model choice

/** The model choices are the user's only outside platform-AI-only mode (403 `platform_ai_only`). */
async function refuseInPlatformAiOnlyMode(deps: AppDeps): Promise<void> {
  if ((await desktopSetup(deps)).platformAiOnly)
    throw new ForbiddenError('This laptop uses only the platform AI (platform-AI-only mode).', {
      code: DesktopCodes.platform_ai_only,
    });
}

export async function chooseLlm(deps: AppDeps, em: EntityManager, choice: 'platform' | 'own_provider') {
  await refuseInPlatformAiOnlyMode(deps);
  const { state } = await loadState(em, deps.config);
  assertNotLocked(state);
  await saveState(em, deps.config, { ...state, llm_choice: choice });
  return { llm_choice: choice };
}

export async function switchCreditModel(deps: AppDeps, em: EntityManager, model: string) {
  await refuseInPlatformAiOnlyMode(deps);
  const { state } = await loadState(em, deps.config);
  assertNotLocked(state);
  if (!state.credit)
    throw new ConflictError('No credit reading yet: read the credit first.', { code: DesktopCodes.no_credit_reading });
  if (model !== state.credit.reading.model && !state.credit.reading.alternatives.includes(model))
    throw new BadRequestError(`Model ${model} is not offered on this plan.`, {
      reason: 'model_not_offered',
      alternatives: state.credit.reading.alternatives,
    });
  const next = { ...state, credit_model: model === state.credit.reading.model ? null : model };
  await saveState(em, deps.config, next);
  return creditView(next.credit, next.credit_model, next.credit_refused_at);
}

// ---------------------------------------------------------------------------------------------
// Status and notices

export async function desktopStatus(deps: AppDeps, em: EntityManager) {
  const setup = await desktopSetup(deps);
  const loaded = await loadState(em, deps.config);
  const { state } = loaded;
  const { required, available } = evaluatePolicy(state.version_policy, state.app_version);
  return {
    signed_in: loaded.credentials !== null,
    activated: state.activated && loaded.credentials !== null,
    saved_credentials_unreadable: loaded.unreadable,
    platform_ai_only: setup.platformAiOnly,
    platform_ai_only_notice: setup.platformAiOnly && !state.platform_ai_only_notice_seen,
    platform_ai_only_notice_seen: state.platform_ai_only_notice_seen,
    update_required: required,
    update_available: available,
    trial: state.trial,
    activation: {
      activated: state.activated && loaded.credentials !== null,
      llm: state.activated ? state.llm : null,
    },
    credit: state.credit ? creditView(state.credit, state.credit_model, state.credit_refused_at) : null,
    app_version: state.app_version,
    last_check_in_at: state.last_check_in_at,
    llm_choice: state.llm_choice,
    provisioner_configured: setup.provisioner !== null,
  };
}

export async function markNoticeSeen(deps: AppDeps, em: EntityManager, notice: 'platform_ai_only' | 'credentials') {
  await desktopSetup(deps, 'conflict');
  const loaded = await loadState(em, deps.config);
  if (notice === 'platform_ai_only') {
    await saveState(em, deps.config, { ...loaded.state, platform_ai_only_notice_seen: true });
    return;
  }
  // Saved credentials this process cannot open are dropped: the app signs in again.
  if (loaded.unreadable > 0) await saveState(em, deps.config, { ...loaded.state, activated: false }, null);
}

// ---------------------------------------------------------------------------------------------
// Update manifests

export async function updateManifest(
  deps: AppDeps,
  em: EntityManager,
  target: string,
  arch: string,
  currentVersion: string,
) {
  const setup = await desktopSetup(deps);
  const loaded = await loadState(em, deps.config);
  if (!loaded.credentials || !loaded.state.activated)
    throw new ConflictError('This laptop is not activated.', { code: DesktopCodes.not_activated });
  const provisioner = requireProvisioner(setup);
  try {
    return await provisioner.update(loaded.credentials.device_credential, target, arch, currentVersion);
  } catch (err) {
    if (err instanceof ProvisionerError && err.kind === 'not_found')
      throw new NotFoundError('No update channel for this target and architecture.', {
        code: DesktopCodes.update_unavailable,
      });
    throw new ServiceUnavailableError(
      'desktop_provisioner',
      `The update check failed: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}
