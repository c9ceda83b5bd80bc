import { z } from 'zod';
import { BadRequestError } from '../../../shared/errors.js';
import { GATEWAY_SERVER_NAME, GATEWAY_SERVER_VERSION } from '../server.js';
import { describeParameters } from '../schema.js';
import { authView, callerView } from './caller.js';
import { defaultAgentView } from './agents.js';
import { defineMcpAction, V1_ONLY_ACTIONS } from './registry.js';

export const statusAction = defineMcpAction({
  name: 'status',
  versions: ['v1', 'v2'],
  description: 'Gateway version, who you are, how authentication works here, and the default agent.',
  params: z.object({}),
  handler: async (ctx) => {
    const { config } = ctx.deps;
    return {
      gateway: {
        version: ctx.version,
        endpoint: ctx.gateway.endpoint,
        server: { name: GATEWAY_SERVER_NAME, version: GATEWAY_SERVER_VERSION },
        actions: ctx.catalog.names(ctx.version),
      },
      caller: callerView(ctx.principal),
      auth: authView(config, ctx.gateway),
      default_agent: await defaultAgentView(ctx),
    };
  },
});

export const helpAction = defineMcpAction({
  name: 'help',
  versions: ['v1', 'v2'],
  description:
    "Lists this gateway version's actions with their parameters (or one action with `about`); one that would refuse you here is `available: false` with `unavailable_reason`.",
  params: z.object({
    about: z.string().trim().min(1).optional().describe('An action name: describe only that action'),
  }),
  handler: async ({ params, version, gateway, catalog, principal, deps }) => {
    const names = catalog.names(version);
    if (params.about !== undefined && !names.includes(params.about)) {
      throw new BadRequestError(`No action "${params.about}" on the ${version} gateway.`, { actions: names });
    }
    const actions = (params.about ? [params.about] : names).map((name) => {
      const def = catalog.find(name, version);
      const refusal = def?.unavailable?.({ principal, deps });
      return {
        name,
        available: def !== undefined && refusal === undefined,
        description: def?.description ?? 'Not available on this deployment yet.',
        ...(refusal ? { unavailable_reason: refusal } : {}),
        parameters: describeParameters(catalog, name, version),
      };
    });
    return {
      gateway_version: version,
      endpoint: gateway.endpoint,
      usage: 'Call the "platform" tool with {"action": "<name>", ...parameters}.',
      actions,
      ...(version === 'v2'
        ? { legacy: `${V1_ONLY_ACTIONS.join(', ')} are only on the legacy gateway ${gateway.publicOrigin}/mcp/v1/.` }
        : {}),
    };
  },
});
