import { z } from 'zod';
import { MAX_USER_CONFIG_BYTES, readUserConfig, saveUserConfig } from '../../shared/settings/user-config.js';
import { defineRoute, successEnvelope } from '../http/route.js';

const AuthView = z.object({
  provider: z.enum(['oidc', 'proxy', 'hosted', 'none']),
  issuer: z.string().nullable(),
  audience: z.string().nullable(),
  jwks_url: z.string().nullable(),
  client_id: z.string().nullable(),
  roles_claim: z.string(),
  deployment_tenant: z.string(),
  mcp_client_redirect_uris: z.array(z.string()),
  oauth_proxy_enabled: z.boolean(),
  client_secret_configured: z.boolean(),
  service_token_configured: z.boolean().describe('X-Platform-Service-Token accepted'),
  internal_token_configured: z.boolean().describe('X-Platform-Internal-Token accepted'),
});

const UserConfig = z.record(z.string().min(1).max(200), z.unknown());

export const configViewRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/config/auth',
    operationId: 'getAuthConfig',
    summary: 'How callers are authenticated (never the secrets, only whether they are configured)',
    tags: ['config'],
    access: { kind: 'authenticated', permission: 'access_config_panel' },
    responses: { 200: { description: 'Authentication configuration', schema: successEnvelope(AuthView) } },
    handler: async ({ deps }) => {
      const a = deps.config.auth;
      return {
        success: true,
        data: {
          provider: a.provider,
          issuer: a.issuer ?? null,
          audience: a.audience ?? null,
          jwks_url: a.jwksUrl ?? null,
          client_id: a.clientId ?? null,
          roles_claim: a.rolesClaim,
          deployment_tenant: a.deploymentTenant,
          mcp_client_redirect_uris: a.mcpClientRedirectUris,
          oauth_proxy_enabled: deps.config.mcp.oauthProxyEnabled,
          client_secret_configured: a.clientSecret !== undefined,
          service_token_configured: a.serviceToken !== undefined,
          internal_token_configured: a.internalToken !== undefined,
        },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/user-config',
    operationId: 'getUserConfig',
    summary: "The caller's own preferences (empty until saved)",
    tags: ['config'],
    access: { kind: 'authenticated', permission: null },
    responses: {
      200: {
        description: 'Preferences',
        schema: successEnvelope(z.object({ config: UserConfig, updated_at: z.string().nullable() })),
      },
    },
    handler: async ({ em, principal }) => ({ success: true, data: await readUserConfig(em, principal) }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/config/user-config',
    operationId: 'saveUserConfig',
    summary: "Replace the caller's own preferences",
    description: `Per user; at most ${MAX_USER_CONFIG_BYTES} bytes of JSON.`,
    tags: ['config'],
    access: { kind: 'authenticated', permission: null },
    body: z.object({ config: UserConfig }).strict(),
    bodyKind: 'config',
    ownShape: 'Configuration, secrets and providers: POST /api/config/user-config answers `success`, `message`',
    responses: {
      200: { description: 'Saved', schema: z.object({ success: z.literal(true), message: z.string() }) },
      413: { description: `The preferences exceed ${MAX_USER_CONFIG_BYTES} bytes` },
    },
    handler: async ({ em, principal, body }) => {
      await saveUserConfig(em, principal, body.config);
      return { success: true, message: 'Preferences saved.' };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/frontend',
    operationId: 'getFrontendConfig',
    summary: 'Flags the web app needs (any signed-in caller)',
    tags: ['config'],
    access: { kind: 'authenticated', permission: null },
    responses: {
      200: {
        description: 'Frontend flags',
        schema: successEnvelope(
          z.object({
            jira_automation_enabled: z
              .boolean()
              .describe('Tracker automation rollout (`enhancements.tracker_automation.enabled`)'),
            code_agent_enabled: z.boolean(),
            demo_mode: z.boolean(),
            auth_provider: z.enum(['oidc', 'proxy', 'hosted', 'none']),
            product_name: z
              .string()
              .nullable()
              .describe(
                '`branding.product_name` (the branding route saves it); null: unset, the web app shows its own',
              ),
          }),
        ),
      },
    },
    handler: async ({ deps }) => {
      const s = deps.settings;
      return {
        success: true,
        data: {
          jira_automation_enabled: await s.get('enhancements.tracker_automation.enabled'),
          code_agent_enabled: await s.get('enhancements.code_agent.enabled'),
          demo_mode: await s.get('demo.mode_enabled'),
          auth_provider: deps.config.auth.provider,
          product_name: await s.get('branding.product_name'),
        },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/demo-mode',
    operationId: 'getDemoMode',
    summary: 'Whether this deployment runs in demo mode (`demo.mode_enabled`); public',
    tags: ['config'],
    access: { kind: 'public' },
    responses: {
      200: { description: 'Demo mode', schema: successEnvelope(z.object({ demo_mode: z.boolean() })) },
    },
    handler: async ({ deps }) => ({ success: true, data: { demo_mode: await deps.settings.get('demo.mode_enabled') } }),
  }),
];
