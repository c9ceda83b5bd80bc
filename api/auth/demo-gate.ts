import type { EntityManager } from '@mikro-orm/postgresql';
import type Koa from 'koa';
import type { Principal } from '../../shared/auth/principal.js';
import { readDemoOwner } from '../../shared/deployment/demo-owner.js';
import { DemoAccessDeniedError } from '../../shared/errors.js';
import type { Settings } from '../../shared/settings/store.js';
import { sql } from '../../shared/db/sql.js';

/**
 * The hosted demo gate (spec, Authentication 5). With `PLATFORM_DEMO_MODE` on (`demo.mode_enabled`),
 * every authenticated route admits a signed-in person only when they are
 *   - the demo owner set through `PUT /api/internal/demo-access/owner` (same `sub`, or, while the
 *     owner has no `sub` yet, the same e-mail address as the person's recorded sign-in), or
 *   - an administrator or staff member: the built-in `admin` role or the role `staff`.
 * Agents (sandbox thread tokens), the system identity (service token) and app-only tokens are not
 * people and pass. Public routes (health, well-known documents, `GET /api/config/demo-mode`) and
 * internal routes never reach the gate.
 *
 * A denied browser request (GET whose `Accept` prefers `text/html`) is redirected 303 to the refusal
 * page (`demo.access_denied_path`, default `/demo/access-denied`); any other request answers 403
 * `error_type` `demo_access_denied` with `payload.reason`, `payload.detail` and `payload.redirect_to`.
 */
export const DEMO_STAFF_ROLES = ['admin', 'staff'] as const;

export async function demoGateDenial(
  principal: Principal,
  settings: Settings,
  em: EntityManager,
): Promise<{ reason: string; detail: string } | null> {
  if (principal.kind !== 'person') return null;
  if (!(await settings.get('demo.mode_enabled'))) return null;
  if (principal.roles.some((r) => (DEMO_STAFF_ROLES as readonly string[]).includes(r))) return null;
  const owner = await readDemoOwner(em);
  if (!owner) {
    return { reason: 'no_demo_owner', detail: 'This demo has no owner yet; only its owner may use it.' };
  }
  if (owner.sub !== null) {
    if (owner.sub === principal.id) return null;
  } else {
    const rows = await sql<{ email: string | null }>(em, 'select email from users where id = ?', [principal.id]);
    const email = rows[0]?.email;
    if (email && email.toLowerCase() === owner.email.toLowerCase()) return null;
  }
  return { reason: 'not_demo_owner', detail: 'This demo is reserved for its owner.' };
}

/** Whether the request is a browser page load: a GET whose Accept header prefers HTML over JSON. */
export function prefersHtml(ctx: Koa.Context): boolean {
  if (ctx.method !== 'GET') return false;
  return ctx.accepts('application/json', 'text/html') === 'text/html' && /text\/html/i.test(ctx.get('accept'));
}

/** Applies the gate: a 303 to the refusal page for a browser, else throws the 403 envelope. Returns true when redirected. */
export async function applyDemoGate(
  ctx: Koa.Context,
  principal: Principal,
  settings: Settings,
  em: EntityManager,
): Promise<boolean> {
  const denial = await demoGateDenial(principal, settings, em);
  if (!denial) return false;
  const redirectTo = await settings.get('demo.access_denied_path');
  if (prefersHtml(ctx)) {
    ctx.status = 303;
    ctx.set('Location', redirectTo);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = '';
    return true;
  }
  throw new DemoAccessDeniedError(`demo_access_denied: ${denial.detail}`, { ...denial, redirect_to: redirectTo });
}
