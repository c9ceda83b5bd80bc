import { z } from 'zod';
import { listPats, mintPat, patOwner, mintSandboxToken, revokePat } from '../../shared/auth/store.js';
import { BUILT_IN_ROLES, PERMISSIONS } from '../../shared/auth/rbac.js';
import { ForbiddenError, NotFoundError } from '../../shared/errors.js';
import { defineRoute, successEnvelope } from '../http/route.js';
import { PatSchema, patView } from '../../shared/auth/views.js';
import { toIso } from '../../shared/dates.js';

const CreatePatBody = z.object({
  name: z.string().trim().min(1).max(100),
  expires_in_days: z.number().int().min(1).max(3650).optional().describe('Omit for a token without expiry'),
});

const MeSchema = z.object({
  kind: z.enum(['person', 'agent', 'system', 'app']),
  id: z.string(),
  tenant: z.string(),
  display_name: z.string(),
  roles: z.array(z.string()),
  permissions: z.array(z.string()),
  credential: z.string(),
});

export const authRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/auth/roles',
    operationId: 'listRoles',
    summary: 'Built-in roles and the permissions each grants',
    tags: ['auth'],
    access: { kind: 'authenticated', permission: 'manage_users' },
    responses: {
      200: {
        description: 'Roles',
        schema: successEnvelope(
          z.object({
            roles: z.array(z.object({ name: z.string(), permissions: z.array(z.string()) })),
            permissions: z.array(z.string()),
          }),
        ),
      },
    },
    handler: async () => ({
      success: true,
      data: {
        roles: Object.entries(BUILT_IN_ROLES).map(([name, permissions]) => ({ name, permissions: [...permissions] })),
        permissions: [...PERMISSIONS],
      },
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/auth/me',
    operationId: 'getCurrentPrincipal',
    summary: 'Who the credential on this request resolves to',
    tags: ['auth'],
    access: { kind: 'authenticated', permission: null },
    responses: { 200: { description: 'The caller', schema: successEnvelope(MeSchema) } },
    handler: async ({ principal }) => ({
      success: true,
      data: {
        kind: principal.kind,
        id: principal.id,
        tenant: principal.tenant,
        display_name: principal.displayName,
        roles: principal.roles,
        permissions: [...principal.permissions].sort(),
        credential: principal.credential,
      },
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/auth/pats',
    operationId: 'createPersonalAccessToken',
    summary: 'Mint a personal access token (shown once)',
    description:
      'Only a person signed in through the identity provider (or the local admin with auth off) may mint; a PAT cannot mint further PATs. The token is returned once and stored hashed.',
    tags: ['auth'],
    access: { kind: 'authenticated', permission: null, principalKinds: ['person'] },
    body: CreatePatBody,
    successStatus: 201,
    responses: {
      201: {
        description: 'Minted',
        schema: successEnvelope(PatSchema.extend({ token: z.string().describe('gp_… — shown only in this response') })),
      },
    },
    handler: async ({ principal, body, em }) => {
      if (principal.credential === 'pat') {
        throw new ForbiddenError(
          'A personal access token cannot mint further tokens; sign in through the identity provider to mint one.',
        );
      }
      const expiresAt = body.expires_in_days ? new Date(Date.now() + body.expires_in_days * 86_400_000) : null;
      const { pat, token } = await mintPat(em, {
        owner: patOwner(principal),
        name: body.name,
        expiresAt,
      });
      return { success: true, data: { ...patView(pat), token } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/auth/pats',
    operationId: 'listPersonalAccessTokens',
    summary: "List the caller's personal access tokens (never the token values)",
    tags: ['auth'],
    access: { kind: 'authenticated', permission: null, principalKinds: ['person'] },
    responses: {
      200: { description: 'Tokens, newest first', schema: successEnvelope(z.object({ tokens: z.array(PatSchema) })) },
    },
    handler: async ({ principal, em }) => ({
      success: true,
      data: { tokens: (await listPats(em, principal.id)).map(patView) },
    }),
  }),
  defineRoute({
    method: 'delete',
    path: '/api/auth/pats/:pat_id',
    operationId: 'revokePersonalAccessToken',
    summary: 'Revoke one of the caller’s personal access tokens',
    tags: ['auth'],
    access: { kind: 'authenticated', permission: null, principalKinds: ['person'] },
    params: z.object({ pat_id: z.string().uuid() }),
    responses: {
      200: { description: 'Revoked (idempotent)', schema: successEnvelope(PatSchema) },
      404: { description: 'No such token of yours' },
    },
    handler: async ({ principal, params, em }) => {
      const pat = await revokePat(em, principal.id, params.pat_id);
      if (!pat) throw new NotFoundError(`No personal access token ${params.pat_id} belongs to you.`);
      return { success: true, data: patView(pat) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/internal/sandbox-tokens',
    operationId: 'mintSandboxToken',
    summary: 'Mint a sandbox thread token (gsk_) for an agent run',
    description: 'Used by the sandbox runner when it starts an agent run; the token expires with the run.',
    tags: ['internal'],
    access: { kind: 'internal' },
    body: z.object({
      bot_id: z.string().trim().min(1).max(200),
      thread_id: z.string().trim().min(1).max(200),
      tenant: z.string().trim().min(1).max(200).optional(),
      ttl_seconds: z.number().int().min(30).max(86_400).default(3_600),
    }),
    successStatus: 201,
    responses: {
      201: {
        description: 'Minted',
        schema: successEnvelope(
          z.object({ token: z.string(), bot_id: z.string(), thread_id: z.string(), expires_at: z.string() }),
        ),
      },
    },
    handler: async ({ body, em, deps }) => {
      const { record, token } = await mintSandboxToken(em, {
        botId: body.bot_id,
        threadId: body.thread_id,
        tenant: body.tenant ?? deps.config.auth.deploymentTenant,
        ttlSeconds: body.ttl_seconds,
      });
      return {
        success: true,
        data: { token, bot_id: record.botId, thread_id: record.threadId, expires_at: toIso(record.expiresAt) },
      };
    },
  }),
];
