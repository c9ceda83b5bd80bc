import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { exportPKCS8, exportSPKI, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { egressFetch, EgressError } from '../../shared/http/egress.js';
import { findProvider, openFields } from '../../shared/llm/provider-store.js';
import { SEALED_TABLES } from '../../shared/secrets/sealed-columns.js';
import { refreshKeyring, sealedKeyId, secretBox, unwrapManagedKey } from '../../shared/secrets/secret-box.js';
import { query } from '../helpers/db.js';
import { startFakeCrm, type FakeCrm } from '../helpers/fake-crm.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';

/**
 * Container-service mode, with the worker in a process of its own: enabling the key re-seals every
 * stored secret as a workflow, a worker SIGKILLed midway loses nothing, the mesh routes and the
 * egress list that restricts outbound requests. The re-seal kills `CHAOS_KILLS` workers in turn, each
 * once the one before it made progress (1 here in `npm test`; `npm run chaos` runs this file with more
 * through tests/chaos/reseal-kills.test.ts).
 */
const SERVICE = 'secrets-service-token';
const ROOT_KEY = 'rotation-secrets-key-of-at-least-32-bytes';
let stack: Stack;
let crm: FakeCrm;
let pem: string;
let dir: string;
let keyFile: string;
const workers: WorkerProcess[] = [];
const KILLS = Number(process.env.CHAOS_KILLS ?? 1);
/** Connections to re-seal: enough batches (of 2) left for every kill to land while the rotation runs. */
const CONNECTIONS = Math.max(12, 6 * KILLS);
const as = { headers: { 'x-platform-service-token': SERVICE } };

function worker(): WorkerProcess {
  const w = spawnWorkerProcess({
    DATABASE_URL: stack.db.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: stack.config.temporal.taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    PLATFORM_SECRETS_KEY: ROOT_KEY,
    PLATFORM_CONTAINER_SERVICE_MODE: 'true',
  });
  workers.push(w);
  return w;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'platform-secrets-'));
  keyFile = path.join(dir, 'mesh-auth.key');
  const keys = await generateKeyPair('RS256', { extractable: true });
  crm = await startFakeCrm(await exportSPKI(keys.publicKey));
  pem = await exportPKCS8(keys.privateKey);
  stack = await startStack({
    worker: false,
    env: {
      PLATFORM_SERVICE_TOKEN: SERVICE,
      AUTH_PROVIDER: 'oidc',
      AUTH_JWKS_URL: 'http://127.0.0.1:9/jwks',
      AUTH_ISSUER: 'https://issuer.invalid',
      AUTH_AUDIENCE: 'platform',
      PLATFORM_SECRETS_KEY: ROOT_KEY,
      PLATFORM_CONTAINER_SERVICE_MODE: 'true',
      PLATFORM_MESH_AUTH_KEY_FILE: keyFile,
      PLATFORM_SECRETS_RESEAL_BATCH_SIZE: '2',
      PLATFORM_SECRETS_RESEAL_PAUSE_MS: '250',
    },
  });
}, 120_000);
afterAll(async () => {
  for (const w of workers) await w.stop();
  await stack?.close();
  await crm?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function createConnection(name: string) {
  const res = await http(stack.url, 'POST', '/api/connections', {
    ...as,
    body: {
      name,
      type: 'crm',
      auth_mode: 'jwt_bearer',
      config: { consumer_key: crm.app.clientId, username: crm.app.jwtUser, private_key: pem, login_host: crm.url },
    },
  });
  expect(res.status, res.text).toBe(201);
}

const status = async () => {
  const res = await http(stack.url, 'GET', '/api/secrets/encryption-key/status', as);
  expect(res.status, res.text).toBe(200);
  return res.body.data;
};

/** Every sealed value of every registered table, opened with a fresh keyring (throws when one does not open). */
async function openEverything(): Promise<Array<{ kid: string | null; plain: string }>> {
  const em = stack.api.deps.orm.em.fork();
  await refreshKeyring(em);
  const box = secretBox(stack.config);
  const out: Array<{ kid: string | null; plain: string }> = [];
  for (const t of SEALED_TABLES) {
    const rows = await query<Record<string, string | null>>(
      stack.db.url,
      `select ${t.columns.join(', ')} from ${t.table}`,
    );
    for (const row of rows)
      for (const c of t.columns) if (row[c]) out.push({ kid: sealedKeyId(row[c]!), plain: box.open(row[c]!) });
  }
  return out;
}

async function until<T>(what: string, probe: () => Promise<T | undefined | null | false>): Promise<T> {
  for (let i = 0; i < 1200; i++) {
    const v = await probe();
    if (v) return v;
    await sleep(100);
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe('mesh egress list', () => {
  it('refuses lists outside the limits and answers the default while none is stored', async () => {
    const get = await http(stack.url, 'GET', '/api/secrets/mesh-auth-key/egress', as);
    expect(get.status).toBe(200);
    expect(get.body.data).toEqual({ entries: ['0.0.0.0:443'], default: true, enforced: true });
    const bad = [
      [],
      ['example.com'],
      ['example.com:0'],
      ['example.com:65536'],
      ['-bad.example.com:443'],
      ['http://example.com:443'],
      Array.from({ length: 257 }, (_, i) => `h${i}.example.com:443`),
    ];
    for (const entries of bad) {
      const res = await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/egress', { ...as, body: { entries } });
      expect(res.status, JSON.stringify(entries).slice(0, 80)).toBe(400);
      expect(res.body.error_type).toBe('bad_request');
    }
    const extra = await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/egress', {
      ...as,
      body: { entries: ['example.com:443'], note: 'x' },
    });
    expect(extra.status).toBe(422);
    expect(await query(stack.db.url, 'select * from mesh_settings')).toEqual([]);
    const max = Array.from({ length: 256 }, (_, i) => `h${i}.example.com:${i + 1}`);
    const ok = await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/egress', { ...as, body: { entries: max } });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.entries).toHaveLength(256);
  });

  it('restricts every outbound request to its destinations in container-service mode', async () => {
    const servers: Server[] = [];
    const listen = async () => {
      const s = createServer((_req, res) => res.end('ok'));
      servers.push(s);
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      return (s.address() as { port: number }).port;
    };
    const [allowed, other] = [await listen(), await listen()];
    try {
      const crmPort = new URL(crm.url).port;
      const put = await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/egress', {
        ...as,
        body: { entries: [`127.0.0.1:${allowed}`, `127.0.0.1:${crmPort}`] },
      });
      expect(put.status, put.text).toBe(200);
      const res = await egressFetch(`http://127.0.0.1:${allowed}/`, { policy: stack.config.egress });
      expect(await res.text()).toBe('ok');
      const refused = await egressFetch(`http://127.0.0.1:${other}/`, { policy: stack.config.egress }).catch((e) => e);
      expect(refused).toBeInstanceOf(EgressError);
      expect(refused.code).toBe('egress_refused');
      expect(refused.sent).toBe(false);
      expect(refused.message).toMatch(/not on the mesh egress list/);
      // A host outside the list is refused even before DNS (the default list admits only port 443).
      const named = await egressFetch(`http://localhost:${allowed}/`, { policy: stack.config.egress }).catch((e) => e);
      expect(named.code).toBe('egress_refused');
    } finally {
      for (const s of servers) s.close();
    }
  });
});

