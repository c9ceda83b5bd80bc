import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { checkSecretsKey, MIN_SECRETS_KEY_BYTES, type AppConfig } from '../config.js';
import { PlatformError } from '../errors.js';
import { sql } from '../db/sql.js';
import { onProcessReset } from '../process-state.js';

/**
 * Stored forms (base64url parts):
 * - `v1.<iv>.<tag>.<ciphertext>`: under the root key (`PLATFORM_SECRETS_KEY` or the key file). Values
 *   stored before key versions existed have this form, and it is still written while no managed key
 *   is active, so older code keeps reading them.
 * - `v2.<kid>.<iv>.<tag>.<ciphertext>`: under the managed key `kid` of the keyring (table
 *   `secret_keys`; the key id is the GCM additional data, so a value cannot be relabelled).
 */
const PREFIX = 'v1';
const PREFIX_V2 = 'v2';
/** The key id of the root key (values in the `v1` form). It is never retired. */
export const ROOT_KEY_ID = 'root';

/** Encrypts and decrypts secrets at rest with AES-256-GCM. */
export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

const unavailable = (message: string) =>
  new PlatformError('service_unavailable', message, { dependency: 'secrets_key' });

/** The key file's content, or null when there is none yet; a file too short to be a key is refused, never used. */
function readKeyFile(file: string): string | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw unavailable(
      `The secrets key file ${file} cannot be read: set PLATFORM_SECRETS_KEY, or fix the file's permissions.`,
    );
  }
  if (new TextEncoder().encode(text).length < MIN_SECRETS_KEY_BYTES) {
    throw unavailable(
      `The secrets key file ${file} is damaged (shorter than ${MIN_SECRETS_KEY_BYTES} bytes): restore it, or set PLATFORM_SECRETS_KEY to the key the secrets were stored with.`,
    );
  }
  return text;
}

/**
 * Creates the key file once, atomically: the key is written and synced to a private temp file in the
 * same folder, then hard-linked into place. `link` never replaces an existing file, so when API and
 * worker on one machine race, exactly one key wins, and a reader never sees a file before its key
 * is in it (which `open(wx)` then `write` allowed). Everyone then reads the winner's file.
 */
function createKeyFile(file: string): string {
  const dir = path.dirname(file);
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    mkdirSync(dir, { recursive: true });
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, randomBytes(32).toString('base64url') + '\n');
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(temp, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  } catch {
    throw unavailable(
      'Secrets cannot be stored: set PLATFORM_SECRETS_KEY, or make PLATFORM_DATA_DIR writable so a key file can be created.',
    );
  } finally {
    rmSync(temp, { force: true });
  }
  const winner = readKeyFile(file);
  if (winner === null) throw unavailable(`The secrets key file ${file} vanished while it was created; retry.`);
  return winner;
}

export function keyMaterial(config: AppConfig): string {
  if (config.secrets.key) {
    checkSecretsKey(config.secrets.key);
    return config.secrets.key;
  }
  // No configured key: use the generated one, creating it on first use.
  return readKeyFile(config.secrets.keyFile) ?? createKeyFile(config.secrets.keyFile);
}

/** One row of `secret_keys` as this process last read it (wrapped: the data key sealed by the root key). */
export interface KeyringRow {
  kid: string;
  wrapped: string | null;
  status: 'pending' | 'active' | 'retiring' | 'retired';
  fingerprint: string;
}

/**
 * The keyring rows this process last read. `refreshKeyring` replaces them; `secretBox` unwraps them
 * with the root key. Before the first refresh the process knows only the root key, so it seals in
 * the `v1` form, which can never be orphaned (the root key is never retired).
 */
let keyringRows: KeyringRow[] | null = null;
onProcessReset('shared/secrets/secret-box.ts#keyringRows', () => {
  keyringRows = null;
});

/** Reads `secret_keys` (a few rows) so that the next `secretBox` seals under the active key and opens every live one. */
export async function refreshKeyring(em: EntityManager): Promise<void> {
  const rows = (await sql(
    em,
    `select kid, wrapped, status, fingerprint from secret_keys where status <> 'retired' order by created_at`,
    [],
  )) as KeyringRow[];
  keyringRows = rows;
}

/** The id of the key a stored value is sealed under (`root` for the `v1` form); null when it is not a sealed value. */
export function sealedKeyId(sealed: string): string | null {
  const parts = sealed.split('.');
  if (parts[0] === PREFIX && parts.length === 4) return ROOT_KEY_ID;
  if (parts[0] === PREFIX_V2 && parts.length === 5 && parts[1]) return parts[1];
  return null;
}

const rootAesKey = (material: string) =>
  Buffer.from(hkdfSync('sha256', material, 'platform-secrets', 'aes-256-gcm v1', 32));
const wrappingKey = (material: string) =>
  Buffer.from(hkdfSync('sha256', material, 'platform-secrets', 'keyring-wrap v1', 32));

