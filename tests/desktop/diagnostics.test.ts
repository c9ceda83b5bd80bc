import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setDesktopClock } from '../../shared/desktop/clock.js';
import { desktopDiagnosticsSchedule } from '../../shared/desktop/diagnostics-schedule.js';
import { ensureIntervalSchedule } from '../../shared/temporal/interval-schedule.js';
import { workflowRef } from '../../shared/temporal/workflow-refs.js';
import { query } from '../helpers/db.js';
import { startFakeProvisioner, type FakeProvisioner } from '../helpers/fake-provisioner.js';
import { recordHistory } from '../helpers/histories.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let prov: FakeProvisioner;
let stack: Stack;
let logs: string;
let now = Date.parse('2026-11-25T12:00:00Z');
const A = Buffer.alloc(1_000_000, 'a');
const B = Buffer.alloc(5_500_000, 'b');
/** What a preview collects from the two files: each under its header, by name. */
const collected = () => Buffer.concat([Buffer.from('==> a.log <==\n'), A, Buffer.from('==> b.log <==\n'), B]);

beforeAll(async () => {
  setDesktopClock(() => now);
  logs = await mkdtemp(path.join(os.tmpdir(), 'desktop-logs-'));
  await writeFile(path.join(logs, 'a.log'), A);
  await writeFile(path.join(logs, 'b.log'), B);
  prov = await startFakeProvisioner();
  stack = await startStack({
    env: {
      PLATFORM_DESKTOP_MODE: 'true',
      PLATFORM_DESKTOP_PROVISIONER_URL: prov.baseUrl,
      PLATFORM_DESKTOP_PROVISIONER_CLIENT_ID: prov.clientId,
      PLATFORM_DESKTOP_PROVISIONER_CLIENT_SECRET: prov.clientSecret,
      PLATFORM_DESKTOP_DIAGNOSTICS_DIR: logs,
      PLATFORM_DESKTOP_DIAGNOSTICS_AUTO: 'true',
    },
  });
});
afterAll(async () => {
  setDesktopClock(undefined);
  await stack?.close();
  await prov?.close();
  if (logs) await rm(logs, { recursive: true, force: true });
});

const post = (p: string, body?: unknown) => http(stack.url, 'POST', p, { body });
const preview = async () => {
  const res = await post('/api/desktop/diagnostics/preview');
  expect(res.status).toBe(200);
  return res.body.data.preview_id as string;
};
const send = (preview_id: string) => post('/api/desktop/diagnostics/send', { preview_id });
const lastUpload = () => [...prov.uploads.values()].at(-1)!;