describe('mesh advertise tags', () => {
  it('accepts up to 32 tags within 512 characters and refuses the rest', async () => {
    const cases: Array<[unknown, number]> = [
      [['tag:web', 'tag:db-1'], 200],
      [[], 200],
      [['web'], 400],
      [['tag:-web'], 400],
      [['tag:we b'], 400],
      [Array.from({ length: 33 }, (_, i) => `tag:t${i}`), 400],
      [Array.from({ length: 32 }, (_, i) => `tag:${'a'.repeat(11)}${String(i).padStart(2, '0')}`), 400], // 32 × 17 = 544
    ];
    for (const [tags, code] of cases) {
      const res = await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/advertise-tags', { ...as, body: { tags } });
      expect(res.status, JSON.stringify(tags).slice(0, 60)).toBe(code);
    }
    const long = await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/advertise-tags', {
      ...as,
      body: { tags: Array.from({ length: 32 }, (_, i) => `tag:${'a'.repeat(11)}${String(i).padStart(2, '0')}`) },
    });
    expect(long.body.payload.code).toBe('tags_too_long');
    const at512 = Array.from({ length: 32 }, (_, i) => `tag:${'b'.repeat(10)}${String(i).padStart(2, '0')}`); // 32 × 16
    const ok = await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/advertise-tags', {
      ...as,
      body: { tags: at512 },
    });
    expect(ok.status, ok.text).toBe(200);
    const get = await http(stack.url, 'GET', '/api/secrets/mesh-auth-key/advertise-tags', as);
    expect(get.body.data.tags).toEqual(at512);
  });
});

