import type Router from '@koa/router';
import { RequestContext, type EntityManager } from '@mikro-orm/postgresql';
import type Koa from 'koa';
import type { z } from 'zod';
import { authenticate } from '../auth/authenticate.js';
import { authenticationRequired } from '../auth/refusals.js';
import { applyDemoGate } from '../auth/demo-gate.js';
import { requireInternalToken } from '../auth/internal.js';
import type { AppDeps } from '../../shared/app-deps.js';
import { ForbiddenError, UndeclaredFieldsError } from '../../shared/errors.js';
import { invalidInput, issueFields, refuseNul } from '../../shared/validation.js';
import type { Principal } from '../../shared/auth/principal.js';
import { multipartBody, type UploadedFile } from './multipart.js';
import { bodyRequired, type AnyRoute } from './route.js';
import { hasRequestBody, type ReadBody } from './body.js';
import { RequestCodes } from '../../shared/http/error-codes.js';

type Location = 'params' | 'query' | 'headers' | 'body';

function undeclaredKeys(location: Location, error: z.ZodError): string[] {
  // A union body (e.g. a list, or an object wrapping it) counts the undeclared keys of any branch.
  const walk = (issues: readonly z.core.$ZodIssue[], prefix: readonly PropertyKey[]): string[] =>
    issues.flatMap((issue) => {
      const path = [...prefix, ...issue.path];
      if (issue.code === 'unrecognized_keys')
        return issue.keys.map((k) => [location, ...path.map(String), k].join('.'));
      if (issue.code === 'invalid_union') return issue.errors.flatMap((branch) => walk(branch, path));
      return [];
    });
  return [...new Set(walk(error.issues, []))];
}

function parsePart(route: AnyRoute, location: Location, schema: z.ZodType | undefined, value: unknown): unknown {
  if (!schema) return undefined;
  const result = schema.safeParse(value);
  if (result.success) {
    // What the schema keeps must be NUL-free; a protocol body is checked message by message by its handler.
    if (!(location === 'body' && route.bodyKind === 'jsonrpc'))
      refuseNul(result.data, [location], `request ${location}`);
    return result.data;
  }
  if (location === 'body' && route.bodyKind === 'config') {
    const undeclared = undeclaredKeys(location, result.error);
    if (undeclared.length > 0) throw new UndeclaredFieldsError(undeclared);
  }
  throw invalidInput(`request ${location}`, issueFields([location], result.error, { schema, value }));
}

const PERMISSION_GUIDANCE =
  'Ask an administrator to grant you a role that includes it (the built-in "admin" role holds every permission).';

function authorize(route: AnyRoute, principal: Principal | null, deps: AppDeps): Principal {
  if (route.access.kind !== 'authenticated') throw new Error('authorize() is for authenticated routes');
  if (!principal) throw authenticationRequired(deps.config);
  const { permission, principalKinds } = route.access;
  if (principalKinds && !principalKinds.includes(principal.kind)) {
    throw new ForbiddenError(
      `This action is limited to ${principalKinds.join(' or ')} callers; you are calling as ${principal.kind} "${principal.displayName}". ${
        principalKinds.includes('person')
          ? 'Sign in as a person (identity-provider login or your own personal access token).'
          : ''
      }`.trim(),
      { required_principal_kinds: principalKinds, principal_kind: principal.kind },
    );
  }
  if (Array.isArray(permission) && !permission.some((p) => principal.permissions.has(p))) {
    throw new ForbiddenError(
      `Permission denied: this action needs one of the permissions ${permission.map((p) => `"${p}"`).join(', ')}. ${PERMISSION_GUIDANCE}`,
      { required_permissions_any: permission, roles: principal.roles },
    );
  }
  if (typeof permission === 'string' && !principal.permissions.has(permission)) {
    throw new ForbiddenError(
      `Permission denied: this action needs the "${permission}" permission. ${PERMISSION_GUIDANCE}`,
      {
        required_permission: permission,
        roles: principal.roles,
      },
    );
  }
  return principal;
}

/** Roles that, with the `present_demos` permission, make a person a presenter. */
export const PRESENTER_ROLES = ['staff', 'admin'] as const;

/** A `presenter` route called without the internal token: a person with `present_demos` and a presenter role. */
function authorizePresenter(principal: Principal | null, deps: AppDeps): Principal {
  if (!principal) throw authenticationRequired(deps.config);
  const role = principal.roles.some((r) => (PRESENTER_ROLES as readonly string[]).includes(r));
  if (principal.kind !== 'person' || !principal.permissions.has('present_demos') || !role) {
    throw new ForbiddenError(
      `Presenter routes need a person holding the "present_demos" permission and the role "staff" or "admin", or the X-Platform-Internal-Token header. ${PERMISSION_GUIDANCE}`,
      { required_permission: 'present_demos', required_roles: PRESENTER_ROLES, roles: principal.roles },
    );
  }
  return principal;
}