describe('diagnostics preview and send', () => {
  it('previews the log files; send is refused 409 before activation', async () => {
    const res = await post('/api/desktop/diagnostics/preview');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      trigger: 'manual',
      total_bytes: collected().length,
      files: [
        { name: 'a.log', bytes: 1_000_000 },
        { name: 'b.log', bytes: 5_500_000 },
      ],
    });
    expect(res.body.data.excerpt).toBe('b'.repeat(4000));
    const refused = await send(res.body.data.preview_id);
    expect(refused.status).toBe(409);
    expect(refused.body.payload).toEqual({ code: 'not_activated' });
    expect(prov.uploads.size).toBe(0);
  });

  it('sends at most 4 chunks of 1,500,000 bytes (the newest), then the preview is spent (404)', async () => {
    const login = await http(stack.url, 'GET', '/api/desktop/auth/login');
    const cb = await http(
      stack.url,
      'GET',
      `/api/desktop/auth/callback?state=${encodeURIComponent(login.body.data.state)}&code=c1`,
    );
    expect(cb.body.data.status).toBe('succeeded');
    expect((await post('/api/desktop/activate', { app_version: '1.0.0' })).status).toBe(200);

    expect((await send(randomUUID())).status).toBe(404);
    const id = await preview();
    const res = await send(id);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      preview_id: id,
      gzip: false,
      chunks_sent: 4,
      bytes_sent: 6_000_000,
      chunk_bytes: 1_500_000,
      truncated: true,
    });
    const up = lastUpload();
    expect(up.trigger).toBe('manual');
    expect(up.chunks.map((c) => c.length)).toEqual([1_500_000, 1_500_000, 1_500_000, 1_500_000]);
    const all = collected();
    expect(Buffer.concat(up.chunks).equals(all.subarray(all.length - 6_000_000))).toBe(true);
    expect(up.completed).toEqual({ chunks: 4, bytes: 6_000_000 });
    const again = await send(id);
    expect(again.status).toBe(404);
  });

  it('halves the chunk on 413 (1,500,000 → 750,000 → 375,000)', async () => {
    prov.maxChunkBytes = 400_000;
    const res = await send(await preview());
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ chunks_sent: 4, bytes_sent: 1_500_000, chunk_bytes: 375_000 });
    expect(lastUpload().attempts).toEqual([1_500_000, 750_000, 375_000, 375_000, 375_000, 375_000]);
    prov.maxChunkBytes = undefined;
  });

  it('stops halving at 64,000 bytes (503) and keeps the preview sendable', async () => {
    prov.maxChunkBytes = 10_000;
    const id = await preview();
    const res = await send(id);
    expect(res.status).toBe(503);
    expect(res.body.payload).toEqual({ dependency: 'desktop_provisioner' });
    expect(lastUpload().attempts).toEqual([1_500_000, 750_000, 375_000, 187_500, 93_750, 64_000]);
    prov.maxChunkBytes = undefined;
    const retry = await send(id);
    expect(retry.status).toBe(200);
  });

  it('uses 4,000,000-byte gzip chunks when the provisioner advertises gzip', async () => {
    prov.diagnosticsGzip = true;
    const res = await send(await preview());
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ gzip: true, chunks_sent: 2, chunk_bytes: 4_000_000, truncated: false });
    expect(Buffer.concat(lastUpload().chunks).equals(collected())).toBe(true);
    prov.diagnosticsGzip = false;
  });

  it('refuses an expired preview (404) and answers 503 on a provisioner refusal', async () => {
    const old = await preview();
    now += 16 * 60_000;
    expect((await send(old)).status).toBe(404);
    prov.refuseDiagnostics = true;
    const refused = await send(await preview());
    expect(refused.status).toBe(503);
    expect(refused.body.error_type).toBe('service_unavailable');
    prov.refuseDiagnostics = false;
  });
});

describe('automatic diagnostics', () => {
  it('declares an hourly Schedule (ensured idempotently)', async () => {
    const client = stack.api.deps.temporal;
    const scheduleId = `desktop-diagnostics-test-${randomUUID()}`;
    expect(await ensureIntervalSchedule(client, stack.config, desktopDiagnosticsSchedule(scheduleId))).toBe('created');
    expect(await ensureIntervalSchedule(client, stack.config, desktopDiagnosticsSchedule(scheduleId))).toBe('updated');
    const described = await client.schedule.getHandle(scheduleId).describe();
    expect(described.spec.intervals?.[0]?.every).toBe(3_600_000);
    expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'desktopDiagnosticsWorkflow' });
    await client.schedule.getHandle(scheduleId).delete();
  });

  it('makes at most one attempt an hour and sends only changed logs', async () => {
    const client = stack.api.deps.temporal;
    const run = (workflowId = `desktop-diagnostics-test-${randomUUID()}`) =>
      client.workflow.execute(workflowRef('desktopDiagnosticsWorkflow'), {
        taskQueue: stack.config.temporal.taskQueue,
        workflowId,
        args: [],
      });
    const first = `desktop-diagnostics-test-${randomUUID()}`;
    const uploads = prov.uploads.size;
    const sent = await run(first);
    expect(sent).toMatchObject({ outcome: 'sent', result: { chunks_sent: 4, gzip: false } });
    await recordHistory('desktop-diagnostics-auto-sent', client.workflow.getHandle(first));
    expect(prov.uploads.size).toBe(uploads + 1);
    expect(lastUpload().trigger).toBe('automatic');
    expect(await run()).toEqual({ outcome: 'too_soon' });
    now += 3_599_000;
    expect(await run()).toEqual({ outcome: 'too_soon' });
    now += 2_000;
    expect(await run()).toEqual({ outcome: 'unchanged' });
    await writeFile(path.join(logs, 'c.log'), 'new line\n');
    expect(await run()).toEqual({ outcome: 'too_soon' });
    now += 3_601_000;
    expect(await run()).toMatchObject({ outcome: 'sent' });
    expect(prov.uploads.size).toBe(uploads + 2);
    const [row] = await query<{ n: string }>(
      stack.db.url,
      "select count(*) as n from desktop_diagnostics_previews where trigger = 'automatic' and result is not null",
    );
    expect(Number(row!.n)).toBe(2);
  });
});
