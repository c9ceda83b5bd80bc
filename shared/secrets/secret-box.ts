import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AppConfig } from '../config.js';
import { PlatformError } from '../errors.js';

/** Stored form: `v1.<iv>.<tag>.<ciphertext>` (base64url); the version lets the scheme change later. */
const PREFIX = 'v1';

/** Encrypts and decrypts secrets at rest with AES-256-GCM. */
export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

function keyMaterial(config: AppConfig): string {
  if (config.secrets.key) return config.secrets.key;
  // No configured key: generate one once. `wx` makes concurrent first starts (API and worker on one
  // machine) agree: the loser of the race reads the winner's file.
  try {
    return readFileSync(config.secrets.keyFile, 'utf8').trim();
  } catch {
    try {
      mkdirSync(path.dirname(config.secrets.keyFile), { recursive: true });
      writeFileSync(config.secrets.keyFile, randomBytes(32).toString('base64url') + '\n', { flag: 'wx', mode: 0o600 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new PlatformError('service_unavailable', 'Secrets cannot be stored: set PLATFORM_SECRETS_KEY, or make PLATFORM_DATA_DIR writable so a key file can be created.', {
          dependency: 'secrets_key',
        });
      }
    }
    return readFileSync(config.secrets.keyFile, 'utf8').trim();
  }
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
      return [PREFIX, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
    },
    open(sealed) {
      const [version, iv, tag, ct] = sealed.split('.');
      if (version !== PREFIX || !iv || !tag || ct === undefined) throw new Error('not a sealed secret');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new PlatformError('service_unavailable', 'A stored secret cannot be decrypted: PLATFORM_SECRETS_KEY differs from the key it was stored with.', {
          dependency: 'secrets_key',
        });
      }
    },
  };
  boxes.set(material, box);
  return box;
}
