import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startApi, type RunningApi } from '../../api/server.js';
import { startEmbeddedPostgres, type RunningPostgres } from '../../scripts/lib/embedded-postgres.js';
import { freePort } from '../../scripts/lib/net.js';
import { loadConfig } from '../../shared/config.js';
import { initOrm, migrate } from '../../shared/db/orm.js';
import { createLogger } from '../../shared/log.js';
import { createTestDatabase } from '../helpers/db.js';
import { http } from '../helpers/stack.js';

const quiet = createLogger({ level: 'error', sink: () => {} });
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function expectGeneric503(res: { status: number; body: any }, dependency: string) {
  expect(res.status).toBe(503);
  expect(res.body.error_type).toBe('service_unavailable');
  expect(res.body.payload.dependency).toBe(dependency);
  // No driver text reaches the caller.
  expect(res.body.error).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|connect|knex|pg|grpc|14 UNAVAILABLE/i);
}

describe('PostgreSQL goes away while the API runs', () => {
  let pg: RunningPostgres;
  let api: RunningApi;

  it('answers 503 while it is down and recovers by itself when it returns', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'platform-resilience-'));
    await chmod(dir, 0o755);
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    pg = await startEmbeddedPostgres({
      dataDir: path.join(dir, 'pg'),
      port: await freePort(),
      database: 'platform',
      persistent: true,
    });
    cleanups.push(() => pg.stop());
    const orm = await initOrm({ clientUrl: pg.url, poolMax: 1 });
    await migrate(orm);
    await orm.close();

    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: pg.url,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      AUTH_PROVIDER: 'none',
    });
    api = await startApi(config, quiet);
    cleanups.push(() => api.close());

    expect((await http(api.url, 'GET', '/readyz')).status).toBe(200);
    expect((await http(api.url, 'GET', '/api/jobs/echo/missing')).status).toBe(404);

    await pg.stop();

    const ready = await http(api.url, 'GET', '/readyz');
    expectGeneric503(ready, 'database');
    expect(ready.body.payload).toMatchObject({
      failed: ['database'],
      checks: { database: 'unavailable', temporal: 'ok' },
    });
    expectGeneric503(await http(api.url, 'GET', '/api/jobs/echo/missing'), 'database');
    expectGeneric503(await http(api.url, 'POST', '/api/auth/pats', { body: { name: 'while-down' } }), 'database');
    expect((await http(api.url, 'GET', '/healthz')).status).toBe(200);

    await pg.start();
    let status = 0;
    for (let i = 0; i < 60 && status !== 200; i++) {
      status = (await http(api.url, 'GET', '/readyz')).status;
      if (status !== 200) await sleep(500);
    }
    expect(status).toBe(200);
    expect((await http(api.url, 'GET', '/api/jobs/echo/missing')).status).toBe(404);
    const minted = await http(api.url, 'POST', '/api/auth/pats', { body: { name: 'after-recovery' } });
    expect(minted.status).toBe(201);
  });
});

describe('Temporal is unreachable', () => {
  it('reports it in readiness and answers 503 on workflow routes, writing nothing', async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    const closedPort = await freePort();
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: `127.0.0.1:${closedPort}`,
      AUTH_PROVIDER: 'none',
    });
    const api = await startApi(config, quiet);
    cleanups.push(() => api.close());

    const ready = await http(api.url, 'GET', '/readyz');
    expectGeneric503(ready, 'temporal');
    expect(ready.body.payload.checks).toEqual({ database: 'ok', temporal: 'unavailable' });

    const echo = await http(api.url, 'POST', '/api/jobs/echo', { body: { message: 'x', job_id: 'temporal-down' } });
    expectGeneric503(echo, 'temporal');
  });
});
