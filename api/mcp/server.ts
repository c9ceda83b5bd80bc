import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../shared/auth/principal.js';
import type { GatewayVersion, McpActionCatalog } from './actions/registry.js';
import { dispatchPlatformCall, type DispatchContext } from './dispatch.js';
import { platformInputSchema } from './schema.js';

export const GATEWAY_SERVER_NAME = 'data-agent-platform';
export const GATEWAY_SERVER_VERSION = '0.1.0';

const descriptions = new WeakMap<McpActionCatalog, Map<GatewayVersion, string>>();

/** The tool's description for a version, built once per catalog (servers are created per request). */
function toolDescription(catalog: McpActionCatalog, version: GatewayVersion): string {
  let byVersion = descriptions.get(catalog);
  if (!byVersion) descriptions.set(catalog, (byVersion = new Map()));
  let text = byVersion.get(version);
  if (text === undefined) byVersion.set(version, (text = buildToolDescription(catalog, version)));
  return text;
}

function buildToolDescription(catalog: McpActionCatalog, version: GatewayVersion): string {
  const lines = catalog.names(version).map((name) => {
    const def = catalog.find(name, version);
    return `- ${name}: ${def ? def.description : 'not available on this deployment yet'}`;
  });
  return [
    `The data-agent platform (${version} gateway). Pick an agent, hold threads with it, and read the platform's status.`,
    "Set `action` and that action's parameters; `help` lists each action's parameters.",
    ...lines,
  ].join('\n');
}

/** The caller's principal as the route attached it (`req.auth.extra.principal`); absent means the request bypassed authentication. */
export function principalOf(authInfo: AuthInfo | undefined): Principal {
  const principal = authInfo?.extra?.principal as Principal | undefined;
  if (!principal) throw new McpError(ErrorCode.InvalidRequest, 'The gateway request carries no authenticated caller.');
  return principal;
}

/** A fresh server for one request (stateless mode: servers and transports are never reused). */
export function createPlatformServer(ctx: Omit<DispatchContext, 'principal'>): McpServer {
  const { version } = ctx.gateway;
  const server = new McpServer(
    { name: GATEWAY_SERVER_NAME, version: GATEWAY_SERVER_VERSION },
    { instructions: `Call the "platform" tool with action "help" to see what this ${version} gateway offers.` },
  );
  server.registerTool(
    'platform',
    {
      title: 'Data-agent platform',
      description: toolDescription(ctx.catalog, version),
      inputSchema: platformInputSchema(ctx.catalog, version),
    },
    (args, extra) =>
      dispatchPlatformCall(args as Record<string, unknown>, { ...ctx, principal: principalOf(extra.authInfo) }),
  );
  return server;
}
