import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { checkSecretsKey, MIN_SECRETS_KEY_BYTES, type AppConfig } from '../config.js';
import { PlatformError } from '../errors.js';

/** Stored form: `v1.<iv>.<tag>.<ciphertext>` (base64url); the version lets the scheme change later. */
const PREFIX = 'v1';

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

function keyMaterial(config: AppConfig): string {
  if (config.secrets.key) {
    checkSecretsKey(config.secrets.key);
    return config.secrets.key;
  }
  // No configured key: use the generated one, creating it on first use.
  return readKeyFile(config.secrets.keyFile) ?? createKeyFile(config.secrets.keyFile);
}

const boxes = new Map<string, SecretBox>();

/** The deployment's secret box; the AES key is derived from the configured key with HKDF-SHA256. */
export function secretBox(config: AppConfig): SecretBox {
  const material = keyMaterial(config);
  const cached = boxes.get(material);
  if (cached) return cached;
  const key = Buffer.from(hkdfSync('sha256', material, 'platform-secrets', 'aes-256-gcm v1', 32));
  const box: SecretBox = {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [
        PREFIX,
        iv.toString('base64url'),
        cipher.getAuthTag().toString('base64url'),
        ct.toString('base64url'),
      ].join('.');
    },
    open(sealed) {
      const [version, iv, tag, ct] = sealed.split('.');
      if (version !== PREFIX || !iv || !tag || ct === undefined) throw new Error('not a sealed secret');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
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
  boxes.set(material, box);
  return box;
}
