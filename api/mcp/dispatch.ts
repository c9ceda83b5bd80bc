import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { Principal } from '../../shared/auth/principal.js';
import { BadRequestError, PlatformError } from '../../shared/errors.js';
import { parseInput } from '../../shared/validation.js';
import { describeError, type Logger } from '../../shared/log.js';
import type { AppDeps } from '../../shared/app-deps.js';
import { toPlatformError } from '../middleware/errors.js';
import { GATEWAY_VERSIONS, RawToolResult, type GatewayContext, type McpActionCatalog } from './actions/registry.js';

export interface DispatchContext {
  principal: Principal;
  deps: AppDeps;
  em: EntityManager;
  gateway: GatewayContext;
  catalog: McpActionCatalog;
  requestId: string;
  log: Logger;
}

/** A tool failure: `isError` with the spec's envelope as JSON text, so clients and models can read the error class. */
export function toolError(error: PlatformError, requestId: string): CallToolResult {
  const envelope = {
    error: error.message,
    error_type: error.errorType,
    request_id: requestId,
    ...(error.payload ? { payload: error.payload } : {}),
  };
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(envelope) }] };
}

function toolSuccess(result: unknown): CallToolResult {
  if (result instanceof RawToolResult) return result.result;
  const structured = result !== null && typeof result === 'object' && !Array.isArray(result);
  return {
    content: [{ type: 'text', text: JSON.stringify(result ?? null) }],
    ...(structured ? { structuredContent: result as Record<string, unknown> } : {}),
  };
}

/** Finds the action for this version or explains why there is none (other version, not yet available, unknown). */
function resolveAction(name: string, gateway: GatewayContext, catalog: McpActionCatalog) {
  const { version, publicOrigin } = gateway;
  if (!catalog.names(version).includes(name)) {
    const other = GATEWAY_VERSIONS.find((v) => v !== version && catalog.names(v).includes(name));
    if (other) {
      throw new BadRequestError(
        `The "${name}" action is not part of the ${version} gateway; it is only on /mcp/${other}/ (connect to ${publicOrigin}/mcp/${other}/ to use it).`,
        { reason: 'action_not_in_version', action: name, gateway_version: version, available_on: `/mcp/${other}/` },
      );
    }
    throw new BadRequestError(
      `Unknown action "${name}". Actions on this gateway: ${catalog.names(version).join(', ')}.`,
      {
        reason: 'unknown_action',
        action: name,
        actions: catalog.names(version),
      },
    );
  }
  const def = catalog.find(name, version);
  if (!def) {
    throw new PlatformError('not_available_here', `The "${name}" action is not available on this deployment yet.`, {
      reason: 'action_not_available',
      action: name,
    });
  }
  return def;
}

const strict = new WeakMap<z.ZodObject, z.ZodObject>();
/** An action's parameters refusing undeclared keys (built once per action). */
function strictParams(params: z.ZodObject): z.ZodObject {
  let schema = strict.get(params);
  if (!schema) strict.set(params, (schema = params.strict()));
  return schema;
}

/** Runs one `platform` tool call: picks the action, validates its own parameters, maps refusals to tool errors. */
export async function dispatchPlatformCall(
  args: Record<string, unknown>,
  ctx: DispatchContext,
): Promise<CallToolResult> {
  const { action, ...rest } = args;
  try {
    const def = resolveAction(String(action), ctx.gateway, ctx.catalog);
    const given = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined && v !== null));
    // Strict: a parameter the action does not take is refused with the ones it does (shared/validation.ts).
    const params = parseInput(strictParams(def.params), given, [], `parameters for "${def.name}"`, {
      action: def.name,
    });
    return toolSuccess(await def.handler({ ...ctx, params, version: ctx.gateway.version }));
  } catch (err) {
    const { error, unexpected } = toPlatformError(err);
    if (unexpected) ctx.log.error('mcp action failed', { action: String(action), ...describeError(err) });
    return toolError(error, ctx.requestId);
  }
}
