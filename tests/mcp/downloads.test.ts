import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signDownload, storeDownload } from '../../shared/downloads/signed-urls.js';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
const KEY = 'test-signing-key-with-enough-entropy-0123456789';

beforeAll(async () => {
  stack = await startStack({ worker: false, env: { PLATFORM_SIGNING_KEY: KEY } });
});
afterAll(async () => {
  await stack?.close();
});

const store = (tenant = 'default', name = 'report ü.csv') =>
  storeDownload(stack.api.deps.orm.em.fork(), {
    tenant,
    name,
    contentType: 'text/csv',
    bytes: Buffer.from('a,b\n1,2\n'),
  });
const path = (url: string) => new URL(url).pathname;

describe('signed download URLs', () => {
  it('serve the file once; the second use answers 410 gone', async () => {
    const file = await store();
    const url = await signDownload(stack.config, {
      fileId: file.id,
      tenant: 'default',
      ttlSeconds: 60,
      publicOrigin: stack.url,
    });
    expect(url.startsWith(`${stack.url}/api/downloads/`)).toBe(true);
    const first = await http(stack.url, 'GET', path(url));
    expect(first.status).toBe(200);
    expect(first.text).toBe('a,b\n1,2\n');
    expect(first.headers.get('content-type')).toContain('text/csv');
    expect(first.headers.get('content-disposition')).toBe(
      `attachment; filename="report _.csv"; filename*=UTF-8''report%20%C3%BC.csv`,
    );
    expect(first.headers.get('cache-control')).toBe('no-store');
    const second = await http(stack.url, 'GET', path(url));
    expect(second.status).toBe(410);
    expect(second.body).toMatchObject({ error_type: 'gone', payload: { reason: 'used' } });
  });

  it('two links to the same file are independent', async () => {
    const file = await store();
    const a = await signDownload(stack.config, { fileId: file.id, tenant: 'default', ttlSeconds: 60 });
    const b = await signDownload(stack.config, { fileId: file.id, tenant: 'default', ttlSeconds: 60 });
    expect((await http(stack.url, 'GET', path(a))).status).toBe(200);
    expect((await http(stack.url, 'GET', path(b))).status).toBe(200);
  });

  it('an expired link answers 410 gone', async () => {
    const file = await store();
    const url = await signDownload(stack.config, {
      fileId: file.id,
      tenant: 'default',
      ttlSeconds: 30,
      now: new Date(Date.now() - 60_000),
    });
    const res = await http(stack.url, 'GET', path(url));
    expect(res.status).toBe(410);
    expect(res.body.payload.reason).toBe('expired');
  });

  it.each([
    [
      'signed with another key',
      async (fileId: string) =>
        new SignJWT({ tenant: 'default' })
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject(fileId)
          .setAudience('platform-download')
          .setJti(crypto.randomUUID())
          .setExpirationTime('1m')
          .sign(new TextEncoder().encode('wrong-key')),
    ],
    [
      'unsigned (alg none)',
      async (fileId: string) =>
        `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: fileId, tenant: 'default', aud: 'platform-download', jti: crypto.randomUUID(), exp: Math.floor(Date.now() / 1000) + 60 })).toString('base64url')}.`,
    ],
    ['garbage', async () => 'not-a-token'],
    [
      'for another tenant',
      async (fileId: string) =>
        new URL(await signDownload(stack.config, { fileId, tenant: 'other', ttlSeconds: 60 })).pathname
          .split('/')
          .pop()!,
    ],
  ])('a link %s answers 404', async (_name, forge) => {
    const file = await store();
    const res = await http(stack.url, 'GET', `/api/downloads/${await forge(file.id)}`);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error_type: 'not_found', payload: { reason: 'invalid_link' } });
  });

  it('refuses TTLs outside 1 second to 1 day', async () => {
    await expect(signDownload(stack.config, { fileId: 'x', tenant: 'default', ttlSeconds: 0 })).rejects.toThrow(
      RangeError,
    );
    await expect(signDownload(stack.config, { fileId: 'x', tenant: 'default', ttlSeconds: 86_401 })).rejects.toThrow(
      RangeError,
    );
  });

  it('removes stored files past their retention when new ones arrive', async () => {
    const old = await store('default', 'old.csv');
    await query(stack.db.url, `update downloads set created_at = now() - interval '8 days' where id = $1`, [old.id]);
    const fresh = await store('default', 'fresh.csv');
    const left = await query<{ id: string }>(stack.db.url, 'select id from downloads where id = any($1::uuid[])', [
      [old.id, fresh.id],
    ]);
    expect(left.map((r) => r.id)).toEqual([fresh.id]);
  });
});
