import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/config.js';
import { secretBox } from '../../shared/secrets/secret-box.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const freshDir = () => mkdtempSync(path.join(tmpdir(), 'secret-box-'));

describe('PLATFORM_SECRETS_KEY', () => {
  it('is refused below 32 bytes, at start and at use, naming the variable', () => {
    expect(() => loadConfig({ PLATFORM_SECRETS_KEY: 'test-secrets-key' })).toThrow(ConfigError);
    expect(() => loadConfig({ PLATFORM_SECRETS_KEY: 'x'.repeat(31) })).toThrow(
      /PLATFORM_SECRETS_KEY must be at least 32 bytes \(got 31\)/,
    );
    const config = loadConfig({ PLATFORM_DATA_DIR: freshDir() });
    expect(() => secretBox({ ...config, secrets: { ...config.secrets, key: 'short' } })).toThrow(ConfigError);
    expect(() => secretBox(loadConfig({ PLATFORM_SECRETS_KEY: 'k'.repeat(32) })).seal('x')).not.toThrow();
  });
});

describe('the generated key file', () => {
  it('is never overwritten, leaves no temp file behind, and an empty or short file is refused rather than used as a key', () => {
    const dir = freshDir();
    const file = path.join(dir, 'secrets.key');
    const existing = 'e'.repeat(43);
    writeFileSync(file, `${existing}\n`, { mode: 0o600 });
    const sealed = secretBox(loadConfig({ PLATFORM_SECRETS_KEY: existing })).seal('kept');
    expect(secretBox(loadConfig({ PLATFORM_DATA_DIR: dir })).open(sealed)).toBe('kept');
    expect(readFileSync(file, 'utf8').trim()).toBe(existing);

    const created = freshDir();
    secretBox(loadConfig({ PLATFORM_DATA_DIR: created })).seal('x');
    expect(readdirSync(created)).toEqual(['secrets.key']);
    expect(statSync(path.join(created, 'secrets.key')).mode & 0o777).toBe(0o600);

    // What a reader saw mid-creation before: an empty file. It must never become the key.
    const damaged = freshDir();
    writeFileSync(path.join(damaged, 'secrets.key'), '');
    expect(() => secretBox(loadConfig({ PLATFORM_DATA_DIR: damaged }))).toThrow(/damaged/);
  });

  it('agrees across processes racing to create it', async () => {
    const dir = freshDir();
    const start = Date.now() + 1_500;
    // Each process waits for the same instant, then seals with whatever key it got.
    const script = `
      import { loadConfig } from './shared/config.ts';
      import { secretBox } from './shared/secrets/secret-box.ts';
      while (Date.now() < ${start}) {}
      process.stdout.write(secretBox(loadConfig({ PLATFORM_DATA_DIR: ${JSON.stringify(dir)} })).seal('same'));
    `;
    const run = () =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
          cwd: root,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (c: Buffer) => (out += c.toString()));
        child.stderr.on('data', (c: Buffer) => (err += c.toString()));
        child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${err}`))));
      });
    const sealed = await Promise.all(Array.from({ length: 6 }, run));
    const box = secretBox(loadConfig({ PLATFORM_DATA_DIR: dir }));
    for (const s of sealed) expect(box.open(s)).toBe('same');
    expect(readdirSync(dir)).toEqual(['secrets.key']);
  });
});
