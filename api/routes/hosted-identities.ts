import { z } from 'zod';
import {
  createInitialAdmin,
  HOSTED_SCOPES,
  inviteIdentity,
  revokeBinding,
} from '../../shared/auth/hosted-identities.js';
import type { Principal } from '../../shared/auth/principal.js';
import { ForbiddenError } from '../../shared/errors.js';
import { authenticate } from '../auth/authenticate.js';
import { authenticationRequired } from '../auth/refusals.js';
import { hostedScope, managementAssertion, notHostedMode } from '../auth/hosted.js';
import type { AppDeps } from '../../shared/app-deps.js';
import { defineRoute, errorResponse, successEnvelope, type RouteContext } from '../http/route.js';

/**
 * Hosted identity (spec, Hosted identity; Authentication 4): explicit identity links of hosted mode.
 * Responses carry only `binding_id` and its state. Outside hosted mode these routes answer 404.
 */
const BindingView = z.object({ binding_id: z.string(), state: z.enum(['active', 'revoked']) });
const Subject = z
  .string()
  .min(1)
  .max(255)
  .regex(/^\S+$/)
  .describe("The identity provider's subject (`sub`) the link is for");
const OperationId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/)
  .describe('Idempotency key: repeating a request with the same operation_id answers the same binding');

const errors = {
  401: errorResponse('Missing or invalid credential (assertion not verified, or no active identity link)'),
  404: errorResponse('Not hosted mode (`payload.reason` `not_hosted_mode`)'),
  409: errorResponse('Conflict (`payload.code` names it)'),
};

type Ctx = RouteContext<unknown, unknown, unknown>;

function authorization(ctx: Ctx): string | undefined {
  return ctx.koa.get('authorization') || undefined;
}

/** A bound caller (or a service token) holding manage_users; 401 without a credential, 403 without the permission. */
async function manageUsersCaller(ctx: Ctx): Promise<Principal> {
  const principal = await authenticate(
    { authorization: authorization(ctx), serviceToken: ctx.koa.get('x-platform-service-token') || undefined },
    { config: ctx.deps.config, verifier: ctx.deps.verifier, em: ctx.em },
  );
  if (!principal) throw authenticationRequired(ctx.deps.config);
  ctx.koa.state.principal = principal;
  if (!principal.permissions.has('manage_users')) {
    throw new ForbiddenError(
      'Permission denied: this action needs the "manage_users" permission. Ask an administrator to grant you a role that includes it (the built-in "admin" role holds every permission).',
      { required_permission: 'manage_users', roles: principal.roles },
    );
  }
  return principal;
}

function requireHosted(deps: AppDeps): void {
  if (deps.config.auth.provider !== 'hosted') throw notHostedMode(deps.config);
}

/** Both routes that create a binding: the subject, an idempotency key, and 201 (200 when the operation already created it). */
const CREATE_BINDING = {
  body: z.object({ subject: Subject, operation_id: OperationId.optional() }).strict(),
  bodyKind: 'config' as const,
  successStatus: 201,
};
const CREATED_BINDING = {
  200: { description: 'The binding this operation already created', schema: successEnvelope(BindingView) },
  201: { description: 'Created', schema: successEnvelope(BindingView) },
  ...errors,
};

export const hostedIdentityRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/hosted-identities/initial-admin',
    operationId: 'createHostedInitialAdmin',
    summary: 'Create the sole initial admin identity link (once per installation)',
    description:
      'Needs a verified management assertion (issuer, audience, JWKS, tenant, installation) with scope `hosted.identity.bootstrap`. Creates the initial admin binding once: 201; the same `subject` and `operation_id` again answers 200 with that binding; any other call afterwards is 409 `HOSTED_INITIAL_ADMIN_EXISTS`.',
    tags: ['auth'],
    access: { kind: 'public' },
    ...CREATE_BINDING,
    responses: {
      ...CREATED_BINDING,
      403: errorResponse('The assertion lacks scope hosted.identity.bootstrap'),
    },
    handler: async (ctx) => {
      const { deps, em, body, koa } = ctx;
      requireHosted(deps);
      const auth = authorization(ctx as Ctx);
      if (!auth) throw authenticationRequired(deps.config);
      const claims = await managementAssertion(deps.config, deps.verifier, auth, HOSTED_SCOPES.bootstrap);
      if (!claims) {
        throw new ForbiddenError(
          `Creating the initial admin needs a management assertion with scope "${HOSTED_SCOPES.bootstrap}".`,
          { required_scope: HOSTED_SCOPES.bootstrap },
        );
      }
      const { binding, created } = await createInitialAdmin(em, hostedScope(deps.config), {
        subject: body.subject,
        operationId: body.operation_id ?? null,
        createdBy: `management:${claims.sub}`,
      });
      koa.status = created ? 201 : 200;
      return { success: true, data: binding };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/hosted-identities/invitations',
    operationId: 'inviteHostedIdentity',
    summary: 'Create one ordinary identity link (needs manage_users)',
    description:
      'Creates a member binding for `subject`: 201; the same `operation_id` again answers 200 with that binding. 409 `HOSTED_IDENTITY_ALREADY_BOUND` when the subject already has an active link, `HOSTED_IDENTITY_OPERATION_REUSED` when the operation_id named another request.',
    tags: ['auth'],
    access: { kind: 'public' },
    ...CREATE_BINDING,
    responses: {
      ...CREATED_BINDING,
      403: errorResponse('The caller lacks manage_users'),
    },
    handler: async (ctx) => {
      const { deps, em, body, koa } = ctx;
      requireHosted(deps);
      const principal = await manageUsersCaller(ctx as Ctx);
      const { binding, created } = await inviteIdentity(em, hostedScope(deps.config), {
        subject: body.subject,
        operationId: body.operation_id ?? null,
        createdBy: principal.id,
      });
      koa.status = created ? 201 : 200;
      return { success: true, data: binding };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/hosted-identities/:binding_id/revoke',
    operationId: 'revokeHostedIdentity',
    summary:
      'Revoke an identity link (manage_users, or a management assertion with scope hosted.identity.emergency_revoke)',
    description:
      'Idempotent by `operation_id`: repeating it answers the revoked binding. The link stops working on the next request and open hosted WebSockets close. 409 `HOSTED_IDENTITY_OPERATION_REUSED` when the operation_id revoked another binding.',
    tags: ['auth'],
    access: { kind: 'public' },
    params: z.object({
      binding_id: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[A-Za-z0-9_-]+$/),
    }),
    body: z.object({ operation_id: OperationId }).strict(),
    bodyKind: 'config',
    responses: {
      200: { description: 'Revoked', schema: successEnvelope(BindingView) },
      ...errors,
      403: errorResponse('The caller lacks manage_users'),
      404: errorResponse('No such binding, or not hosted mode'),
    },
    handler: async (ctx) => {
      const { deps, em, body, params } = ctx;
      requireHosted(deps);
      const claims = await managementAssertion(
        deps.config,
        deps.verifier,
        authorization(ctx as Ctx),
        HOSTED_SCOPES.emergencyRevoke,
      );
      const revokedBy = claims ? `management:${claims.sub}` : (await manageUsersCaller(ctx as Ctx)).id;
      const binding = await revokeBinding(em, hostedScope(deps.config), {
        bindingId: params.binding_id,
        operationId: body.operation_id,
        revokedBy,
      });
      return { success: true, data: binding };
    },
  }),
];
