import { expect } from 'vitest';
import { startFakeOidc, type FakeOidc } from '../helpers/fake-oidc.js';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

export const INTERNAL_TOKEN = 'internal-secret';

export interface ConsoleStack {
  stack: Stack;
  idp: FakeOidc;
  /** Bearer tokens from the same identity provider: Rita (reviewer) and Ada (admin). */
  tokens: { rita: string; ada: string };
  agent(botId: string, threadId: string): Promise<string>;
  /** A private thread owned by `owner` (default: the person the provider signs in, olivia). */
  ownThread(id: string, owner?: string): Promise<void>;
  close(): Promise<void>;
}

/** A stack with OIDC sign-in against a local provider that signs `olivia` (admin) in on every authorize. */
export async function startConsoleStack(env: Record<string, string> = {}): Promise<ConsoleStack> {
  const idp = await startFakeOidc({ subject: 'olivia', roles: ['admin'] });
  const stack = await startStack({
    env: {
      AUTH_PROVIDER: 'oidc',
      AUTH_JWKS_URL: idp.jwksUrl,
      AUTH_ISSUER: idp.issuer,
      AUTH_AUDIENCE: idp.audience,
      AUTH_CLIENT_ID: idp.clientId,
      AUTH_CLIENT_SECRET: idp.clientSecret,
      PLATFORM_INTERNAL_TOKEN: INTERNAL_TOKEN,
      ...env,
    },
  });
  const tokens = {
    rita: await idp.sign({ sub: 'rita', name: 'Rita Reviewer', roles: ['reviewer'] }),
    ada: await idp.sign({ sub: 'ada', name: 'Ada Admin', roles: ['admin'] }),
  };
  return {
    stack,
    idp,
    tokens,
    async agent(botId, threadId) {
      const res = await http(stack.url, 'POST', '/api/internal/sandbox-tokens', {
        body: { bot_id: botId, thread_id: threadId },
        headers: { 'x-platform-internal-token': INTERNAL_TOKEN },
      });
      expect(res.status, res.text).toBe(201);
      return res.body.data.token as string;
    },
    async ownThread(id, owner = 'olivia') {
      await query(
        stack.db.url,
        `insert into conversation_threads (id, tenant, bot_id, owner_id, visibility, title, created_at)
         values ($1, $2, 'bot-console', $3, 'private', $4, now())`,
        [id, stack.config.auth.deploymentTenant, owner, `Thread ${id}`],
      );
    },
    async close() {
      await stack.close();
      await idp.close();
    },
  };
}

/** A cookie jar for plain HTTP sign-ins: the console's session cookie by name. */
export function cookieOf(headers: Headers, name: string): { value: string; attributes: string } | null {
  for (const line of headers.getSetCookie()) {
    const [pair, ...attrs] = line.split(';');
    const [k, ...v] = pair!.split('=');
    if (k!.trim() === name) return { value: v.join('=').trim(), attributes: attrs.join(';') };
  }
  return null;
}

/**
 * Signs in over plain HTTP as the browser would: start (302 to the provider), the provider's
 * authorize (302 back with a code), the callback (sets the cookie). Extra headers go on every console request.
 */
export function signInOverHttp(
  c: ConsoleStack,
  headers: Record<string, string> = {},
): Promise<{ cookie: string; attributes: string }> {
  return signInAt(c.stack.url, headers);
}

/** signInOverHttp against the API at `base` (any replica of a deployment whose provider signs someone in at once). */
export async function signInAt(
  base: string,
  headers: Record<string, string> = {},
): Promise<{ cookie: string; attributes: string }> {
  const start = await fetch(`${base}/console/login/start`, { redirect: 'manual', headers });
  expect(start.status).toBe(302);
  const authorize = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  expect(authorize.status).toBe(302);
  const back = new URL(authorize.headers.get('location')!);
  const callback = await fetch(`${base}${back.pathname}${back.search}`, { redirect: 'manual', headers });
  expect(callback.status, await callback.text()).toBe(302);
  const cookie = cookieOf(callback.headers, 'platform_console_session');
  expect(cookie).not.toBeNull();
  return { cookie: cookie!.value, attributes: cookie!.attributes };
}

/** The CSRF token a console page's forms carry. */
export function csrfOf(pageHtml: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(pageHtml);
  expect(match, 'a CSRF field on the page').not.toBeNull();
  return match![1]!;
}
