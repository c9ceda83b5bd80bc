import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { candidateId } from '../../shared/desktop/local-cli.js';
import { MCP_CLIENTS, SERVER_NAME } from '../../shared/desktop/mcp-clients.js';
import { query } from '../helpers/db.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { startDesktopStack } from './support.js';

let s: OidcStack;
let stack: Stack;
let off: Stack;
let tmp: string;
let home: string;
let bin: string;
let bin2: string;
let admin: string;
let member: string;

const configPath = (id: string) => path.join(home, MCP_CLIENTS.find((c) => c.id === id)!.configFile(process.platform));

async function script(dir: string, name: string, body: string, mode = 0o755) {
  const file = path.join(dir, name);
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, mode);
  return file;
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'laptop-'));
  home = path.join(tmp, 'home');
  bin = path.join(tmp, 'bin');
  bin2 = path.join(tmp, 'bin2');
  await Promise.all([mkdir(home), mkdir(bin), mkdir(bin2)]);
  await script(bin, 'claude', 'echo "2.0.14 (Claude Code)"');
  await script(bin, 'codex', 'echo "codex-cli 0.46.0"; echo more');
  await script(bin2, 'codex', 'echo "shadowed 9.9"');
  await script(bin, 'gemini', 'exit 3');
  await script(bin, 'aider', 'echo "aider 0.80"', 0o644); // not executable: not a candidate
  s = await startDesktopStack({
    env: {
      PLATFORM_DESKTOP_MODE: 'true',
      PLATFORM_DESKTOP_HOME: home,
      PLATFORM_DESKTOP_CLI_PATH: [bin, bin2].join(path.delimiter),
    },
  });
  off = await startStack({ worker: false });
  stack = s.stack;
  ({ admin, member } = s.tokens);
});

