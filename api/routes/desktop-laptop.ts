import { z } from 'zod';
import { detectLocalClis } from '../../shared/desktop/local-cli.js';
import { connectMcpClient, decideCandidates } from '../../shared/desktop/mcp-connect.js';
import { desktopHome, listMcpClients, MCP_CLIENT_IDS, SERVER_NAME } from '../../shared/desktop/mcp-clients.js';
import { desktopSetup } from '../../shared/desktop/setup.js';
import { publicOrigin } from '../mcp/public-url.js';
import { defineRoute, successEnvelope } from '../http/route.js';

/**
 * Laptop-mode route families of spec "Desktop mode" whose paths the spec leaves unnamed: MCP client
 * list and connect, local-CLI detect, import and decline. Off desktop mode they answer 404
 * `desktop_mode_unavailable` like the other laptop-mode families; callers without
 * `access_config_panel` get 403.
 */
const OFF = 'Desktop mode is not enabled in this deployment (`desktop_mode_unavailable`)';
const config = { kind: 'authenticated', permission: 'access_config_panel' } as const;

const McpClient = z.object({
  id: z.enum(MCP_CLIENT_IDS),
  name: z.string(),
  config_path: z.string().describe("The client's configuration file under the laptop user's home"),
  installed: z.boolean().describe("The folder holding the client's configuration file exists"),
  gateway_configured: z.boolean().describe("A server entry points at this deployment's MCP gateway"),
  config_unreadable: z.boolean().describe('The file exists but is not a JSON object (connect answers 409)'),
});

const Candidate = z.object({
  id: z.string(),
  name: z.string().describe('The binary: `claude`, `codex`, `gemini` or `aider`'),
  label: z.string(),
  path: z.string(),
  version: z.string().nullable().describe('First line of `<bin> --version`; null when it failed or timed out'),
  state: z.enum(['new', 'imported', 'declined']),
  backend: z.literal('agent_cli').describe('Imported candidates are agent-CLI code-agent backends'),
  command: z.array(z.string()).describe('The argv the backend runs (no shell)'),
  detected_at: z.string(),
  imported_at: z.string().nullable(),
  declined_at: z.string().nullable(),
});

const CandidateIds = z
  .object({
    candidate_ids: z.array(z.string().min(1).max(64)).min(1).max(100).describe('1 to 100 candidate ids from detect'),
  })
  .strict();

const gatewayUrl = (origin: string) => `${origin}/mcp`;

const CANDIDATE_SUMMARIES = {
  import: 'Import detected CLIs as local agent-CLI code-agent backends',
  decline: 'Decline detected CLIs: detect stops offering them',
};

function candidateRoute(action: 'import' | 'decline') {
  return defineRoute({
    method: 'post',
    path: `/api/desktop/local-cli/${action}`,
    operationId: action === 'import' ? 'desktopLocalCliImport' : 'desktopLocalCliDecline',
    summary: CANDIDATE_SUMMARIES[action],
    description: 'All or nothing: an unknown id answers 404 and changes no candidate.',
    tags: ['desktop'],
    access: config,
    body: CandidateIds,
    bodyKind: 'config',
    responses: {
      200: {
        description: action === 'import' ? 'Imported' : 'Declined',
        schema: successEnvelope(z.object({ candidates: z.array(Candidate) })),
      },
      404: { description: `${OFF}; or an unknown candidate id (\`payload.candidate_ids\`)` },
    },
    handler: async ({ deps, em, body, principal }) => ({
      success: true,
      data: { candidates: await decideCandidates(deps, em, body.candidate_ids, action, principal.id) },
    }),
  });
}

export const desktopLaptopRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/desktop/mcp-clients',
    operationId: 'desktopMcpClients',
    summary: 'MCP clients on this laptop the platform can be connected to',
    description: `Claude Desktop, Cursor, Visual Studio Code and Windsurf; the server entry is named \`${SERVER_NAME}\`.`,
    tags: ['desktop'],
    access: config,
    responses: {
      200: {
        description: 'Clients',
        schema: successEnvelope(z.object({ gateway_url: z.string(), clients: z.array(McpClient) })),
      },
      404: { description: OFF },
    },
    handler: async ({ deps, koa }) => {
      await desktopSetup(deps);
      const url = gatewayUrl(publicOrigin(koa, deps.config));
      return { success: true, data: { gateway_url: url, clients: await listMcpClients(await desktopHome(deps), url) } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/desktop/mcp-clients/:client_id/connect',
    operationId: 'desktopMcpClientConnect',
    summary: "Add this deployment's MCP gateway to a client's configuration",
    description:
      "Merges one server entry into the client's file (other servers kept; the previous file kept as `<file>.bak`; written to a temporary file, then renamed). `auth` `token` (default) mints a personal access token for the caller (named `MCP client: <client>`, replacing the one an earlier connect minted) and writes it into the entry; `url_only` writes the URL only (the client signs in itself). The token is never answered.",
    tags: ['desktop'],
    access: config,
    params: z.object({ client_id: z.string().min(1).max(64) }),
    body: z.object({ auth: z.enum(['token', 'url_only']).default('token').describe('Default `token`') }).strict(),
    bodyKind: 'config',
    responses: {
      200: {
        description: 'Connected',
        schema: successEnvelope(
          z.object({
            client: McpClient,
            gateway_url: z.string(),
            auth: z.enum(['token', 'url_only']),
            pat_id: z.string().nullable().describe('The minted token (`auth` `token`); never its value'),
            token_prefix: z.string().nullable(),
            backup_path: z.string().nullable().describe('The previous file, when there was one'),
          }),
        ),
      },
      403: {
        description:
          'Minting a token needs a person signed in through the identity provider (a personal access token cannot mint another; use `url_only`)',
      },
      404: { description: `${OFF}; or an unknown client id` },
      409: {
        description:
          'The client is not installed (`mcp_client_not_installed`) or its file is not a JSON object (`mcp_client_config_unreadable`)',
      },
    },
    handler: async ({ deps, em, params, body, principal, koa }) => ({
      success: true,
      data: await connectMcpClient(
        deps,
        em,
        principal,
        params.client_id,
        body.auth,
        gatewayUrl(publicOrigin(koa, deps.config)),
      ),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/desktop/local-cli/detect',
    operationId: 'desktopLocalCliDetect',
    summary: 'Detect coding CLIs on the PATH (claude, codex, gemini, aider) as candidates',
    description:
      'Runs `<bin> --version` (no shell, 5 s timeout) for each one found. `candidates` are the found ones not declined (`new` or `imported`); `declined` the found ones declined earlier.',
    tags: ['desktop'],
    access: config,
    responses: {
      200: {
        description: 'Candidates',
        schema: successEnvelope(z.object({ candidates: z.array(Candidate), declined: z.array(Candidate) })),
      },
      404: { description: OFF },
    },
    handler: async ({ deps, em }) => {
      await desktopSetup(deps);
      return { success: true, data: await detectLocalClis(deps, em) };
    },
  }),
  candidateRoute('import'),
  candidateRoute('decline'),
];
