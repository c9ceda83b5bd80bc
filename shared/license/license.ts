import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { compactVerify, errors } from 'jose';
import { z } from 'zod';
import type { AppConfig } from '../config.js';
import { deleteSettingRow, readSettingRow, writeSettingRow } from '../deployment/settings-rows.js';
import { BadRequestError, ConflictError, PlatformError } from '../errors.js';
import { sql } from '../db/sql.js';
import { SettingsCodes } from '../settings/error-codes.js';
import { onProcessReset } from '../process-state.js';

/**
 * Offline licenses (spec, Configuration: `/api/license/*`). A license is a compact JWS (JWT) signed
 * with EdDSA (Ed25519) or ES256 by the vendor; the deployment holds only the public key
 * (`PLATFORM_LICENSE_PUBLIC_KEY`, PEM or JWK) and verifies it without any network call.
 *
 * Claims: `aud` must name `data-agent-platform`; `sub` (licensee id), `jti` (license id) and `iat`
 * are required; `exp` and `nbf` optional (no `exp`: perpetual); `seats` (positive integer, absent:
 * unlimited), `licensee` (display name), `edition`, `features` optional.
 *
 * Enforcement: activation refuses a tampered, wrong-key, expired or not-yet-valid token (400
 * `bad_request`, `payload.reason`) and a license with fewer seats than the deployment already has
 * people (409, `LICENSE_SEAT_LIMIT_EXCEEDED`). Seats are the rows of `users` of kind `person` (apps do
 * not take seats). `check` re-verifies the stored license each time and answers `ok` false with a
 * reason once it expires, stops verifying (e.g. the key changed) or the deployment has more people
 * than seats; at exactly the limit it is still ok (`seats_remaining` 0). With enforcement disabled
 * (`PLATFORM_LICENSE_ENFORCEMENT_DISABLED`, or no public key configured) `check` answers ok and still
 * names what it found.
 */
export const LICENSE_AUDIENCE = 'data-agent-platform';
export const LICENSE_KEY = 'license';
type LicenseAlgorithm = 'EdDSA' | 'ES256';

const ClaimsSchema = z.object({
  sub: z.string().min(1).max(200),
  jti: z.string().min(1).max(200),
  iat: z.number().int(),
  aud: z.union([z.string(), z.array(z.string())]),
  exp: z.number().int().optional(),
  nbf: z.number().int().optional(),
  iss: z.string().max(500).optional(),
  seats: z.number().int().positive().optional(),
  licensee: z.string().max(200).optional(),
  edition: z.string().max(100).optional(),
  features: z.array(z.string().max(100)).max(100).optional(),
});
export type LicenseClaims = z.infer<typeof ClaimsSchema>;

export type LicenseProblem = 'expired' | 'not_yet_valid' | 'seat_limit_exceeded' | 'license_invalid';

interface StoredLicense {
  token: string;
  activated_at: string;
  activated_by: string;
}

let cachedKey: { source: string; key: KeyObject; alg: LicenseAlgorithm } | undefined;
onProcessReset('shared/license/license.ts#cachedKey', () => {
  cachedKey = undefined;
});

/** The configured public key and its algorithm; a key that is not Ed25519 or P-256 answers 503 naming the variable. */
function publicKey(config: AppConfig) {
  const source = config.license.publicKey;
  if (!source) {
    throw new PlatformError(
      'not_available_here',
      'Licensing is not configured on this deployment (PLATFORM_LICENSE_PUBLIC_KEY is unset).',
      { reason: 'licensing_not_configured' },
    );
  }
  if (cachedKey?.source === source) return cachedKey;
  const unusable = () =>
    new PlatformError(
      'service_unavailable',
      'PLATFORM_LICENSE_PUBLIC_KEY is not an Ed25519 or P-256 public key (PEM or JWK).',
      { dependency: 'license_public_key' },
    );
  let key: KeyObject;
  try {
    const trimmed = source.trim();
    key = trimmed.startsWith('{')
      ? createPublicKey({ key: JSON.parse(trimmed) as JsonWebKey, format: 'jwk' })
      : createPublicKey(trimmed.replace(/\\n/g, '\n'));
  } catch {
    throw unusable();
  }
  const alg =
    key.asymmetricKeyType === 'ed25519'
      ? 'EdDSA'
      : key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1'
        ? 'ES256'
        : undefined;
  if (!alg) throw unusable();
  cachedKey = { source, key, alg };
  return cachedKey;
}

