import { z } from 'zod';
import type { Permission } from '../../shared/auth/rbac.js';
import { connectionInventory, tenantEgressHosts } from '../../shared/crm/connection-inventory.js';
import { assignEai, EAI_NAME_PATTERN, eaiAssignment } from '../../shared/deployment/eai-assignments.js';
import {
  deleteEmailSetting,
  emailSetting,
  emailStatus,
  saveEmailSetting,
} from '../../shared/deployment/email-setting.js';
import { publicOrigin } from '../mcp/public-url.js';
import { defineRoute, errorResponse, successEnvelope } from '../http/route.js';

/**
 * The remaining configuration routes as a PostgreSQL deployment answers them (spec, Configuration,
 * secrets and providers): no warehouse, no mail transport, external access integrations recorded
 * but with nothing to apply, and the connection inventory.
 */
const tags = ['config'];
const configPanel = { kind: 'authenticated', permission: 'access_config_panel' } as const;
const METADATA_BACKEND = 'postgresql';

// ---- e-mail ---------------------------------------------------------------------------------
const Email = z
  .string()
  .max(254)
  .regex(/^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+$/, 'an e-mail address');

const EmailView = z.object({
  default_address: z.string().nullable(),
  is_validated: z.literal(false).describe('Always false: no mail transport can validate the address'),
  sending_available: z.literal(false),
  message: z.string(),
  updated_at: z.string().nullable(),
  updated_by: z.string().nullable(),
});
const EmailStatusView = EmailView.extend({ configured: z.boolean().describe('A default address is saved') });

// ---- connections ----------------------------------------------------------------------------
const CONNECTION_PERMISSIONS: readonly Permission[] = [
  'access_config_panel',
  'manage_all_connections',
  'view_connections',
];

const DbConnection = z.object({
  name: z.string(),
  connection_kind: z.literal('crm'),
  type: z.string(),
  auth_mode: z.string(),
  owner: z.string(),
  authorized: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
  sensitive_fields_included: z.boolean(),
  allowed_bot_ids: z
    .array(z.string())
    .nullable()
    .optional()
    .describe('Sensitive; null: not restricted to particular agents'),
  allowed_user_ids: z
    .array(z.string())
    .nullable()
    .optional()
    .describe('Sensitive; null: not restricted to particular people'),
  connection_string: z.string().nullable().optional().describe('Sensitive; the endpoint the connection reaches'),
});

// ---- external access integrations -----------------------------------------------------------
const EaiParams = z.object({
  reference_name: z.string().min(1).max(255).regex(EAI_NAME_PATTERN, 'letters, digits and underscore only'),
});
const EaiBody = z
  .object({
    reference_name: z.string().max(255),
    integration_type: z.string().max(255),
  })
  .strict();
const Verification = z.object({
  checked: z.boolean().describe('Whether the assignment was verified in a warehouse (never on PostgreSQL)'),
  applied: z.boolean(),
});
const EAI_DOC =
  'PostgreSQL deployments have no warehouse to apply an external access integration to: a valid assignment is recorded (`recorded` true) and answered with `verification` `{checked: false, applied: false}` (not verified, which is not a failure: treat as failed only when `checked` is true and `applied` false). Names other than letters, digits and underscore answer `success` false and record nothing.';
const EaiAssignResponse = z.object({
  success: z.boolean(),
  message: z.string(),
  reference_name: z.string(),
  integration_type: z.string(),
  recorded: z.boolean(),
  verification: Verification,
});

function eaiAssignRoute(path: string, operationId: string) {
  return defineRoute({
    method: 'post',
    path,
    operationId,
    summary: 'Assign an external access integration to a reference name',
    description: EAI_DOC,
    tags: path.startsWith('/api/enhancements') ? ['enhancements'] : tags,
    access: configPanel,
    body: EaiBody,
    bodyKind: 'config',
    ownShape:
      'Configuration, secrets and providers: POST /api/config/eai/assign answers `success` (false for invalid names) and `verification` (`checked`, `applied`)',
    successFalseAt2xx:
      'Configuration, secrets and providers: eai assign, "letters, digits, underscore only, else `success` false"',
    responses: { 200: { description: 'Recorded, or refused with `success` false', schema: EaiAssignResponse } },
    handler: async ({ em, body, principal }) => assignEai(em, body, principal),
  });
}

