import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../../api/routes/index.js';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
const logLines: string[] = [];

beforeAll(async () => {
  stack = await startStack({
    env: { MAX_JSON_BODY_BYTES: '2048', PLATFORM_INTERNAL_TOKEN: 'internal-secret' },
    logLines,
  });
});
afterAll(async () => {
  await stack?.close();
});

function expectEnvelope(body: Record<string, unknown>, status: number, errorType: string, headers: Headers) {
  expect(typeof body.error).toBe('string');
  expect(body.error_type).toBe(errorType);
  expect(body.request_id).toBe(headers.get('x-request-id'));
  expect(status).toBeGreaterThanOrEqual(400);
}

describe('request ids and logs', () => {
  it('puts an X-Request-Id on every response and logs it with the request', async () => {
    const res = await http(stack.url, 'GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok' });
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(/^req_[0-9a-f]{32}$/);
    const line = logLines.map((l) => JSON.parse(l)).find((l) => l.request_id === id);
    expect(line).toMatchObject({ msg: 'request', method: 'GET', path: '/healthz', status: 200, level: 'info' });
  });

  it('keeps a sane inbound request id and replaces an unsafe one', async () => {
    const kept = await http(stack.url, 'GET', '/nope', { headers: { 'x-request-id': 'client-trace-0001' } });
    expect(kept.headers.get('x-request-id')).toBe('client-trace-0001');
    expect(kept.body.request_id).toBe('client-trace-0001');
    const replaced = await http(stack.url, 'GET', '/healthz', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(replaced.headers.get('x-request-id')).toMatch(/^req_/);
  });
});

