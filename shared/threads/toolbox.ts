import type { Principal } from '../auth/principal.js';
import type { ToolSpec } from '../llm/client.js';

/**
 * The tools an agent may call during a turn: their model-facing specs for the agent's tool groups,
 * and invocation as the agent. Implemented over the same registry `POST /api/tool_call` uses, and
 * injected into the worker's activities.
 */
export interface AgentToolbox {
  specs(toolGroups: readonly string[]): ToolSpec[];
  /** Runs a tool as `principal`; a refusal resolves to an error result (the model sees it), not a throw. */
  invoke(
    name: string,
    args: unknown,
    principal: Principal,
    idempotencyKey: string,
  ): Promise<{ ok: boolean; result: unknown }>;
}
