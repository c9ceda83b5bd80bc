/**
 * `POST /api/docs/session`: people only, a relative path inside the docs tree, a login JWT valid
 * 10 seconds signed with the platform signing key; 503 when the docs host is not configured.
 */
import { decodeJwt, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startMiscStack } from './support.js';

const SIGNING_KEY = 'docs-signing-key-for-tests-0123456789abcdef';
const BASE = 'https://docs.example.com/platform';
let s: OidcStack<'person' | 'app'>;
let b: OidcStack<never>;
let stack: Stack;
let bare: Stack;
let person: string;
let app: string;

const session = (s: Stack, path: string, headers: Record<string, string> = {}, token?: string) =>
  http(s.url, 'POST', '/api/docs/session', { token, headers, body: { path } });

beforeAll(async () => {
  const tokens = { PLATFORM_SERVICE_TOKEN: 'service-secret', PLATFORM_INTERNAL_TOKEN: 'internal-secret' };
  s = await startMiscStack({
    env: { ...tokens, PLATFORM_DOCS_BASE_URL: `${BASE}/`, PLATFORM_SIGNING_KEY: SIGNING_KEY },
    tokens: {
      person: { sub: 'ann', name: 'Ann Analyst', email: 'ann@example.com', roles: ['member'] },
      app: { sub: 'svc-client', azp: 'svc-client', roles: ['admin'] },
    },
  });
  b = await startMiscStack({ idp: s.idp, tokens: {}, env: { ...tokens, PLATFORM_SIGNING_KEY: SIGNING_KEY } });
  stack = s.stack;
  ({ person, app } = s.tokens);
  bare = b.stack;
});
afterAll(async () => {
  await b?.close();
  await s?.close();
});

describe('docs session', () => {
  it('answers a URL into the docs tree carrying a login JWT valid for 10 seconds', async () => {
    const res = await session(stack, 'guides/connections.html#crm', {}, person);
    expect(res.status, res.text).toBe(200);
    const url = new URL(res.body.data.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${BASE}/auth/session`);
    const token = url.searchParams.get('token')!;
    const { payload } = await jwtVerify(token, new TextEncoder().encode(SIGNING_KEY), {
      audience: 'platform-docs',
      algorithms: ['HS256'],
    });
    expect(payload).toMatchObject({
      sub: 'ann',
      name: 'Ann Analyst',
      email: 'ann@example.com',
      redirect: '/guides/connections.html#crm',
      session_max_seconds: 3600,
    });
    expect(payload.exp! - payload.iat!).toBe(10);
    expect(res.body.data).toMatchObject({ expires_in: 10, redirect: '/guides/connections.html#crm' });
    expect(Date.parse(res.body.data.expires_at)).toBe(payload.exp! * 1000);
  });

  it('accepts the docs home and a leading slash', async () => {
    for (const [path, redirect] of [
      ['', '/'],
      ['/reference/api', '/reference/api'],
      ['release-notes/v1.2.html', '/release-notes/v1.2.html'],
    ]) {
      const res = await session(stack, path, {}, person);
      expect(res.status, path).toBe(200);
      expect(decodeJwt(new URL(res.body.data.url).searchParams.get('token')!).redirect).toBe(redirect);
    }
  });

  it('refuses every redirect that could leave the docs tree with 400 invalid redirect', async () => {
    for (const path of [
      'https://evil.example/phish',
      'http:/evil.example',
      '//evil.example/x',
      '///evil.example',
      'javascript:alert(1)',
      'data:text/html,hi',
      '../secrets',
      'guides/../../etc/passwd',
      'guides/./x',
      '..',
      '.',
      'guides\\..\\x',
      '/\\evil.example',
      '%2e%2e/x',
      'guides%2f..%2fx',
      '%2F%2Fevil.example',
      'guides?next=https://evil.example',
      'guides/ x',
      '@evil.example',
      'a'.repeat(1025),
    ]) {
      const res = await session(stack, path, {}, person);
      expect(res.status, path).toBe(400);
      expect(res.body.error_type).toBe('bad_request');
      expect(res.body.payload.fields[0].field).toBe('body.path');
      if (path.length < 1025) expect(res.body.payload.fields[0].message, path).toContain('invalid redirect');
    }
  });

  it('is for people only: an agent, an app-only token and the service identity get 403; no credential 401', async () => {
    const minted = await http(stack.url, 'POST', '/api/internal/sandbox-tokens', {
      headers: { 'x-platform-internal-token': 'internal-secret' },
      body: { bot_id: 'bot-1', thread_id: 'thread-1', ttl_seconds: 60 },
    });
    expect(minted.status).toBe(201);
    for (const [label, res] of [
      ['agent', await session(stack, 'guides', {}, minted.body.data.token as string)],
      ['app', await session(stack, 'guides', {}, app)],
      ['system', await session(stack, 'guides', { 'x-platform-service-token': 'service-secret' })],
    ] as const) {
      expect(res.status, label).toBe(403);
      expect(res.body.error_type).toBe('forbidden');
      expect(res.body.payload.required_principal_kinds).toEqual(['person']);
    }
    expect((await session(stack, 'guides')).status).toBe(401);
  });

  it('answers 503 when the hosted docs are not configured', async () => {
    const res = await session(bare, 'guides', {}, person);
    expect(res.status).toBe(503);
    expect(res.body.error_type).toBe('service_unavailable');
    expect(res.body.error).toContain('PLATFORM_DOCS_BASE_URL');
  });
});
