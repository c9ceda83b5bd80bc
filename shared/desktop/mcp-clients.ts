import { randomUUID } from 'node:crypto';
import { copyFile, mkdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ConflictError, NotFoundError } from '../errors.js';
import type { DesktopDeps } from './setup.js';
import { DesktopCodes } from './error-codes.js';

/**
 * MCP clients on this laptop that the platform's MCP gateway can be added to (laptop mode, issue 18).
 * Each client keeps a JSON configuration under the user's home (`PLATFORM_DESKTOP_HOME`, default the
 * process user's home); a client is installed when the folder holding that file exists. Connecting
 * merges one server entry, `SERVER_NAME`, into the file: other servers and keys are kept, the previous
 * file is copied to `<file>.bak`, and the new one is written to a temporary file then renamed over.
 */
export const SERVER_NAME = 'data-agent-platform';

export type McpClientId = 'claude_desktop' | 'cursor' | 'vscode' | 'windsurf';

export interface GatewayEntry {
  url: string;
  /** `Bearer <token>`; absent when connecting with the URL only (the client signs in through OAuth or auth is off). */
  authorization: string | null;
}

interface ClientDef {
  id: McpClientId;
  name: string;
  /** The configuration file, relative to the home folder, for this operating system. */
  configFile: (platform: NodeJS.Platform) => string;
  /** The key holding the servers object. */
  serversKey: 'mcpServers' | 'servers';
  /** The entry this client reads for a remote Streamable HTTP server. */
  entry: (gw: GatewayEntry) => Record<string, unknown>;
  /** The gateway URL a stored entry points at (to tell whether ours is configured). */
  entryUrl: (entry: Record<string, unknown>) => string | null;
}

const appSupport = (platform: NodeJS.Platform, ...parts: string[]) =>
  platform === 'darwin'
    ? path.join('Library', 'Application Support', ...parts)
    : platform === 'win32'
      ? path.join('AppData', 'Roaming', ...parts)
      : path.join('.config', ...parts);

const headers = (gw: GatewayEntry) => (gw.authorization ? { headers: { Authorization: gw.authorization } } : {});
const str = (v: unknown) => (typeof v === 'string' ? v : null);

export const MCP_CLIENTS: readonly ClientDef[] = [
  {
    id: 'claude_desktop',
    name: 'Claude Desktop',
    configFile: (p) => appSupport(p, 'Claude', 'claude_desktop_config.json'),
    serversKey: 'mcpServers',
    // Claude Desktop starts local (stdio) servers: the `mcp-remote` bridge reaches the HTTP gateway.
    entry: (gw) => ({
      command: 'npx',
      args: ['-y', 'mcp-remote', gw.url, ...(gw.authorization ? ['--header', 'Authorization:${PLATFORM_AUTH}'] : [])],
      ...(gw.authorization ? { env: { PLATFORM_AUTH: gw.authorization } } : {}),
    }),
    entryUrl: (e) => {
      const args = Array.isArray(e.args) ? e.args : [];
      const i = args.indexOf('mcp-remote');
      return i >= 0 ? str(args[i + 1]) : null;
    },
  },
  {
    id: 'cursor',
    name: 'Cursor',
    configFile: () => path.join('.cursor', 'mcp.json'),
    serversKey: 'mcpServers',
    entry: (gw) => ({ url: gw.url, ...headers(gw) }),
    entryUrl: (e) => str(e.url),
  },
  {
    id: 'vscode',
    name: 'Visual Studio Code',
    configFile: (p) => appSupport(p, 'Code', 'User', 'mcp.json'),
    serversKey: 'servers',
    entry: (gw) => ({ type: 'http', url: gw.url, ...headers(gw) }),
    entryUrl: (e) => str(e.url),
  },
  {
    id: 'windsurf',
    name: 'Windsurf',
    configFile: () => path.join('.codeium', 'windsurf', 'mcp_config.json'),
    serversKey: 'mcpServers',
    entry: (gw) => ({ serverUrl: gw.url, ...headers(gw) }),
    entryUrl: (e) => str(e.serverUrl),
  },
];

