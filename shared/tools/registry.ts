import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Principal, PrincipalKind } from '../auth/principal.js';
import type { Permission } from '../auth/rbac.js';
import type { AppDeps } from '../app-deps.js';

export interface ToolContext<I> {
  input: I;
  principal: Principal;
  deps: AppDeps;
  em: EntityManager;
  requestId: string;
  /**
   * Set when the caller may retry the same call (an agent turn's tool call after a worker crash):
   * tools with effects use it so a retry finds the first result instead of acting twice.
   */
  idempotencyKey?: string;
}

/**
 * One tool callers (agents over `POST /api/tool_call` and in their turns) can invoke: its name,
 * argument and result schemas, who may call it, and its handler. The handler returns the tool's result.
 */
export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  /** The arguments: strict objects (an unknown argument is refused naming the known ones). */
  input: S;
  /** What the handler answers, as published (`shared/tools/results.ts`); documentation, never checked on a call. */
  result: z.ZodType;
  /** Principal kinds allowed to call; others answer 403. */
  principalKinds: readonly PrincipalKind[];
  /**
   * A permission required of non-agent callers (agents act within their token's bot and thread); a
   * function when the tool's actions need different ones (checked once the input is parsed).
   */
  permission?: Permission | ((input: z.output<S>) => Permission);
  handler(ctx: ToolContext<z.output<S>>): Promise<unknown>;
}

/** Declares a tool; the identity function exists for type inference of the handler's input. */
export function defineTool<S extends z.ZodType>(tool: ToolDefinition<S>): ToolDefinition<S> {
  return tool;
}

// Tools are heterogenous in their input schemas; the registry only needs the erased shape.
export type AnyTool = ToolDefinition<z.ZodType>;

export class ToolRegistry {
  private readonly tools = new Map<string, AnyTool>();

  constructor(tools: readonly AnyTool[]) {
    for (const tool of tools) {
      if (this.tools.has(tool.name)) throw new Error(`tool ${tool.name} is registered twice`);
      this.tools.set(tool.name, tool);
    }
  }

  get(name: string): AnyTool | undefined {
    return this.tools.get(name);
  }

  names(): string[] {
    return [...this.tools.keys()].sort();
  }

  /** Every tool, in name order. */
  all(): AnyTool[] {
    return this.names().map((name) => this.tools.get(name)!);
  }
}
