/**
 * Multipart bodies (`bodyKind: 'multipart'`): files stream to a per-request temp folder that is gone
 * once the request ends, success or refusal; per-route size and part limits answer 413; multipart is
 * admitted only on such routes, and such routes take nothing else (415). No product route uses it
 * yet, so a test route is mounted on the real app.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createApp } from '../../api/app.js';
import { defineRoute, successEnvelope, type AnyRoute } from '../../api/http/route.js';
import { buildOpenApi } from '../../api/http/openapi.js';
import { allRoutes } from '../../api/routes/index.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let server: Server;
let base: string;
/** Paths the handler saw, to check they are removed after the response. */
const seen: string[] = [];

const uploadRoute = defineRoute({
  method: 'post',
  path: '/test/uploads/:kind',
  operationId: 'testUpload',
  summary: 'Test-only upload',
  tags: ['test'],
  access: { kind: 'authenticated', permission: null },
  params: z.object({ kind: z.string() }),
  bodyKind: 'multipart',
  multipart: { maxFileBytes: 1024, maxFiles: 2, maxFields: 3, fileFields: ['file'] },
  body: z.object({ note: z.string().max(100).optional() }),
  responses: { 200: { description: 'Digests', schema: successEnvelope(z.unknown()) } },
  handler: async ({ body, files }) => {
    const described = [];
    for (const f of files) {
      seen.push(f.path);
      described.push({
        field: f.field,
        filename: f.filename,
        size: f.size,
        sha256: createHash('sha256')
          .update(await readFile(f.path))
          .digest('hex'),
      });
    }
    return { success: true, data: { note: body.note ?? null, files: described } };
  },
});

beforeAll(async () => {
  stack = await startStack({ worker: false });
  const routes: AnyRoute[] = [...allRoutes(), uploadRoute];
  const handle = createApp(stack.api.deps, routes).callback();
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await stack?.close();
});

const form = (parts: Array<[string, string | Blob, string?]>) => {
  const fd = new FormData();
  for (const [name, value, filename] of parts)
    if (typeof value === 'string') fd.append(name, value);
    else fd.append(name, value, filename);
  return fd;
};
const upload = (fd: FormData, path = '/test/uploads/logo') => fetch(base + path, { method: 'POST', body: fd });

describe('multipart bodies', () => {
  it('streams files to a temp folder the handler can read, and removes it when the request ends', async () => {
    seen.length = 0;
    const content = 'a'.repeat(700);
    const res = await upload(
      form([
        ['note', 'hello'],
        ['file', new Blob([content]), 'logo.png'],
      ]),
    );
    const body = (await res.json()) as any;
    expect(res.status).toBe(200);
    expect(body.data).toEqual({
      note: 'hello',
      files: [
        { field: 'file', filename: 'logo.png', size: 700, sha256: createHash('sha256').update(content).digest('hex') },
      ],
    });
    expect(seen).toHaveLength(1);
    expect(existsSync(seen[0]!)).toBe(false);
  });

  it.each([
    ['a file over the size limit', form([['file', new Blob(['x'.repeat(2048)]), 'big.bin']]), 'max_file_bytes'],
    [
      'too many files',
      form([1, 2, 3].map((i) => ['file', new Blob(['x']), `f${i}.txt`] as [string, Blob, string])),
      'max_files',
    ],
    [
      'too many fields',
      form([
        ['a', '1'],
        ['b', '2'],
        ['c', '3'],
        ['d', '4'],
      ]),
      'max_fields',
    ],
  ])('answers 413 for %s, naming the limit, and leaves no file behind', async (_what, fd, limit) => {
    seen.length = 0;
    const res = await upload(fd);
    const body = (await res.json()) as any;
    expect(res.status).toBe(413);
    expect(body.error_type).toBe('payload_too_large');
    expect(body.payload.limit).toBe(limit);
    expect(seen).toEqual([]);
  });

  it('validates the non-file fields like any body', async () => {
    const res = await upload(form([['note', 'n'.repeat(200)]]));
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).payload.fields[0].field).toBe('body.note');
  });

  it('a multipart route takes only multipart; JSON routes refuse multipart (415)', async () => {
    const json = await http(base, 'POST', '/test/uploads/logo', { body: { note: 'x' } });
    expect([json.status, json.body.error_type]).toEqual([415, 'unsupported_media_type']);
    const onJsonRoute = await fetch(`${stack.url}/api/agents`, { method: 'POST', body: form([['name', 'x']]) });
    expect(onJsonRoute.status).toBe(415);
  });

  it('is documented as multipart/form-data with binary file parts', () => {
    const doc = buildOpenApi([uploadRoute], { title: 't', version: '1', description: 'd' }) as any;
    const schema = doc.paths['/test/uploads/{kind}'].post.requestBody.content['multipart/form-data'].schema;
    expect(schema.properties.file).toMatchObject({ type: 'string', format: 'binary' });
    expect(schema.properties.note.type).toBe('string');
  });
});
