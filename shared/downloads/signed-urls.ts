import { hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { errors, jwtVerify, SignJWT } from 'jose';
import type { AppConfig } from '../config.js';
import { DownloadGrantEntity, DownloadEntity, type Download } from '../db/entities/index.js';
import { NotFoundError, PayloadTooLargeError, PlatformError } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import { sql } from '../db/sql.js';
import { onProcessReset } from '../process-state.js';
import { keyMaterial } from '../secrets/secret-box.js';

/**
 * Short-lived, single-use signed download URLs for files agents produce (spec, Hosted gateway).
 * A URL carries an HS256 JWT (jose) naming the file, its tenant and a `jti`; serving it records the
 * `jti` in `download_grants`, so a second use is refused. Refusals: expired or used 410 `gone`;
 * forged, malformed or for a missing file 404 `not_found` (nothing about the link is confirmed).
 */

const AUDIENCE = 'platform-download';
export const MAX_DOWNLOAD_BYTES = 25 * 1024 * 1024;
export const MAX_DOWNLOAD_TTL_SECONDS = 86_400;
/** Stored files are kept this long, well past any link's lifetime, then removed. */
export const DOWNLOAD_RETENTION_DAYS = 7;

let processKey: Uint8Array | undefined;
/** The derived key of each deployment configuration this process serves (tests run several). */
let derivedKeys = new WeakMap<AppConfig, Uint8Array>();
onProcessReset('shared/downloads/signed-urls.ts#processKey', () => {
  processKey = undefined;
});
onProcessReset('shared/downloads/signed-urls.ts#derivedKeys', () => {
  derivedKeys = new WeakMap();
});

/**
 * PLATFORM_SIGNING_KEY; else a key derived (HKDF-SHA256) from the secrets root key, which every replica
 * of a deployment shares (PLATFORM_SECRETS_KEY, or the key file in the shared data folder), so a link
 * signed by one API process verifies on another and after a restart; else (no secrets key can be had)
 * one random key per process: links then only work on the process that signed them.
 */
function signingKey(config: AppConfig, log?: Logger): Uint8Array {
  if (config.signingKey) return new TextEncoder().encode(config.signingKey);
  const derived = derivedKeys.get(config);
  if (derived) return derived;
  try {
    const key = new Uint8Array(hkdfSync('sha256', keyMaterial(config), '', 'platform-download-links', 32));
    derivedKeys.set(config, key);
    return key;
  } catch {
    if (!processKey) {
      processKey = randomBytes(32);
      (log ?? createLogger({ base: { component: 'downloads' } })).warn(
        'Neither PLATFORM_SIGNING_KEY nor a secrets key is available: download links are signed with a random per-process key and stop working on restart or on another process',
      );
    }
    return processKey;
  }
}

export interface SignDownloadInput {
  fileId: string;
  tenant: string;
  ttlSeconds: number;
  /** Origin for the URL; defaults to the configured public origin, else http://localhost:<PORT>. */
  publicOrigin?: string;
  /** Signing time (tests sign already-expired links with a past time). */
  now?: Date;
  log?: Logger;
}

/** Signs a single-use link: `<public origin>/api/downloads/<token>`. */
export async function signDownload(config: AppConfig, input: SignDownloadInput): Promise<string> {
  if (!Number.isInteger(input.ttlSeconds) || input.ttlSeconds < 1 || input.ttlSeconds > MAX_DOWNLOAD_TTL_SECONDS) {
    throw new RangeError(`ttlSeconds must be an integer from 1 to ${MAX_DOWNLOAD_TTL_SECONDS}`);
  }
  const issuedAt = Math.floor((input.now ?? new Date()).getTime() / 1000);
  const token = await new SignJWT({ tenant: input.tenant })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(input.fileId)
    .setAudience(AUDIENCE)
    .setJti(randomUUID())
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + input.ttlSeconds)
    .sign(signingKey(config, input.log));
  const origin = input.publicOrigin ?? config.mcp.publicOrigin ?? `http://localhost:${config.port}`;
  return `${origin}/api/downloads/${token}`;
}

const invalidLink = () => new NotFoundError('This download link is not valid.', { reason: 'invalid_link' });

/** Checks the signature and expiry; returns the file, tenant and jti. */
export async function verifyDownloadToken(config: AppConfig, token: string, now = new Date()) {
  try {
    const { payload } = await jwtVerify(token, signingKey(config), {
      audience: AUDIENCE,
      algorithms: ['HS256'],
      currentDate: now,
      requiredClaims: ['jti', 'sub', 'exp'],
    });
    if (typeof payload.tenant !== 'string') throw invalidLink();
    return { jti: payload.jti!, fileId: payload.sub!, tenant: payload.tenant };
  } catch (err) {
    if (err instanceof errors.JWTExpired)
      throw new PlatformError('gone', 'This download link has expired; ask the agent for a new one.', {
        reason: 'expired',
      });
    throw invalidLink();
  }
}

/** Serves a link once: verifies it, finds the file, records the jti (a second use answers 410). */
export async function redeemDownload(
  em: EntityManager,
  config: AppConfig,
  token: string,
  now = new Date(),
): Promise<Download> {
  const claims = await verifyDownloadToken(config, token, now);
  const download = await em.findOne(
    DownloadEntity,
    { id: claims.fileId, tenant: claims.tenant },
    { populate: ['content'] },
  );
  if (!download) throw invalidLink();
  try {
    await em.insert(DownloadGrantEntity, {
      jti: claims.jti,
      downloadId: download.id,
      tenant: claims.tenant,
      usedAt: now,
    });
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) {
      throw new PlatformError('gone', 'This download link has already been used; ask the agent for a new one.', {
        reason: 'used',
      });
    }
    throw err;
  }
  return download;
}

/** Stores a file an agent produced; sign a link to it with `signDownload`. */
export async function storeDownload(
  em: EntityManager,
  input: { tenant: string; name: string; contentType: string; bytes: Buffer | Uint8Array; id?: string },
): Promise<{ id: string; name: string; contentType: string; byteSize: number }> {
  const content = Buffer.from(input.bytes);
  if (content.byteLength > MAX_DOWNLOAD_BYTES) {
    throw new PayloadTooLargeError(`A download may hold at most ${MAX_DOWNLOAD_BYTES} bytes.`, {
      limit_bytes: MAX_DOWNLOAD_BYTES,
    });
  }
  // Opportunistic retention: files past DOWNLOAD_RETENTION_DAYS go (a bounded batch per new file).
  await sql(
    em,
    `delete from downloads where id in (select id from downloads where created_at < now() - make_interval(days => ?) limit 100)`,
    [DOWNLOAD_RETENTION_DAYS],
  );
  const id = input.id ?? randomUUID();
  // A caller retrying with the same id (an agent's retried tool call) finds the first file.
  if (input.id && (await em.findOne(DownloadEntity, { id: input.id })))
    return { id, name: input.name, contentType: input.contentType, byteSize: content.byteLength };
  await em.insert(DownloadEntity, {
    id,
    tenant: input.tenant,
    fileName: input.name,
    contentType: input.contentType,
    content,
    byteSize: content.byteLength,
    createdAt: new Date(),
  });
  return { id, name: input.name, contentType: input.contentType, byteSize: content.byteLength };
}