describe('mesh auth key', () => {
  it('is read from the mounted file, stored sealed, never answered, and dropped on disable', async () => {
    const refused = await http(stack.url, 'POST', '/api/secrets/mesh-auth-key/enable', as);
    expect(refused.status).toBe(400);
    expect(refused.body.payload.code).toBe('mesh_auth_key_not_mounted');
    const key = 'mesh-authkey-abcdefghijklmnop-0123456789';
    await writeFile(keyFile, key + '\n', { mode: 0o600 });
    for (const p of ['status', 'setup', 'disable-template']) {
      const res = await http(stack.url, 'GET', `/api/secrets/mesh-auth-key/${p}`, as);
      expect(res.status, p).toBe(200);
      expect(res.text).not.toContain(key);
    }
    const enabled = await http(stack.url, 'POST', '/api/secrets/mesh-auth-key/enable', as);
    expect(enabled.status, enabled.text).toBe(200);
    expect(enabled.body.data).toMatchObject({ enabled: true, auth_key_stored: true, auth_key_mounted: true });
    expect(enabled.text).not.toContain(key);
    const [row] = await query<{ auth_key_sealed: string }>(stack.db.url, 'select auth_key_sealed from mesh_settings');
    expect(row!.auth_key_sealed).not.toContain(key);
    expect(secretBox(stack.config).open(row!.auth_key_sealed)).toBe(key);
    const verify = await http(stack.url, 'GET', '/api/secrets/mesh-auth-key/verify-setup', as);
    expect(verify.status).toBe(200);
    expect(verify.body.data.ok).toBe(true);
    expect(verify.text).not.toContain(key);
    const off = await http(stack.url, 'POST', '/api/secrets/mesh-auth-key/disable', as);
    expect(off.body.data).toMatchObject({ enabled: false, auth_key_stored: false });
    expect((await http(stack.url, 'GET', '/api/secrets/mesh-auth-key/verify-setup', as)).body.data.ok).toBe(false);
    // Enabled again, so the rotation below re-seals it too.
    expect((await http(stack.url, 'POST', '/api/secrets/mesh-auth-key/enable', as)).status).toBe(200);
  });
});