afterAll(async () => {
  await s?.close();
  await off?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

const call = (method: string, p: string, body?: unknown, token = admin) => http(stack.url, method, p, { body, token });

describe('laptop routes off desktop mode and without rights', () => {
  it('answers 404 desktop_mode_unavailable off desktop mode and 403 to a caller without access_config_panel', async () => {
    const routes = [
      ['GET', '/api/desktop/mcp-clients', undefined],
      ['POST', '/api/desktop/mcp-clients/cursor/connect', { auth: 'url_only' }],
      ['POST', '/api/desktop/local-cli/detect', undefined],
      ['POST', '/api/desktop/local-cli/import', { candidate_ids: ['x'] }],
      ['POST', '/api/desktop/local-cli/decline', { candidate_ids: ['x'] }],
    ] as const;
    for (const [method, p, body] of routes) {
      const res = await http(off.url, method, p, { body });
      expect(res.status, p).toBe(404);
      expect(res.body.payload, p).toEqual({ code: 'desktop_mode_unavailable' });
      const refused = await call(method, p, body, member);
      expect(refused.status, p).toBe(403);
      expect(refused.body.error_type, p).toBe('forbidden');
    }
    expect(await readdir(home)).toEqual([]);
  });
});

describe('MCP clients', () => {
  it('lists the four clients with installed and configured flags from the home folder', async () => {
    await mkdir(path.dirname(configPath('cursor')), { recursive: true });
    await mkdir(path.dirname(configPath('vscode')), { recursive: true });
    const res = await call('GET', '/api/desktop/mcp-clients');
    expect(res.status).toBe(200);
    expect(res.body.data.gateway_url).toBe(`${stack.url}/mcp`);
    const byId = Object.fromEntries(res.body.data.clients.map((c: { id: string }) => [c.id, c]));
    expect(Object.keys(byId).sort()).toEqual(['claude_desktop', 'cursor', 'vscode', 'windsurf']);
    expect(byId.cursor).toMatchObject({
      installed: true,
      gateway_configured: false,
      config_path: configPath('cursor'),
    });
    expect(byId.vscode).toMatchObject({ installed: true, gateway_configured: false });
    expect(byId.windsurf).toMatchObject({ installed: false, gateway_configured: false });
    expect(byId.claude_desktop).toMatchObject({ installed: false });
  });

  it('refuses an unknown client (404), a client not installed (409) and a bad body (400/422), writing nothing', async () => {
    const unknown = await call('POST', '/api/desktop/mcp-clients/emacs/connect', {});
    expect(unknown.status).toBe(404);
    const missing = await call('POST', '/api/desktop/mcp-clients/windsurf/connect', {});
    expect(missing.status).toBe(409);
    expect(missing.body.payload).toEqual({ code: 'mcp_client_not_installed' });
    const undeclared = await call('POST', '/api/desktop/mcp-clients/cursor/connect', { auth: 'token', url: 'x' });
    expect(undeclared.status).toBe(422);
    expect(undeclared.body.error_type).toBe('unprocessable_entity');
    const bad = await call('POST', '/api/desktop/mcp-clients/cursor/connect', { auth: 'password' });
    expect(bad.status).toBe(400);
    await expect(stat(configPath('cursor'))).rejects.toThrow();
    await expect(stat(path.join(home, '.codeium'))).rejects.toThrow();
    const pats = await call('GET', '/api/auth/pats');
    expect(pats.body.data.tokens).toEqual([]);
  });

  it('merges the gateway entry with a minted token, keeps other servers and a backup, and the token works', async () => {
    const file = configPath('cursor');
    const original = { theme: 'dark', mcpServers: { other: { command: 'other-server', args: ['--x'] } } };
    await writeFile(file, JSON.stringify(original));
    const res = await call('POST', '/api/desktop/mcp-clients/cursor/connect', {});
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      auth: 'token',
      gateway_url: `${stack.url}/mcp`,
      backup_path: `${file}.bak`,
      client: { id: 'cursor', installed: true, gateway_configured: true },
    });
    expect(res.text).not.toMatch(/gp_[A-Za-z0-9]{8,}/);
    const written = JSON.parse(await readFile(file, 'utf8'));
    expect(written.theme).toBe('dark');
    expect(written.mcpServers.other).toEqual(original.mcpServers.other);
    const entry = written.mcpServers[SERVER_NAME];
    expect(entry.url).toBe(`${stack.url}/mcp`);
    expect(entry.headers.Authorization).toMatch(/^Bearer gp_/);
    expect(JSON.parse(await readFile(`${file}.bak`, 'utf8'))).toEqual(original);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await readdir(path.dirname(file))).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    // The minted token is the caller's and authenticates.
    const token = (entry.headers.Authorization as string).slice('Bearer '.length);
    const pats = await call('GET', '/api/auth/pats');
    expect(pats.body.data.tokens.map((t: { id: string; name: string; revoked_at: unknown }) => [t.id, t.name])).toEqual(
      [[res.body.data.pat_id, 'MCP client: Cursor']],
    );
    expect((await http(stack.url, 'GET', '/api/auth/pats', { token })).status).toBe(200);
    // A PAT caller cannot mint another token: 403, the file unchanged.
    const before = await readFile(file, 'utf8');
    const refused = await http(stack.url, 'POST', '/api/desktop/mcp-clients/cursor/connect', { body: {}, token });
    expect(refused.status).toBe(403);
    expect(await readFile(file, 'utf8')).toBe(before);
    // Connecting again replaces the entry and revokes the earlier token.
    const again = await call('POST', '/api/desktop/mcp-clients/cursor/connect', {});
    expect(again.status).toBe(200);
    expect(again.body.data.pat_id).not.toBe(res.body.data.pat_id);
    expect((await http(stack.url, 'GET', '/api/auth/pats', { token })).status).toBe(401);
    const list = await call('GET', '/api/desktop/mcp-clients');
    expect(list.body.data.clients.find((c: { id: string }) => c.id === 'cursor').gateway_configured).toBe(true);
  });

  it('writes the URL only for url_only (VS Code servers key, type http) into a new file, without a backup', async () => {
    const res = await call('POST', '/api/desktop/mcp-clients/vscode/connect', { auth: 'url_only' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ auth: 'url_only', pat_id: null, token_prefix: null, backup_path: null });
    const written = JSON.parse(await readFile(configPath('vscode'), 'utf8'));
    expect(written).toEqual({ servers: { [SERVER_NAME]: { type: 'http', url: `${stack.url}/mcp` } } });
  });

  it('refuses to overwrite a file that is not a JSON object (409)', async () => {
    await mkdir(path.dirname(configPath('windsurf')), { recursive: true });
    await writeFile(configPath('windsurf'), '{ not json');
    const res = await call('POST', '/api/desktop/mcp-clients/windsurf/connect', { auth: 'url_only' });
    expect(res.status).toBe(409);
    expect(res.body.payload).toEqual({ code: 'mcp_client_config_unreadable' });
    expect(await readFile(configPath('windsurf'), 'utf8')).toBe('{ not json');
  });
});

