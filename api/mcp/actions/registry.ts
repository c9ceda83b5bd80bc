import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { Principal } from '../../../shared/auth/principal.js';
import type { Logger } from '../../../shared/log.js';
import type { AppDeps } from '../../../shared/app-deps.js';

/** Gateway versions (spec, Versioning item 1): `/mcp/` and `/mcp/v2/` are v2, `/mcp/v1/` is legacy. */
export type GatewayVersion = 'v1' | 'v2';
export const GATEWAY_VERSIONS: readonly GatewayVersion[] = ['v1', 'v2'];

/** The spec's v2 actions; v1 has them all plus the four legacy ones. */
export const V2_ACTIONS = [
  'list_agents',
  'thread_create',
  'thread_continue',
  'thread_get',
  'update_goal',
  'read_skill',
  'status',
  'help',
  'start_thread',
  'room_list',
  'room_create',
  'room_join',
  'room_send',
  'room_read',
  'room_who',
] as const;
export const V1_ONLY_ACTIONS = ['ask', 'login', 'login_status', 'logout'] as const;

/** Where the caller reached the gateway: its version and public URLs (built from configuration or the forwarded request). */
export interface GatewayContext {
  version: GatewayVersion;
  /** `https://host` the clients see. */
  publicOrigin: string;
  /** The gateway endpoint this request came in on, e.g. `https://host/mcp/v2/`. */
  endpoint: string;
}

export interface McpActionContext<P> {
  params: P;
  principal: Principal;
  deps: AppDeps;
  em: EntityManager;
  version: GatewayVersion;
  gateway: GatewayContext;
  /** The gateway's actions (what `status` and `help` describe). */
  catalog: McpActionCatalog;
  requestId: string;
  log: Logger;
}

type AnyObject = z.ZodObject<z.ZodRawShape>;

export interface McpActionDefinition<S extends AnyObject> {
  name: string;
  versions: readonly GatewayVersion[];
  description: string;
  /** The action's own parameters; the gateway advertises them as optional fields of one flat schema and validates them here. */
  params: S;
  /** Returns JSON-able data (sent as text and structured content) or a `RawToolResult` for other content such as images. */
  handler(ctx: McpActionContext<z.output<S>>): Promise<unknown>;
  /**
   * Why the action refuses every call of this caller on this deployment (configuration or the kind
   * of credential, never stored data), or undefined. `help` lists it as unavailable with that
   * reason; the handler refuses through the same check.
   */
  unavailable?(ctx: Pick<McpActionContext<unknown>, 'principal' | 'deps'>): string | undefined;
}

// Actions differ in their parameter schemas; the registry only needs the erased shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyMcpAction = McpActionDefinition<any>;

/** A handler result passed to the client as is (images, resource links…). */
export class RawToolResult {
  constructor(readonly result: CallToolResult) {}
}

/**
 * Declares an action (checks its shape; registers nothing). Actions take part in the gateway only
 * through the explicit list in `actions/index.ts`.
 */
export function defineMcpAction<S extends AnyObject>(def: McpActionDefinition<S>): McpActionDefinition<S> {
  if ('action' in def.params.shape)
    throw new Error(`MCP action ${def.name}: "action" is the dispatch field, not a parameter`);
  return def;
}

/**
 * The actions one gateway offers, built from an explicit list (`actions/index.ts` for the real
 * gateway; tests build their own). An action name may appear once per version.
 */
export class McpActionCatalog {
  private readonly byName = new Map<string, AnyMcpAction[]>();

  constructor(actions: readonly AnyMcpAction[]) {
    for (const def of actions) {
      const existing = this.byName.get(def.name) ?? [];
      for (const version of def.versions) {
        if (existing.some((d) => d.versions.includes(version)))
          throw new Error(`MCP action ${def.name} is listed twice for ${version}`);
      }
      this.byName.set(def.name, [...existing, def]);
    }
  }

  /** The actions a version offers: the spec's list plus any further listed ones, in a stable order. */
  names(version: GatewayVersion): string[] {
    const names: string[] = version === 'v1' ? [...V2_ACTIONS, ...V1_ONLY_ACTIONS] : [...V2_ACTIONS];
    for (const [name, defs] of this.byName) {
      if (!names.includes(name) && defs.some((d) => d.versions.includes(version))) names.push(name);
    }
    return names;
  }

  find(name: string, version: GatewayVersion): AnyMcpAction | undefined {
    return this.byName.get(name)?.find((d) => d.versions.includes(version));
  }

  /** The implemented actions of a version, in `names` order. */
  actions(version: GatewayVersion): AnyMcpAction[] {
    return this.names(version).flatMap((name) => this.find(name, version) ?? []);
  }
}