describe('error envelope', () => {
  it('answers 404 not_found on unknown routes', async () => {
    const res = await http(stack.url, 'GET', '/api/does-not-exist');
    expect(res.status).toBe(404);
    expectEnvelope(res.body, res.status, 'not_found', res.headers);
  });

  it('answers 405 for a known path with the wrong method', async () => {
    const res = await http(stack.url, 'DELETE', '/healthz');
    expect(res.status).toBe(405);
    expectEnvelope(res.body, res.status, 'method_not_allowed', res.headers);
  });

  it('redirects a path asked without the trailing slash its route has (307, query kept); others stay 404', async () => {
    const res = await fetch(`${stack.url}/api/blueprints?q=x`, { redirect: 'manual' });
    expect(res.status).toBe(307);
    expect(res.headers.get('location')).toBe('/api/blueprints/?q=x');
    // Followed, it reaches the route itself: the same answer as the path with its slash.
    const followed = await http(stack.url, 'GET', '/api/blueprints');
    const direct = await http(stack.url, 'GET', '/api/blueprints/');
    expect(followed.status).toBe(direct.status);
    expect(followed.body).toEqual(direct.body);
    const other = await fetch(`${stack.url}/api/blueprintz`, { redirect: 'manual' });
    expect(other.status).toBe(404);
    const wrongMethod = await fetch(`${stack.url}/api/blueprints`, { method: 'DELETE', redirect: 'manual' });
    expect(wrongMethod.status).toBe(404);
    // Never a Location another host could be read from.
    const doubled = await fetch(`${stack.url}//api/blueprints`, { redirect: 'manual' });
    expect(doubled.status).toBe(404);
  });

  it('answers 400 bad_request for malformed JSON and writes nothing', async () => {
    const res = await http(stack.url, 'POST', '/api/jobs/echo', {
      raw: '{"message": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expectEnvelope(res.body, res.status, 'bad_request', res.headers);
    expect(res.body.payload).toEqual({ reason: 'malformed_json' });
    expect(await query(stack.db.url, 'select * from echo_jobs')).toHaveLength(0);
  });

  it('accepts a body carrying prototype keys, dropping them (regression: `__proto__` was refused as malformed JSON)', async () => {
    const res = await http(stack.url, 'POST', '/api/jobs/echo', {
      raw: '{"message":"proto","__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const rows = await query(stack.db.url, "select message from echo_jobs where message = 'proto'");
    expect(rows).toHaveLength(1);
    // Later tests in this file count echo_jobs rows.
    await query(stack.db.url, "delete from echo_jobs where message = 'proto'");
  });

  it('answers 400 with the failing fields from zod validation', async () => {
    const res = await http(stack.url, 'POST', '/api/jobs/echo', { body: { message: 42, job_id: 'bad id!' } });
    expect(res.status).toBe(400);
    expectEnvelope(res.body, res.status, 'bad_request', res.headers);
    const fields = (res.body.payload.fields as Array<{ field: string }>).map((f) => f.field).sort();
    expect(fields).toEqual(['body.job_id', 'body.message']);
    expect(await query(stack.db.url, 'select * from echo_jobs')).toHaveLength(0);
  });

  it('validates path parameters too', async () => {
    const res = await http(stack.url, 'GET', '/api/jobs/echo/' + 'x'.repeat(80));
    expect(res.status).toBe(400);
    expect(res.body.payload.fields[0].field).toBe('params.job_id');
  });

  it('answers 413 payload_too_large for a body over the configured limit', async () => {
    const res = await http(stack.url, 'POST', '/api/jobs/echo', { body: { message: 'x'.repeat(5000) } });
    expect(res.status).toBe(413);
    expectEnvelope(res.body, res.status, 'payload_too_large', res.headers);
    expect(res.body.payload).toEqual({ limit_bytes: 2048 });
  });

  it('answers 415 for a body that is not JSON', async () => {
    const res = await http(stack.url, 'POST', '/api/jobs/echo', {
      raw: 'message=hi',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expectEnvelope(res.body, res.status, 'unsupported_media_type', res.headers);
  });

  it('answers 422 for undeclared fields in a configuration body and writes nothing', async () => {
    const res = await http(stack.url, 'PUT', '/api/internal/demo-budget/cap', {
      body: { cap_usd: 10, surprise: true },
      headers: { 'x-platform-internal-token': 'internal-secret' },
    });
    expect(res.status).toBe(422);
    expectEnvelope(res.body, res.status, 'unprocessable_entity', res.headers);
    expect(res.body.payload).toEqual({ fields: ['body.surprise'] });
    expect(await query(stack.db.url, 'select * from deployment_settings')).toHaveLength(0);
  });
});

describe('health and readiness', () => {
  it('is ready when PostgreSQL and Temporal answer', async () => {
    const res = await http(stack.url, 'GET', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
  });
});

describe('OpenAPI', () => {
  it('serves an OpenAPI 3.1 document covering every mounted route', async () => {
    const res = await http(stack.url, 'GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries(res.body.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(ops)) documented.add(`${method} ${path}`);
    }
    const mounted = allRoutes().map((r) => `${r.method} ${r.path.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}')}`);
    expect([...documented].sort()).toEqual([...new Set(mounted)].sort());
    expect(res.body.components.schemas.ErrorEnvelope.required).toEqual(['error', 'error_type', 'request_id']);
    const echo = res.body.paths['/api/jobs/echo'].post;
    expect(echo.requestBody.content['application/json'].schema.properties.message.type).toBe('string');
    expect(Object.keys(echo.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '413', '503']));
    const cap = res.body.paths['/api/internal/demo-budget/cap'].put;
    expect(cap.security).toEqual([{ internalToken: [] }]);
    expect(cap.responses['422']).toBeDefined();
  });

  it('serves a browsable reference page listing the operations', async () => {
    const res = await fetch(stack.url + '/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    const html = await res.text();
    expect(html).toContain('/api/jobs/echo');
    expect(html).toContain('id="createPersonalAccessToken"');
    expect(html).not.toContain('<script');
    // Shared responses (405, 413, …) are `$ref`s in the document; the page spells them out.
    expect(html).not.toContain('undefined');
    expect(html).toContain('<code>405</code> Method not declared on this path');
  });
});

describe('echo workflow round trip', () => {
  it('runs the workflow, writes the row and is idempotent by job_id', async () => {
    const first = await http(stack.url, 'POST', '/api/jobs/echo', {
      body: { message: 'hello', job_id: 'foundation-1' },
    });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({
      job_id: 'foundation-1',
      workflow_id: 'echo/foundation-1',
      message: 'hello',
      requested_by: 'local-admin',
    });
    const again = await http(stack.url, 'POST', '/api/jobs/echo', {
      body: { message: 'different', job_id: 'foundation-1' },
    });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(first.body.data);
    const rows = await query(stack.db.url, 'select job_id, message from echo_jobs');
    expect(rows).toEqual([{ job_id: 'foundation-1', message: 'hello' }]);
    const read = await http(stack.url, 'GET', '/api/jobs/echo/foundation-1');
    expect(read.body.data.workflow_status).toBe('COMPLETED');
  });
});