describe('local CLIs', () => {
  const claudeId = () => candidateId('claude', path.join(bin, 'claude'));
  const codexId = () => candidateId('codex', path.join(bin, 'codex'));
  const geminiId = () => candidateId('gemini', path.join(bin, 'gemini'));

  it('detects the executables on the configured PATH with their versions', async () => {
    const res = await call('POST', '/api/desktop/local-cli/detect');
    expect(res.status).toBe(200);
    const found = res.body.data.candidates.map((c: Record<string, unknown>) => [
      c.id,
      c.name,
      c.path,
      c.version,
      c.state,
    ]);
    expect(found).toEqual([
      [claudeId(), 'claude', path.join(bin, 'claude'), '2.0.14 (Claude Code)', 'new'],
      [codexId(), 'codex', path.join(bin, 'codex'), 'codex-cli 0.46.0', 'new'],
      [geminiId(), 'gemini', path.join(bin, 'gemini'), null, 'new'],
    ]);
    expect(res.body.data.declined).toEqual([]);
    const rows = await query<{ n: string }>(stack.db.url, 'select count(*) as n from desktop_local_clis');
    expect(Number(rows[0]!.n)).toBe(3);
  });

  it('refuses 0 or 101 ids (400), undeclared fields (422) and unknown ids (404), changing nothing', async () => {
    for (const p of ['/api/desktop/local-cli/import', '/api/desktop/local-cli/decline']) {
      expect((await call('POST', p, { candidate_ids: [] })).status, p).toBe(400);
      const many = Array.from({ length: 101 }, (_, i) => `id${i}`);
      expect((await call('POST', p, { candidate_ids: many })).status, p).toBe(400);
      expect((await call('POST', p, { candidate_ids: [claudeId()], extra: 1 })).status, p).toBe(422);
      const unknown = await call('POST', p, { candidate_ids: [claudeId(), 'cli_nope'] });
      expect(unknown.status, p).toBe(404);
      expect(unknown.body.payload).toEqual({ candidate_ids: ['cli_nope'] });
    }
    const rows = await query<{ state: string }>(stack.db.url, `select distinct state from desktop_local_clis`);
    expect(rows.map((r) => r.state)).toEqual(['new']);
  });

  it('imports candidates as agent-CLI backends and declines others; detect stops offering the declined', async () => {
    const imported = await call('POST', '/api/desktop/local-cli/import', { candidate_ids: [claudeId(), claudeId()] });
    expect(imported.status).toBe(200);
    expect(imported.body.data.candidates).toMatchObject([
      { id: claudeId(), state: 'imported', backend: 'agent_cli', command: [path.join(bin, 'claude')] },
    ]);
    const declined = await call('POST', '/api/desktop/local-cli/decline', { candidate_ids: [codexId()] });
    expect(declined.status).toBe(200);
    expect(declined.body.data.candidates).toMatchObject([{ id: codexId(), state: 'declined' }]);
    // 100 ids is the upper bound: accepted shape (here refused only because they are unknown).
    const hundred = [codexId(), ...Array.from({ length: 99 }, (_, i) => `cli_unknown${i}`)];
    expect((await call('POST', '/api/desktop/local-cli/decline', { candidate_ids: hundred })).status).toBe(404);

    const again = await call('POST', '/api/desktop/local-cli/detect');
    expect(again.body.data.candidates.map((c: { id: string; state: string }) => [c.id, c.state])).toEqual([
      [claudeId(), 'imported'],
      [geminiId(), 'new'],
    ]);
    expect(again.body.data.declined.map((c: { id: string }) => c.id)).toEqual([codexId()]);
    const rows = await query<{ id: string; state: string; imported_by: string | null; command: string[] }>(
      stack.db.url,
      `select id, state, imported_by, command from desktop_local_clis order by name`,
    );
    expect(rows).toEqual([
      { id: claudeId(), state: 'imported', imported_by: expect.any(String), command: [path.join(bin, 'claude')] },
      { id: codexId(), state: 'declined', imported_by: null, command: [path.join(bin, 'codex')] },
      { id: geminiId(), state: 'new', imported_by: null, command: [path.join(bin, 'gemini')] },
    ]);
  });
});
