/**
 * A newcomer's walk of the README over `npm start`: the default layout (a RELATIVE data folder under
 * the project, the built-in agents and blueprints, no model provider configured), then the README's
 * own commands, section by section, as a person would type them. The other suites start the API in
 * process with absolute temporary folders and fixtures; this one is what a user meets first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Connection, Client as TemporalClient } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { portOutsideEphemeralRange } from '../helpers/ports.js';
import { startGitServer, type GitServer } from '../helpers/git-server.js';
import { http } from '../helpers/stack.js';
import { callPlatform, connectMcp } from '../mcp/support.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** Relative, as the default `.data` is: every path the system derives from it must still work. */
const relativeDataDir = path.join('.data', `readme-walk-${process.pid}`);
/** The README's `PLATFORM_INTERNAL_TOKEN`, which Prometheus sends as a bearer token. */
const INTERNAL_TOKEN = `walk-internal-${process.pid}`;

let child: ChildProcess | undefined;
let output = '';
let base = '';
let temporalAddress = '';
let gitServer: GitServer | undefined;

/** Polls `check` every 250 ms, at most `tries` times, answering its first truthy value. */
async function until<T>(check: () => Promise<T | undefined | false> | T | undefined | false, tries = 240) {
  for (let i = 0; i < tries; i++) {
    const value = await check();
    if (value) return value;
    await sleep(250);
  }
  return undefined;
}

const tool = (name: string, args: Record<string, unknown>) =>
  http(base, 'POST', '/api/tool_call', { body: { tool: name, arguments: args } });

beforeAll(async () => {
  await mkdir(path.join(root, relativeDataDir), { recursive: true });
  // PostgreSQL runs as the `postgres` user when we are root: it must be able to enter the folder.
  await chmod(path.join(root, '.data'), 0o755);
  await chmod(path.join(root, relativeDataDir), 0o755);
  gitServer = await startGitServer({ username: 'bot', password: 'walk-token' });
  const [port, temporalPort, uiPort, pgPort] = [
    await portOutsideEphemeralRange(),
    await portOutsideEphemeralRange(),
    await portOutsideEphemeralRange(),
    await portOutsideEphemeralRange(),
  ];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PLATFORM_DATA_DIR: relativeDataDir,
    PORT: String(port),
    TEMPORAL_DEV_PORT: String(temporalPort),
    TEMPORAL_UI_PORT: String(uiPort),
    EMBEDDED_PG_PORT: String(pgPort),
    TEMPORAL_CLI_PATH: inject('temporalCliPath'),
    // The README's managed-sources section: a Git host on this machine needs the private-network flag.
    PLATFORM_EGRESS_ALLOW_PRIVATE: 'true',
    PLATFORM_INTERNAL_TOKEN: INTERNAL_TOKEN,
    LOG_LEVEL: 'warn',
  };
  for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_TASK_QUEUE', 'AUTH_PROVIDER']) delete env[name];
  child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/start.ts')], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  await until(() => output.includes('Ctrl-C stops everything') || child!.exitCode !== null, 720);
  base = `http://127.0.0.1:${port}`;
  temporalAddress = `127.0.0.1:${temporalPort}`;
}, 240_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGINT');
    await until(() => child!.exitCode !== null || child!.signalCode !== null, 200);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
  await gitServer?.close();
  await rm(path.join(root, relativeDataDir), { recursive: true, force: true });
}, 90_000);