export const MCP_CLIENT_IDS = MCP_CLIENTS.map((c) => c.id) as [McpClientId, ...McpClientId[]];

export interface McpClientView {
  id: McpClientId;
  name: string;
  config_path: string;
  installed: boolean;
  /** The file has a server entry pointing at this deployment's gateway. */
  gateway_configured: boolean;
  /** The file exists but is not a JSON object (connect refuses to overwrite it). */
  config_unreadable: boolean;
}

export async function desktopHome(deps: DesktopDeps): Promise<string> {
  return (await deps.settings.get('desktop.home')) ?? os.homedir();
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

async function isDir(p: string): Promise<boolean> {
  return (await stat(p).catch(() => null))?.isDirectory() ?? false;
}

/** The file's JSON object; `null` when absent; `'unreadable'` when present but not a JSON object. */
async function readConfig(file: string): Promise<Record<string, unknown> | null | 'unreadable'> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    return 'unreadable';
  }
  if (!text.trim()) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? parsed : 'unreadable';
  } catch {
    return 'unreadable';
  }
}

function configured(def: ClientDef, config: Record<string, unknown> | null | 'unreadable', gatewayUrl: string) {
  if (!isObject(config)) return false;
  const servers = config[def.serversKey];
  if (!isObject(servers)) return false;
  return Object.values(servers).some((e) => isObject(e) && def.entryUrl(e) === gatewayUrl);
}

async function view(def: ClientDef, home: string, gatewayUrl: string): Promise<McpClientView> {
  const file = path.join(home, def.configFile(process.platform));
  const installed = await isDir(path.dirname(file));
  const config = installed ? await readConfig(file) : null;
  return {
    id: def.id,
    name: def.name,
    config_path: file,
    installed,
    gateway_configured: configured(def, config, gatewayUrl),
    config_unreadable: config === 'unreadable',
  };
}

export async function listMcpClients(home: string, gatewayUrl: string): Promise<McpClientView[]> {
  return Promise.all(MCP_CLIENTS.map((def) => view(def, home, gatewayUrl)));
}

export function mcpClient(id: string): ClientDef {
  const def = MCP_CLIENTS.find((c) => c.id === id);
  if (!def) throw new NotFoundError(`No MCP client "${id}"; known: ${MCP_CLIENT_IDS.join(', ')}.`);
  return def;
}

/** Refuses (409) a client that is not installed or whose file cannot be merged; call before minting a token. */
export async function assertConnectable(def: ClientDef, home: string): Promise<void> {
  const v = await view(def, home, '');
  if (!v.installed)
    throw new ConflictError(`${def.name} is not installed on this laptop (no ${path.dirname(v.config_path)}).`, {
      code: DesktopCodes.mcp_client_not_installed,
    });
  if (v.config_unreadable)
    throw new ConflictError(`${v.config_path} is not a JSON object; fix or remove it before connecting.`, {
      code: DesktopCodes.mcp_client_config_unreadable,
    });
}

/**
 * Merges the gateway entry into the client's file (other servers and keys kept), keeping the previous
 * file as `<file>.bak`; written atomically (temporary file, then rename). Answers the backup's path.
 */
export async function writeGatewayEntry(
  def: ClientDef,
  home: string,
  gw: GatewayEntry,
): Promise<{ client: McpClientView; backup_path: string | null }> {
  await assertConnectable(def, home);
  const file = path.join(home, def.configFile(process.platform));
  const current = await readConfig(file);
  if (current === 'unreadable') throw new Error('unreachable: checked by assertConnectable');
  const config = current ?? {};
  const servers = isObject(config[def.serversKey]) ? (config[def.serversKey] as Record<string, unknown>) : {};
  const merged = { ...config, [def.serversKey]: { ...servers, [SERVER_NAME]: def.entry(gw) } };
  let backup: string | null = null;
  if (current !== null) {
    backup = `${file}.bak`;
    await copyFile(file, backup);
  }
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${randomUUID()}.tmp`;
  try {
    // The entry may carry a token: readable by the user only.
    await writeFile(tmp, `${JSON.stringify(merged, null, 2)}\n`, { mode: 0o600 });
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  return { client: await view(def, home, gw.url), backup_path: backup };
}
