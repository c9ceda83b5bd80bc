import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { PlatformError } from '../errors.js';
import { toolsOfGroups } from '../agents/tool-groups.js';
import type { AgentToolbox } from '../threads/toolbox.js';
import type { AppDeps } from '../app-deps.js';
import { toolRegistry } from './index.js';
import { invokeTool } from './invoke.js';

/** The registry's tools as an agent sees them: specs for its tool groups, invocation as the agent. */
export function createAgentToolbox(deps: AppDeps): AgentToolbox {
  return {
    specs(toolGroups) {
      return toolRegistry
        .names()
        .filter((name) => toolsOfGroups(toolGroups).has(name))
        .map((name) => {
          const tool = toolRegistry.get(name)!;
          const schema = z.toJSONSchema(tool.input, { unrepresentable: 'any' }) as Record<string, unknown>;
          delete schema.$schema;
          // Chat APIs want an object at the top even when the input is a union of actions.
          return {
            type: 'function' as const,
            function: { name, description: tool.description, parameters: { type: 'object', ...schema } },
          };
        });
    },
    async invoke(name, args, principal, idempotencyKey) {
      try {
        const result = await invokeTool(name, args, principal, {
          deps,
          em: deps.orm.em.fork(),
          requestId: `turn_${randomUUID().replace(/-/g, '')}`,
          idempotencyKey,
        });
        return { ok: true, result };
      } catch (err) {
        if (err instanceof PlatformError)
          return {
            ok: false,
            result: { error: err.message, error_type: err.errorType, ...(err.payload ? { payload: err.payload } : {}) },
          };
        throw err;
      }
    },
  };
}
