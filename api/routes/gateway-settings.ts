import { z } from 'zod';
import { readGatewaySettings, writeGatewaySettings } from '../../shared/agents/gateway-settings.js';
import { defineRoute, successEnvelope } from '../http/route.js';

const Policy = z.enum(['require_selection', 'first_available']);
const SettingsView = z.object({
  default_agent_id: z.string().nullable(),
  default_agent_unavailable_policy: Policy.nullable(),
  effective: z.object({
    default_agent_id: z
      .string()
      .nullable()
      .describe('Setting, else PLATFORM_MCP_DEFAULT_AGENT_ID, else resolved per caller (null)'),
    default_agent_unavailable_policy: Policy,
  }),
});

export const gatewaySettingsRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/config/gateway',
    operationId: 'getGatewaySettings',
    summary: "Hosted gateway settings of the caller's tenant (default agent and what happens when it is unavailable)",
    tags: ['config'],
    access: { kind: 'authenticated', permission: 'access_config_panel' },
    responses: { 200: { description: 'Settings', schema: successEnvelope(SettingsView) } },
    handler: async ({ em, deps, principal }) => {
      const s = await readGatewaySettings(em, principal.tenant);
      return { success: true, data: withEffective(s, deps.config.gateway) };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/config/gateway',
    operationId: 'updateGatewaySettings',
    summary: 'Change gateway settings; null clears a setting (falling back to the deployment env)',
    tags: ['config'],
    access: { kind: 'authenticated', permission: 'access_config_panel' },
    body: z
      .object({
        default_agent_id: z.string().min(1).max(200).nullable().optional(),
        default_agent_unavailable_policy: Policy.nullable().optional(),
      })
      .strict(),
    bodyKind: 'config',
    responses: { 200: { description: 'Stored', schema: successEnvelope(SettingsView) } },
    handler: async ({ em, deps, body, principal }) => {
      const s = await writeGatewaySettings(em, principal.tenant, body, principal.id);
      return { success: true, data: withEffective(s, deps.config.gateway) };
    },
  }),
];

function withEffective(
  s: Awaited<ReturnType<typeof readGatewaySettings>>,
  env: {
    defaultAgentId: string | undefined;
    defaultAgentUnavailablePolicy: 'require_selection' | 'first_available' | undefined;
  },
) {
  return {
    ...s,
    effective: {
      default_agent_id: s.default_agent_id ?? env.defaultAgentId ?? null,
      default_agent_unavailable_policy:
        s.default_agent_unavailable_policy ?? env.defaultAgentUnavailablePolicy ?? 'require_selection',
    },
  };
}