describe('encryption key enable and rotation', () => {
  it(
    're-seals every secret under the new key as a workflow, resuming after the worker is SIGKILLed midway',
    async () => {
      for (let i = 0; i < CONNECTIONS; i++) await createConnection(`crm_${String(i).padStart(2, '0')}`);
      // A saved secret setting and a language-model provider's credentials are sealed values too.
      const setting = await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
        ...as,
        body: { content: JSON.stringify({ etl: { cloud_token: 'etl-cloud-token-1' } }) },
      });
      expect(setting.body.success, setting.text).toBe(true);
      const provider = await http(stack.url, 'POST', '/api/config/llm-providers/other', {
        ...as,
        body: { sub_provider: 'acme', base_url: 'https://llm.example.com/v1', api_key: 'llm-key-1', model_name: 'm' },
      });
      expect(provider.body.success, provider.text).toBe(true);
      const before = await openEverything();
      expect(before.length).toBeGreaterThanOrEqual(15);
      expect(before.map((v) => v.plain)).toEqual(
        expect.arrayContaining(['"etl-cloud-token-1"', JSON.stringify({ api_key: 'llm-key-1' })]),
      );
      expect(new Set(before.map((v) => v.kid))).toEqual(new Set(['root']));
      expect((await status()).status).toBe('missing');

      let current = worker();
      await current.ready;
      const enable = await http(stack.url, 'POST', '/api/secrets/encryption-key/enable', as);
      expect(enable.status, enable.text).toBe(202);
      expect(enable.body.data.started).toBe(true);
      const rotationId = enable.body.data.rotation.rotation_id as string;
      // A repeated enable answers the unfinished rotation instead of starting another.
      const again = await http(stack.url, 'POST', '/api/secrets/encryption-key/enable', as);
      expect(again.status).toBe(202);
      expect(again.body.data).toMatchObject({ started: false, rotation: { rotation_id: rotationId } });

      // Midway: some values re-sealed, the rotation still running. Then the worker dies on the spot; the
      // next kill waits for the new worker's progress.
      let target = '';
      let resealedAtKill = 1;
      for (let k = 0; k < KILLS; k++) {
        const mid = await until('progress', async () => {
          const s = await status();
          return s.rotation.resealed > resealedAtKill && s.rotation.status === 'running' ? s : null;
        });
        expect((await current.kill()).signal).toBe('SIGKILL');
        resealedAtKill = mid.rotation.resealed;
        expect(mid.status).toBe('configured');
        expect(mid.rotation.remaining).toBeGreaterThan(0);
        target ||= mid.active_key.key_id as string;
        expect(mid.active_key.key_id).toBe(target);
        expect(target).toBe(mid.rotation.target_key_id);
        // Meanwhile every secret still opens (old values under the root key, new ones under the target).
        const during = await openEverything();
        expect(during.map((v) => v.plain).sort()).toEqual(before.map((v) => v.plain).sort());
        current = worker();
        await current.ready;
      }
      const done = await until('completion', async () => {
        const s = await status();
        return s.rotation.status === 'completed' || s.rotation.status === 'failed' ? s : null;
      });
      expect(done.rotation).toMatchObject({ status: 'completed', remaining: null, error: null });
      expect(done.status).toBe('configured');
      expect(done.active_key.key_id).toBe(target);
      const after = await openEverything();
      expect(after.map((v) => v.plain).sort()).toEqual(before.map((v) => v.plain).sort());
      expect(new Set(after.map((v) => v.kid))).toEqual(new Set([target]));
      expect(done.values_by_key).toEqual({ [target]: after.length });
      // The connections still load through the API (their secrets open under the new key).
      const conn = await http(stack.url, 'PATCH', '/api/connections/crm_00', { ...as, body: { config: {} } });
      expect(conn.status, conn.text).toBe(200);
      const verify = await http(stack.url, 'GET', '/api/secrets/encryption-key/verify-setup', as);
      expect(verify.status).toBe(200);
      expect(verify.body.data.ok, verify.text).toBe(true);
      process.stderr.write(`[chaos] secret re-seal: ${after.length} values, ${KILLS} kill(s) while it ran\n`);
    },
    180_000 + KILLS * 60_000,
  );

  it('rotates again: the old managed key is retired only after every value moved, and writes under it are refused', async () => {
    const old = (await status()).active_key.key_id as string;
    const enable = await http(stack.url, 'POST', '/api/secrets/encryption-key/enable', as);
    expect(enable.status).toBe(202);
    const done = await until('completion', async () => {
      const s = await status();
      return s.rotation.rotation_id === enable.body.data.rotation.rotation_id && s.rotation.status === 'completed'
        ? s
        : null;
    });
    const target = done.active_key.key_id as string;
    expect(target).not.toBe(old);
    expect(done.rotation.retired_key_ids).toEqual([old]);
    const keys = await query<{ kid: string; status: string; wrapped: string | null }>(
      stack.db.url,
      'select kid, status, wrapped from secret_keys where kid = $1',
      [old],
    );
    expect(keys).toEqual([{ kid: old, status: 'retired', wrapped: null }]);
    const after = await openEverything();
    expect(new Set(after.map((v) => v.kid))).toEqual(new Set([target]));
    // What the API process cached before the rotations still reads, and so do fresh reads.
    expect(await stack.api.deps.settings.get('etl.cloud_token')).toBe('etl-cloud-token-1');
    const em = stack.api.deps.orm.em.fork();
    const stored = await findProvider(em, stack.config.auth.deploymentTenant, 'other', 'acme');
    expect(openFields(stored!, secretBox(stack.config)).api_key).toBe('llm-key-1');
    // A writer holding an old keyring cannot leave a value under the retired key: the trigger refuses it.
    const stale = `v2.${old}.AAAA.AAAA.AAAA`;
    await expect(query(stack.db.url, `update crm_connections set tokens_sealed = $1`, [stale])).rejects.toThrow(
      /retired or unknown/,
    );
  });

  it('keeps the trigger on every table that holds sealed values', async () => {
    const triggers = await query<{ table: string; args: string }>(
      stack.db.url,
      `select c.relname as table, encode(t.tgargs, 'escape') as args from pg_trigger t
         join pg_class c on c.oid = t.tgrelid join pg_proc p on p.oid = t.tgfoid
        where p.proname = 'refuse_retired_secret_key'`,
    );
    for (const t of SEALED_TABLES) {
      const trig = triggers.find((x) => x.table === t.table);
      expect(trig, t.table).toBeDefined();
      expect(trig!.args.split('\\000').filter(Boolean).sort()).toEqual([...t.columns].sort());
    }
  });
});