export const configMiscRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/config/warehouse/status',
    operationId: 'getWarehouseStatus',
    summary: 'Warehouse status: on this PostgreSQL deployment, not a warehouse and no warehouses to choose',
    tags,
    access: { kind: 'authenticated', permission: null },
    responses: {
      200: {
        description: 'Status',
        schema: successEnvelope(
          z.object({
            is_snowflake: z.literal(false),
            metadata_backend: z.literal(METADATA_BACKEND),
            current_warehouse: z.null(),
            available_warehouses: z.array(z.string()).max(0),
          }),
        ),
      },
    },
    handler: async () => ({
      success: true,
      data: {
        is_snowflake: false,
        metadata_backend: METADATA_BACKEND,
        current_warehouse: null,
        available_warehouses: [],
      },
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/email',
    operationId: 'getEmailConfig',
    summary: 'The saved default e-mail address (`is_validated` false: sending is unavailable here)',
    tags,
    access: configPanel,
    responses: { 200: { description: 'E-mail settings', schema: successEnvelope(EmailView) } },
    handler: async ({ em }) => ({ success: true, data: await emailSetting(em) }),
  }),
  defineRoute({
    method: 'put',
    path: '/api/config/email',
    operationId: 'setEmailConfig',
    summary: 'Save the default e-mail address (kept unvalidated: sending is unavailable here)',
    tags,
    access: configPanel,
    body: z.object({ default_address: Email }).strict(),
    bodyKind: 'config',
    responses: { 200: { description: 'Saved', schema: successEnvelope(EmailView) } },
    handler: async ({ em, body, principal }) => ({
      success: true,
      data: await saveEmailSetting(em, body.default_address, principal.id),
    }),
  }),
  defineRoute({
    method: 'delete',
    path: '/api/config/email',
    operationId: 'deleteEmailConfig',
    summary: 'Remove the saved default e-mail address (idempotent)',
    tags,
    access: configPanel,
    responses: {
      200: {
        description: 'Removed',
        schema: successEnvelope(EmailView.extend({ deleted: z.boolean() })),
      },
    },
    handler: async ({ em }) => ({ success: true, data: await deleteEmailSetting(em) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/email/status',
    operationId: 'getEmailStatus',
    summary: 'E-mail status: the saved default address, `is_validated` false, sending unavailable',
    tags,
    access: configPanel,
    responses: { 200: { description: 'Status', schema: successEnvelope(EmailStatusView) } },
    handler: async ({ em }) => ({ success: true, data: await emailStatus(em) }),
  }),
  defineRoute({
    method: 'delete',
    path: '/api/config/email/status',
    operationId: 'resetEmailStatus',
    summary: 'Reset the e-mail setup: removes the saved default address and its (never granted) validation',
    tags,
    access: configPanel,
    responses: {
      200: {
        description: 'Reset',
        schema: successEnvelope(EmailStatusView.extend({ deleted: z.boolean() })),
      },
    },
    handler: async ({ em }) => {
      const { deleted, ...view } = await deleteEmailSetting(em);
      return { success: true, data: { ...view, configured: false, deleted } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/warehouse-host/context',
    operationId: 'getWarehouseHostContext',
    summary: 'Values for outbound-access approval links: public host and URLs, and the hosts connections reach',
    tags,
    access: configPanel,
    responses: {
      200: {
        description: 'Context',
        schema: successEnvelope(
          z.object({
            host: z.string(),
            public_url: z.string(),
            api_base_url: z.string(),
            mcp_url: z.string(),
            public_url_configured: z.boolean().describe('False: derived from this request (X-Forwarded-*)'),
            is_snowflake: z.literal(false),
            metadata_backend: z.literal(METADATA_BACKEND),
            container_service_mode: z.boolean(),
            egress_hosts: z
              .array(z.object({ connection: z.string(), host: z.string() }))
              .describe("Hosts the tenant's connections reach (what an outbound-access rule must admit)"),
          }),
        ),
      },
    },
    handler: async ({ em, deps, koa, principal }) => {
      const origin = publicOrigin(koa, deps.config);
      const egressHosts = await tenantEgressHosts(em, principal.tenant);
      return {
        success: true,
        data: {
          host: new URL(origin).host,
          public_url: origin,
          api_base_url: `${origin}/api`,
          mcp_url: `${origin}/mcp/`,
          public_url_configured: deps.config.mcp.publicOrigin !== undefined,
          is_snowflake: false,
          metadata_backend: METADATA_BACKEND,
          container_service_mode: deps.config.containerServiceMode,
          egress_hosts: egressHosts,
        },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/db-connections',
    operationId: 'listDbConnections',
    summary: "The tenant's connections (CRM today); sensitive fields only for manage_all_connections or the owner",
    description:
      "Needs any of `access_config_panel`, `manage_all_connections`, `view_connections` (403 otherwise). `allowed_bot_ids`, `allowed_user_ids` and `connection_string` appear only to callers with `manage_all_connections` and to the connection's owner (its creator); `sensitive_fields_included` says which. CRM connections restrict neither agents nor people (null).",
    tags,
    access: { kind: 'authenticated', permission: CONNECTION_PERMISSIONS },
    responses: {
      200: { description: 'Connections', schema: successEnvelope(z.object({ connections: z.array(DbConnection) })) },
      403: errorResponse('None of the three permissions'),
    },
    handler: async ({ em, principal }) => {
      const connections = await connectionInventory(em, principal);
      return { success: true, data: { connections } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/eai/:reference_name/assigned',
    operationId: 'getEaiAssignment',
    summary: 'Whether an external access integration is assigned to a reference name',
    description: EAI_DOC,
    tags,
    access: configPanel,
    params: EaiParams,
    responses: {
      200: {
        description: 'Assignment status',
        schema: successEnvelope(
          z.object({
            reference_name: z.string(),
            assigned: z.boolean(),
            integration_type: z.string().nullable(),
            assigned_at: z.string().nullable(),
            assigned_by: z.string().nullable(),
            verification: Verification,
          }),
        ),
      },
    },
    handler: async ({ em, params }) => ({ success: true, data: await eaiAssignment(em, params.reference_name) }),
  }),
  eaiAssignRoute('/api/config/eai/assign', 'assignEai'),
  eaiAssignRoute('/api/enhancements/eai/assign', 'assignEaiEnhancements'),
];