function invalid(reason: string, message: string, extra: Record<string, unknown> = {}) {
  return new BadRequestError(message, { reason, ...extra });
}

/** Signature, claims and audience, leaving the clock out; throws a 400 naming the reason. */
export async function verifyLicenseSignature(config: AppConfig, token: string): Promise<LicenseClaims> {
  const { key, alg } = publicKey(config);
  let payload: Uint8Array;
  try {
    ({ payload } = await compactVerify(token, key, { algorithms: [alg] }));
  } catch (err) {
    if (err instanceof errors.JWSSignatureVerificationFailed) {
      throw invalid(
        'signature_invalid',
        "The license signature does not verify: it was altered, or it was not signed for this deployment's license key.",
      );
    }
    if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) {
      throw invalid('algorithm_not_allowed', `Licenses are signed with ${alg}; this token uses another algorithm.`);
    }
    throw invalid('malformed', 'The license is not a signed token (compact JWS).');
  }
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw invalid('malformed', 'The license payload is not JSON.');
  }
  const parsed = ClaimsSchema.safeParse(raw);
  if (!parsed.success) {
    throw invalid('claims_invalid', 'The license claims are incomplete or malformed.', {
      claims: parsed.error.issues.map((i) => i.path.join('.') || '(root)'),
    });
  }
  const claims = parsed.data;
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(LICENSE_AUDIENCE)) {
    throw invalid(
      'audience_mismatch',
      `The license is not issued for this product (aud must include ${LICENSE_AUDIENCE}).`,
    );
  }
  return claims;
}

/** Signature, claims and validity at `now`; throws a 400 naming the reason (`expired`, `not_yet_valid`, …). */
export async function verifyLicense(config: AppConfig, token: string, now = new Date()): Promise<LicenseClaims> {
  const claims = await verifyLicenseSignature(config, token);
  const problem = timeProblem(claims, now);
  if (problem === 'expired') {
    const at = new Date(claims.exp! * 1000).toISOString();
    throw invalid('expired', `The license expired at ${at}.`, { expires_at: at });
  }
  if (problem === 'not_yet_valid') {
    throw invalid('not_yet_valid', `The license is valid from ${new Date(claims.nbf! * 1000).toISOString()}.`);
  }
  return claims;
}

function timeProblem(claims: LicenseClaims, now: Date): LicenseProblem | null {
  const t = Math.floor(now.getTime() / 1000);
  if (claims.exp !== undefined && t >= claims.exp) return 'expired';
  if (claims.nbf !== undefined && t < claims.nbf) return 'not_yet_valid';
  return null;
}

/** People holding a seat: signed-in persons in `users`. */
export async function seatsUsed(em: EntityManager): Promise<number> {
  const [row] = await sql<{ n: string }>(em, `select count(*)::text as n from users where kind = 'person'`);
  return Number(row?.n ?? 0);
}

function details(claims: LicenseClaims) {
  return {
    license_id: claims.jti,
    licensee_id: claims.sub,
    licensee: claims.licensee ?? null,
    edition: claims.edition ?? null,
    features: claims.features ?? [],
    seats: claims.seats ?? null,
    issued_at: new Date(claims.iat * 1000).toISOString(),
    not_before: claims.nbf !== undefined ? new Date(claims.nbf * 1000).toISOString() : null,
    expires_at: claims.exp !== undefined ? new Date(claims.exp * 1000).toISOString() : null,
  };
}
export type LicenseDetails = ReturnType<typeof details>;

function enforcement(config: AppConfig) {
  const reason = config.license.enforcementDisabled ? 'setting' : !config.license.publicKey ? 'no_public_key' : null;
  return { enforcement_disabled: reason !== null, enforcement_disabled_reason: reason };
}

export interface LicenseEvaluation {
  activated: boolean;
  license: LicenseDetails | null;
  activated_at: string | null;
  activated_by: string | null;
  problems: LicenseProblem[];
  message: string | null;
  seats_used: number;
}