const source = async (path: string) => {
  const res = await http(stack.url, 'GET', `/api/config/setup/sources?path=${path}`, as);
  expect(res.status, res.text).toBe(200);
  return res.body.data;
};

describe('Authentication 8: connection credentials are secrets; no secret value crosses the key routes', () => {
  it('stores every connection credential sealed and answers none of them, nor any key, on the key routes', async () => {
    await createConnection('crm_auth8');
    const pemBody = pem.split('\n').find((l) => l.length > 40 && !l.startsWith('-----'))!;
    const meshKey = 'mesh-authkey-auth8-0123456789abcdef';
    await writeFile(keyFile, meshKey + '\n', { mode: 0o600 });
    expect((await http(stack.url, 'POST', '/api/secrets/mesh-auth-key/enable', as)).status).toBe(200);

    // At rest: the credential is only in the sealed column, which is not plaintext.
    const rows = await query<Record<string, unknown>>(stack.db.url, `select * from crm_connections where name = $1`, [
      'crm_auth8',
    ]);
    expect(rows).toHaveLength(1);
    const rowText = JSON.stringify(rows[0]);
    expect(rowText).not.toContain(pemBody);
    expect(rowText).not.toContain('PRIVATE KEY');
    const sealedColumns = SEALED_TABLES.find((t) => t.table === 'crm_connections')!.columns;
    const sealed = sealedColumns.map((c) => rows[0]![c]).filter((v): v is string => typeof v === 'string');
    expect(sealed.length).toBeGreaterThan(0);
    for (const v of sealed) expect(v).toMatch(/^v[12]\./);

    // Every value a leak could be: the root key, the mesh key, the connection key, each managed key's material.
    const em = stack.api.deps.orm.em.fork();
    await refreshKeyring(em);
    const managed = await query<{ kid: string; wrapped: string | null }>(
      stack.db.url,
      `select kid, wrapped from secret_keys where wrapped is not null`,
    );
    const forbidden = [ROOT_KEY, meshKey, pemBody];
    for (const k of managed) {
      const material = unwrapManagedKey(stack.config, k);
      forbidden.push(material.toString('base64'), material.toString('base64url'), material.toString('hex'));
    }
    const routes: Array<[string, string]> = [
      ['GET', '/api/secrets/encryption-key/status'],
      ['GET', '/api/secrets/encryption-key/verify-setup'],
      ['GET', '/api/secrets/mesh-auth-key/status'],
      ['GET', '/api/secrets/mesh-auth-key/setup'],
      ['GET', '/api/secrets/mesh-auth-key/verify-setup'],
      ['GET', '/api/secrets/mesh-auth-key/disable-template'],
      ['GET', '/api/secrets/mesh-auth-key/egress'],
      ['GET', '/api/secrets/mesh-auth-key/advertise-tags'],
      ['POST', '/api/secrets/mesh-auth-key/enable'],
      ['POST', '/api/secrets/mesh-auth-key/disable'],
    ];
    for (const [method, path] of routes) {
      const res = await http(stack.url, method, path, as);
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(200);
      for (const secret of forbidden) expect(res.text, `${method} ${path}`).not.toContain(secret);
    }
    // The connection's own read masks the credential too.
    const read = await http(stack.url, 'GET', '/api/connections/crm_auth8', as);
    expect(read.status, read.text).toBe(200);
    expect(read.text).not.toContain(pemBody);
  });

  it('enforces the egress list saved through the configuration apply (one setting, mesh.egress)', async () => {
    const crmPort = new URL(crm.url).port;
    const server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const refusedFirst = await egressFetch(`http://127.0.0.1:${port}/`, { policy: stack.config.egress }).catch(
        (e) => e,
      );
      expect(refusedFirst.code).toBe('egress_refused');
      const applied = await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
        ...as,
        body: { content: JSON.stringify({ mesh: { egress: [`127.0.0.1:${port}`, `127.0.0.1:${crmPort}`] } }) },
      });
      expect(applied.status, applied.text).toBe(200);
      expect(applied.body.success, applied.text).toBe(true);
      const get = await http(stack.url, 'GET', '/api/secrets/mesh-auth-key/egress', as);
      expect(get.body.data).toEqual({
        entries: [`127.0.0.1:${port}`, `127.0.0.1:${crmPort}`],
        default: false,
        enforced: true,
      });
      const res = await egressFetch(`http://127.0.0.1:${port}/`, { policy: stack.config.egress });
      expect(await res.text()).toBe('ok');
      // Limits hold on the apply path too: nothing is written.
      for (const bad of [[], ['example.com:0'], Array.from({ length: 257 }, (_, i) => `h${i}.example.com:443`)]) {
        const refused = await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
          ...as,
          body: { content: JSON.stringify({ 'mesh.egress': bad }) },
        });
        expect([refused.status, refused.body.error_type]).toEqual([400, 'bad_request']);
      }
      const tags = await http(stack.url, 'POST', '/api/config/setup/apply-partial', {
        ...as,
        body: { content: JSON.stringify({ 'mesh.advertise_tags': Array.from({ length: 33 }, (_, i) => `tag:t${i}`) }) },
      });
      expect([tags.status, tags.body.payload.refused[0].reason]).toEqual([400, 'invalid_value']);
      expect((await http(stack.url, 'GET', '/api/secrets/mesh-auth-key/egress', as)).body.data.entries).toEqual([
        `127.0.0.1:${port}`,
        `127.0.0.1:${crmPort}`,
      ]);
      // The spec's body form is the list itself; the wrapped form refuses undeclared fields with 422.
      const bare = await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/egress', {
        ...as,
        body: [`127.0.0.1:${crmPort}`, `127.0.0.1:${port}`],
      });
      expect(bare.status, bare.text).toBe(200);
      expect(bare.body.data.entries).toEqual([`127.0.0.1:${crmPort}`, `127.0.0.1:${port}`]);
      expect((await source('mesh.egress')).effective_value).toEqual([`127.0.0.1:${crmPort}`, `127.0.0.1:${port}`]);
      const extra = await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/egress', {
        ...as,
        body: { entries: [`127.0.0.1:${port}`], note: 'x' },
      });
      expect(extra.status).toBe(422);
      expect(extra.body.payload.fields).toEqual(['body.note']);
      const bareTags = await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/advertise-tags', {
        ...as,
        body: ['tag:edge'],
      });
      expect(bareTags.status, bareTags.text).toBe(200);
      expect((await source('mesh.advertise_tags')).effective_value).toEqual(['tag:edge']);
      expect(
        (await http(stack.url, 'PUT', '/api/secrets/mesh-auth-key/advertise-tags', { ...as, body: ['web'] })).status,
      ).toBe(400);
    } finally {
      server.close();
    }
  });
});