/**
 * Registers every route on the router: authentication and permission guard, then the body read (`readBody`:
 * none before the guard), validation, then the handler.
 */
export function mountRoutes(router: Router, routes: AnyRoute[], deps: AppDeps, readBody: ReadBody): void {
  for (const route of routes) {
    if (route.access.kind === 'authenticated' && !('permission' in route.access))
      throw new Error(
        `${route.path}: an authenticated route declares its permission (null when the handler scopes it)`,
      );
    const needsBody = bodyRequired(route);
    if (route.bodyKind === 'multipart' && !route.multipart)
      throw new Error(`${route.path}: a multipart route declares its limits`);
    if (route.guard && route.access.kind !== 'public')
      throw new Error(`${route.path}: only a public route brings its own guard`);
    const multipart = route.multipart ? multipartBody(route.multipart) : undefined;
    router[route.method](route.path, async (ctx: Koa.Context) => {
      const em = RequestContext.getEntityManager() as EntityManager | undefined;
      if (!em) throw new Error('no request context: mountRoutes needs the RequestContext middleware');
      ctx.state.route = route;
      if (route.refusalBody) ctx.state.refusalBody = route.refusalBody;
      let principal: Principal | null = null;
      if (route.access.kind === 'internal') {
        requireInternalToken(ctx.get('x-platform-internal-token') || undefined, deps.config, {
          bearer: route.access.bearer ? ctx.get('authorization') : undefined,
        });
      } else if (route.access.kind === 'presenter' && ctx.get('x-platform-internal-token')) {
        // Presenter routes: the internal token when sent, else a presenting person (below).
        requireInternalToken(ctx.get('x-platform-internal-token'), deps.config);
      } else if (route.access.kind === 'authenticated' || route.access.kind === 'presenter') {
        principal = await authenticate(
          {
            authorization: ctx.get('authorization') || undefined,
            serviceToken: ctx.get('x-platform-service-token') || undefined,
          },
          { config: deps.config, verifier: deps.verifier, em },
        );
        // The hosted demo gate (api/auth/demo-gate.ts), before permissions: a denied browser is redirected, others get 403.
        if (principal && (await applyDemoGate(ctx, principal, deps.settings, em))) return;
        principal =
          route.access.kind === 'presenter' ? authorizePresenter(principal, deps) : authorize(route, principal, deps);
        ctx.state.principal = principal;
      } else if (route.guard) await route.guard(ctx, deps, em);
      await readBody(ctx, route.body || route.bodyKind ? (route.bodyKind ?? 'json') : 'none');
      const params = parsePart(route, 'params', route.params, ctx.params);
      const query = parsePart(route, 'query', route.query, ctx.query);
      const headers = (parsePart(route, 'headers', route.headers, ctx.headers) ?? {}) as Record<string, unknown>;
      // Uploads are read only from callers who passed the guard, into a folder removed when the request ends.
      if (multipart) return multipart(ctx, () => respond(ctx, params, query, headers, principal, em, needsBody));
      return respond(ctx, params, query, headers, principal, em, needsBody);
    });
  }

  async function respond(
    ctx: Koa.Context,
    params: unknown,
    query: unknown,
    headers: Record<string, unknown>,
    principal: Principal | null,
    em: EntityManager,
    needsBody: boolean,
  ): Promise<void> {
    const route = ctx.state.route as AnyRoute;
    if (needsBody && !hasRequestBody(ctx)) {
      throw invalidInput('request body', [
        { field: 'body', message: 'this request needs a JSON body', code: RequestCodes.body_required },
      ]);
    }
    const rawBody = (ctx.request as { body?: unknown }).body;
    const body = parsePart(route, 'body', route.body, rawBody ?? {});
    const result = await route.handler({
      params,
      query,
      headers,
      body,
      principal: principal as Principal,
      deps,
      em,
      requestId: ctx.state.requestId as string,
      log: ctx.state.log,
      koa: ctx,
      files: (ctx.state.uploads as UploadedFile[] | undefined) ?? [],
    });
    if (ctx.body === undefined || ctx.body === null) {
      // Koa's status is 404 until someone sets it: a handler that chose its status (a 202 while a
      // workflow still runs) keeps it; otherwise the route's declared success status.
      if (ctx.status === 404) ctx.status = route.successStatus ?? 200;
      if (result !== undefined) ctx.body = result;
    }
  }
}
