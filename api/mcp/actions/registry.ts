import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { Principal } from '../../../shared/auth/principal.js';
import type { Logger } from '../../../shared/log.js';
import type { AppDeps } from '../../deps.js';

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
}

// Actions differ in their parameter schemas; the registry only needs the erased shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyMcpAction = McpActionDefinition<any>;

/** A handler result passed to the client as is (images, resource links…). */
export class RawToolResult {
  constructor(readonly result: CallToolResult) {}
}

const registry = new Map<string, AnyMcpAction[]>();

/**
 * Declares and registers an action. Any module may register (imported from `actions/index.ts`);
 * an action name may be registered once per version.
 */
export function defineMcpAction<S extends AnyObject>(def: McpActionDefinition<S>): McpActionDefinition<S> {
  if ('action' in def.params.shape) throw new Error(`MCP action ${def.name}: "action" is the dispatch field, not a parameter`);
  const existing = registry.get(def.name) ?? [];
  for (const version of def.versions) {
    if (existing.some((d) => d.versions.includes(version))) throw new Error(`MCP action ${def.name} is registered twice for ${version}`);
  }
  registry.set(def.name, [...existing, def as AnyMcpAction]);
  return def;
}

/** The actions a version offers: the spec's list plus any further registered ones, in a stable order. */
export function actionNames(version: GatewayVersion): string[] {
  const names: string[] = version === 'v1' ? [...V2_ACTIONS, ...V1_ONLY_ACTIONS] : [...V2_ACTIONS];
  for (const [name, defs] of registry) {
    if (!names.includes(name) && defs.some((d) => d.versions.includes(version))) names.push(name);
  }
  return names;
}

export function findAction(name: string, version: GatewayVersion): AnyMcpAction | undefined {
  return registry.get(name)?.find((d) => d.versions.includes(version));
}

export function registeredActions(version: GatewayVersion): AnyMcpAction[] {
  return actionNames(version).flatMap((name) => findAction(name, version) ?? []);
}

/** The default-agent part of `status`, provided by the agents module when it registers. */
export type DefaultAgentReporter = (ctx: McpActionContext<Record<string, never>>) => Promise<unknown>;
let defaultAgentReporter: DefaultAgentReporter | undefined;

export function setDefaultAgentReporter(reporter: DefaultAgentReporter): void {
  defaultAgentReporter = reporter;
}

export function getDefaultAgentReporter(): DefaultAgentReporter | undefined {
  return defaultAgentReporter;
}