/** The stored license as of `now`: its details and every problem (expired, invalid, over the seat limit). */
export async function evaluateLicense(
  em: EntityManager,
  config: AppConfig,
  now = new Date(),
): Promise<LicenseEvaluation> {
  const used = await seatsUsed(em);
  const row = await readSettingRow<StoredLicense>(em, LICENSE_KEY);
  if (!row) {
    return {
      activated: false,
      license: null,
      activated_at: null,
      activated_by: null,
      problems: [],
      message: null,
      seats_used: used,
    };
  }
  const base = {
    activated: true,
    activated_at: row.value.activated_at,
    activated_by: row.value.activated_by,
    seats_used: used,
  };
  let claims: LicenseClaims;
  try {
    claims = await verifyLicenseSignature(config, row.value.token);
  } catch (err) {
    // Altered, signed with another key, or no key left to verify it with: activated, but not valid.
    if (!(err instanceof PlatformError) || !['bad_request', 'not_available_here'].includes(err.errorType)) throw err;
    return { ...base, license: null, problems: ['license_invalid'], message: err.message };
  }
  const problems: LicenseProblem[] = [];
  const messages: string[] = [];
  const time = timeProblem(claims, now);
  if (time === 'expired') {
    problems.push('expired');
    messages.push(`The license expired at ${new Date(claims.exp! * 1000).toISOString()}.`);
  } else if (time === 'not_yet_valid') {
    problems.push('not_yet_valid');
    messages.push(`The license is valid from ${new Date(claims.nbf! * 1000).toISOString()}.`);
  }
  if (claims.seats !== undefined && used > claims.seats) {
    problems.push('seat_limit_exceeded');
    messages.push(`The deployment has ${used} people and the license covers ${claims.seats} seats.`);
  }
  return { ...base, license: details(claims), problems, message: messages.join(' ') || null };
}

export async function licenseStatus(em: EntityManager, config: AppConfig, now = new Date()) {
  const ev = await evaluateLicense(em, config, now);
  return {
    activated: ev.activated,
    spcs_mode: config.containerServiceMode,
    ...enforcement(config),
    public_key_configured: config.license.publicKey !== undefined,
    valid: ev.activated ? ev.problems.length === 0 : null,
    problems: ev.problems,
    license: ev.license,
    activated_at: ev.activated_at,
    activated_by: ev.activated_by,
    seats_used: ev.seats_used,
  };
}

export async function licenseCheck(em: EntityManager, config: AppConfig, now = new Date()) {
  const ev = await evaluateLicense(em, config, now);
  const { enforcement_disabled, enforcement_disabled_reason } = enforcement(config);
  const problems: string[] = ev.activated ? ev.problems : ['not_activated'];
  const seats = ev.license?.seats ?? null;
  return {
    ok: enforcement_disabled || problems.length === 0,
    reason: problems[0] ?? null,
    problems,
    message: ev.activated ? ev.message : 'No license is activated.',
    enforcement_disabled,
    enforcement_disabled_reason,
    seats,
    seats_used: ev.seats_used,
    seats_remaining: seats === null ? null : Math.max(0, seats - ev.seats_used),
    expires_at: ev.license?.expires_at ?? null,
    checked_at: now.toISOString(),
  };
}

/** Verifies and stores a license (replacing any other); refuses one that does not cover today's people. */
export async function activateLicense(
  em: EntityManager,
  config: AppConfig,
  token: string,
  activatedBy: string,
  now = new Date(),
) {
  const claims = await verifyLicense(config, token, now);
  const used = await seatsUsed(em);
  if (claims.seats !== undefined && used > claims.seats) {
    throw new ConflictError(
      `The license covers ${claims.seats} seats but the deployment already has ${used} people; nothing was activated.`,
      { code: SettingsCodes.LICENSE_SEAT_LIMIT_EXCEEDED, seats: claims.seats, seats_used: used },
    );
  }
  const previous = await readSettingRow<StoredLicense>(em, LICENSE_KEY);
  const stored: StoredLicense = { token, activated_at: now.toISOString(), activated_by: activatedBy };
  await writeSettingRow(em, LICENSE_KEY, stored, activatedBy, now);
  return { replaced: previous !== null, license: details(claims) };
}

export async function deactivateLicense(em: EntityManager): Promise<{ deactivated: boolean }> {
  return { deactivated: await deleteSettingRow(em, LICENSE_KEY) };
}
