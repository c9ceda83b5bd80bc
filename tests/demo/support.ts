import type { JWTPayload } from 'jose';
import { expect } from 'vitest';
import { query } from '../helpers/db.js';
import { startOidcStack, type OidcStack, type OidcStackOptions } from '../helpers/oidc-stack.js';
import { http } from '../helpers/stack.js';

/** The people of the presenter suites. */
export type Presenters = 'admin' | 'presenter' | 'staffOnly' | 'grantedNotStaff' | 'member';

/** Their claims; `present_demos` reaches `pat` (staff) and `gus` (not staff) through the custom role `demo-presenter`. */
export const presenters = (member: JWTPayload = { sub: 'mia', roles: ['member'] }): Record<Presenters, JWTPayload> => ({
  admin: { sub: 'root', roles: ['admin'] },
  presenter: { sub: 'pat', email: 'pat@example.com', roles: ['staff', 'demo-presenter'] },
  staffOnly: { sub: 'stu', roles: ['staff'] },
  grantedNotStaff: { sub: 'gus', roles: ['member', 'demo-presenter'] },
  member,
});

export interface PresenterStack extends OidcStack<Presenters> {
  /** The agent the administrator made at start. */
  agentId: string;
}

/**
 * An OIDC stack (worker included) with the presenters signed, the `demo-presenter` custom role
 * granting `present_demos`, and one agent made by the administrator through the route.
 */
export async function startPresenterStack(
  env: Record<string, string>,
  agent: { name: string; instructions: string },
  tokens: Record<Presenters, JWTPayload> = presenters(),
): Promise<PresenterStack> {
  const s = await startOidcStack<Presenters>({ env, tokens, dataDirPrefix: 'demo-test-' });
  try {
    await query(
      s.stack.db.url,
      `insert into custom_roles (tenant, name, permissions, created_at, updated_at)
     values ('default', 'demo-presenter', '["present_demos"]'::jsonb, now(), now())`,
    );
    const res = await http(s.stack.url, 'POST', '/api/agents', { token: s.tokens.admin, body: agent });
    expect(res.status).toBe(201);
    return { ...s, agentId: res.body.data.agent_id as string };
  } catch (err) {
    await s.close();
    throw err;
  }
}

/** A stack without a worker for the demo gate suites; `env` adds to the OIDC settings. */
export function startDemoStack<K extends string = never>(options: OidcStackOptions<K> = {}): Promise<OidcStack<K>> {
  return startOidcStack<K>({ worker: false, dataDirPrefix: 'demo-test-', tokens: {} as never, ...options });
}