/** A public identifier of a key (16 hex characters of a hash over it); never enough to recover it. */
export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update('platform-secrets fingerprint\0').update(key).digest('hex').slice(0, 16);
}

function gcmSeal(key: Buffer, plaintext: Buffer, aad?: string): string[] {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (aad !== undefined) cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return [iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')];
}

function gcmOpen(key: Buffer, iv: string, tag: string, ct: string, aad?: string): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  if (aad !== undefined) decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]);
}

/** Where the root key comes from and its fingerprint (throws the secret box's 503 when it cannot be read). */
export function rootKeyInfo(config: AppConfig): { source: 'env' | 'file'; fingerprint: string } {
  const material = keyMaterial(config);
  return { source: config.secrets.key ? 'env' : 'file', fingerprint: keyFingerprint(rootAesKey(material)) };
}

/** A new random data key, wrapped by the root key for `secret_keys` (AES-256-GCM, the key id as additional data). */
export function generateManagedKey(config: AppConfig): { kid: string; wrapped: string; fingerprint: string } {
  const material = keyMaterial(config);
  const kid = `k${randomBytes(9).toString('base64url').replace(/[-_]/g, 'x')}`;
  const key = randomBytes(32);
  return { kid, wrapped: gcmSeal(wrappingKey(material), key, kid).join('.'), fingerprint: keyFingerprint(key) };
}

/** Unwraps a managed key; throws the box's 503 when the root key is not the one that wrapped it. */
export function unwrapManagedKey(config: AppConfig, row: Pick<KeyringRow, 'kid' | 'wrapped'>): Buffer {
  const [iv, tag, ct] = (row.wrapped ?? '').split('.');
  try {
    if (!iv || !tag || ct === undefined) throw new Error('not a wrapped key');
    return gcmOpen(wrappingKey(keyMaterial(config)), iv, tag, ct, row.kid);
  } catch (err) {
    if (err instanceof PlatformError) throw err;
    throw unavailable(
      `Managed encryption key ${row.kid} cannot be unwrapped: PLATFORM_SECRETS_KEY differs from the key it was wrapped with.`,
    );
  }
}

const unwrapped = new Map<string, Buffer>();
onProcessReset('shared/secrets/secret-box.ts#unwrapped', () => {
  unwrapped.clear();
});

function managedKey(config: AppConfig, material: string, row: KeyringRow): Buffer {
  const cacheKey = `${keyFingerprint(rootAesKey(material))}/${row.kid}/${row.wrapped}`;
  let key = unwrapped.get(cacheKey);
  if (!key) {
    key = unwrapManagedKey(config, row);
    unwrapped.set(cacheKey, key);
  }
  return key;
}

/**
 * The deployment's secret box as of this process's last `refreshKeyring`: seals under the active
 * managed key (the root key while none is active) and opens values under the root key and every
 * key not yet retired. Callers that read or write sealed columns call `refreshKeyring(em)` first
 * (or use `openSecretBox`); `shared/secrets/sealed-columns.ts` lists those columns.
 */
export function secretBox(config: AppConfig): SecretBox {
  const material = keyMaterial(config);
  const root = rootAesKey(material);
  const rows = keyringRows ?? [];
  const active = rows.find((r) => r.status === 'active');
  return {
    seal(plaintext) {
      if (!active) return [PREFIX, ...gcmSeal(root, Buffer.from(plaintext, 'utf8'))].join('.');
      const key = managedKey(config, material, active);
      return [PREFIX_V2, active.kid, ...gcmSeal(key, Buffer.from(plaintext, 'utf8'), active.kid)].join('.');
    },
    open(sealed) {
      const parts = sealed.split('.');
      const kid = sealedKeyId(sealed);
      if (kid === null) throw new Error('not a sealed secret');
      let key: Buffer;
      let aad: string | undefined;
      if (kid === ROOT_KEY_ID) key = root;
      else {
        const row = rows.find((r) => r.kid === kid && r.wrapped);
        if (!row)
          throw unavailable(
            `A stored secret is sealed under encryption key ${kid}, which this process does not hold (retired, or created after its keyring was read).`,
          );
        key = managedKey(config, material, row);
        aad = kid;
      }
      const [iv, tag, ct] = kid === ROOT_KEY_ID ? parts.slice(1) : parts.slice(2);
      try {
        return gcmOpen(key, iv!, tag!, ct!, aad).toString('utf8');
      } catch {
        throw new PlatformError(
          'service_unavailable',
          'A stored secret cannot be decrypted: PLATFORM_SECRETS_KEY differs from the key it was stored with.',
          {
            dependency: 'secrets_key',
          },
        );
      }
    },
  };
}

/** `refreshKeyring` then `secretBox`: the box to use in a request or an activity. */
export async function openSecretBox(em: EntityManager, config: AppConfig): Promise<SecretBox> {
  await refreshKeyring(em);
  return secretBox(config);
}