describe('the README, walked over npm start on the default layout', () => {
  it('prints where everything is, once the worker polls', () => {
    expect(output).toContain('Ctrl-C stops everything');
    for (const line of [
      'API',
      'OpenAPI',
      'API reference',
      'Readiness',
      'Temporal UI',
      'Review console',
      'MCP endpoint',
    ])
      expect(output, line).toMatch(new RegExp(`^  ${line} +http://`, 'm'));
    expect(output).toMatch(/^ {2}Worker +polling task queue /m);
    expect(output).toContain(`${base}/console`);
    expect(output).toContain(`${base}/mcp/`);
    expect(output).toContain('authentication is OFF');
  });

  it('"Try it": readiness, an echo job, and the job found in Temporal by its search attributes', async () => {
    expect((await http(base, 'GET', '/readyz')).status).toBe(200);
    const echo = await http(base, 'POST', '/api/jobs/echo', { body: { message: 'hello' } });
    expect(echo.status, echo.text).toBe(200);
    const jobId = echo.body.data.job_id as string;
    const connection = await Connection.connect({ address: temporalAddress });
    try {
      const client = new TemporalClient({ connection });
      const found = await until(async () => {
        const ids: string[] = [];
        for await (const wf of client.workflow.list({
          query: `PlatformResourceId = "${jobId}" AND PlatformStatus = "completed"`,
        }))
          ids.push(wf.workflowId);
        return ids.length ? ids : undefined;
      }, 80);
      expect(found).toEqual([`echo/${jobId}`]);
    } finally {
      await connection.close();
    }
  });

  it('Action Review: propose, list, approve; the proposal ends executed', async () => {
    const created = await http(base, 'POST', '/api/action-review/proposals', {
      body: {
        action_type: 'learning.adopt.v1',
        payload: { learning_id: 'l1', title: 'UTC', content: 'Prefer UTC' },
        expected_effect: 'adopt one learning',
      },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.proposal_id as string;
    const inbox = await http(base, 'GET', '/api/action-review/proposals');
    expect(inbox.status).toBe(200);
    expect(inbox.text).toContain(id);
    const approved = await http(base, 'POST', `/api/action-review/proposals/${id}/approve`, { body: { reason: 'ok' } });
    expect(approved.status, approved.text).toBe(200);
    const done = await until(async () => {
      const res = await http(base, 'GET', `/api/action-review/proposals/${id}/status`);
      return ['executed', 'resolved'].includes(res.body?.data?.status ?? res.body?.status) ? res : undefined;
    }, 120);
    expect(done, 'the approved proposal executes').toBeDefined();
  });

  it('the review console answers a page', async () => {
    // `/console` sends a person to the inbox; with sign-in off everyone is the local admin, under a banner.
    const res = await fetch(`${base}/console`);
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('<html');
    expect(page).toContain('Action Review');
  });

  it('agents and threads: the built-in agents exist; no provider is active', async () => {
    const agents = await http(base, 'GET', '/api/agents');
    expect(agents.status).toBe(200);
    const ids = (agents.body.data.agents as { agent_id: string }[]).map((a) => a.agent_id);
    expect(ids).toEqual(expect.arrayContaining(['eve', 'adam']));
    const overview = await http(base, 'GET', '/api/config/ai-providers/overview');
    expect(overview.status).toBe(200);
    expect(overview.body.data.active.source).toBe('none');
  });

  it('document indexes: ADD_TEXT, SEARCH, ASK cites only the named index; unknown arguments are refused', async () => {
    for (const [index, text] of [
      ['walk-finance', 'Revenue is recognised monthly in UTC.'],
      ['walk-ops', 'Revenue dashboards refresh nightly at two.'],
    ] as const) {
      expect((await tool('_document_index', { action: 'CREATE_INDEX', index_name: index })).status).toBe(200);
      const added = await tool('_document_index', { action: 'ADD_TEXT', index_name: index, text });
      expect(added.status, added.text).toBe(200);
    }
    const search = await tool('_document_index', { action: 'SEARCH', index_name: 'walk-finance', query: 'revenue' });
    expect(search.status, search.text).toBe(200);
    const ask = await tool('_document_index', {
      action: 'ASK',
      index_name: 'walk-ops',
      query: 'when does revenue refresh?',
    });
    expect(ask.status, ask.text).toBe(200);
    const cited = JSON.stringify(ask.body.data.result);
    expect(cited).toContain('walk-ops');
    expect(cited).not.toContain('walk-finance');
    const refused = await tool('_document_index', {
      action: 'ADD_TEXT',
      index_name: 'walk-finance',
      text: 'x',
      title: 'not an argument of ADD_TEXT',
    });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.text).toContain('title');
  });

  it('blueprints and missions: a built-in blueprint mission never claims goals it has no evidence for', async () => {
    const list = await http(base, 'GET', '/api/blueprints/');
    expect(list.status).toBe(200);
    const builtins = (list.body.data.blueprints as { blueprint_name: string; is_default: boolean }[]).filter(
      (b) => b.is_default,
    );
    expect(builtins.length).toBeGreaterThan(0);
    const started = await http(base, 'POST', '/api/projects', {
      body: { blueprint_name: builtins[0]!.blueprint_name },
    });
    expect(started.status, started.text).toBeLessThan(300);
    const id = started.body.data.id as string;
    const settled = await until(async () => {
      const res = await http(base, 'GET', '/api/projects');
      const mission = (res.body.data.items as { id: string; status: string }[]).find((m) => m.id === id);
      return mission && mission.status !== 'running' ? mission : undefined;
    }, 120);
    // No model provider is configured: nothing can have met a goal.
    const res = await http(base, 'GET', '/api/projects');
    const mission = (res.body.data.items as Record<string, any>[]).find((m) => m.id === id)!;
    expect(mission.stats.goals_met, JSON.stringify(mission)).toBe(0);
    // A phase that cannot run says why: here, that no model provider is configured.
    expect(settled?.status, JSON.stringify(mission)).toBe('failed');
    expect(String(mission.closed_reason)).toMatch(/provider/i);
  });

  it('managed sources and skills: a skill synced from a Git repository is read over MCP', async () => {
    const repo = gitServer!.repo('walk-skills');
    repo.write({ 'skills/hello/SKILL.md': '---\nname: hello\ndescription: says hello\n---\n# hello\nSay hello.\n' });
    const created = await http(base, 'POST', '/api/managed-sources', {
      body: {
        name: 'walk-skills',
        repo_url: repo.url,
        scan_types_enabled: ['skills'],
        credentials: { kind: 'basic', username: 'bot', password: 'walk-token' },
      },
    });
    expect(created.status, created.text).toBe(201);
    const sourceId = created.body.source.source_id as string;
    const synced = await http(base, 'POST', `/api/managed-sources/${sourceId}/sync`, { body: {} });
    expect(synced.status, synced.text).toBe(200);
    // Running it needs a model: with none configured the refusal says so (not a path error).
    const run = await http(base, 'POST', '/api/skills/hello/execute', { body: { input: 'hi' } });
    expect(run.status, run.text).toBe(502);
    expect(run.body.error_type, run.text).toBe('llm_error');
    const mcp = await connectMcp(base, '/mcp/');
    try {
      const read = await callPlatform(mcp, { action: 'read_skill', skill_name: 'hello' });
      expect(read.isError, JSON.stringify(read.data)).toBe(false);
      expect(JSON.stringify(read.data)).toContain('Say hello.');
      const help = await callPlatform(mcp, { action: 'help' });
      expect(help.isError).toBe(false);
      // With sign-in off the rooms cannot be used: help says so instead of listing them as available.
      const rooms = JSON.stringify(help.data).match(/"room_[a-z_]+"/g) ?? [];
      expect(rooms.length).toBeGreaterThan(0);
      expect(JSON.stringify(help.data)).toContain('unavailable_reason');
    } finally {
      await mcp.close();
    }
  });

  it('metrics: scraped with a bearer token, a refused body labelled with its route', async () => {
    const bad = await http(base, 'POST', '/api/action-review/proposals', {
      raw: '{',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    const refused = await fetch(`${base}/metrics`);
    expect(refused.status).toBe(401);
    const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${INTERNAL_TOKEN}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(
      /route="\/api\/action-review\/proposals"[^\n]*status="400"|status="400"[^\n]*route="\/api\/action-review\/proposals"/,
    );
  });

  it('the API reference and the OpenAPI document are whole', async () => {
    const doc = await http(base, 'GET', '/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toMatch(/^3\./);
    const page = await fetch(`${base}/docs`);
    expect(page.status).toBe(200);
    // The folded raw JSON Schema blocks show the document as it is; what a reader sees has real limits only.
    const html = (await page.text()).replace(/<pre class="schema">[\s\S]*?<\/pre>/g, '');
    expect(html).not.toContain('undefined');
    expect(html).not.toContain('9007199254740991');
  });
});
