/**
 * Missions of the built-in blueprints on the default layout: a relative data folder, no
 * authentication, no language-model provider. Nothing can do the work, so no mission may claim its
 * goals: each ends `failed`, and every phase says why (issue 28). A phase naming no agent says so too,
 * and a thread whose first turn cannot reach a model is not left behind.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startThread } from '../../shared/threads/service.js';
import { permissionsFor } from '../../shared/auth/rbac.js';
import { DEFAULT_BLUEPRINTS } from '../../shared/blueprints/defaults.js';
import { LlmFailureError } from '../../shared/errors.js';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { until } from './support.js';

let stack: Stack;
// Relative, as the default `.data` is: resolved against the working directory of the process.
const dataDir = `.data-test-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  stack = await startStack({ env: { PLATFORM_DATA_DIR: dataDir } });
});
afterAll(async () => {
  await stack?.close();
  await rm(dataDir, { recursive: true, force: true });
});

const api = (method: string, p: string, body?: unknown) =>
  http(stack.url, method, p, body !== undefined ? { body } : {});

/** Starts a mission and waits for it to end; answers the ended mission's records detail. */
async function runToEnd(blueprint: string) {
  const started = await api('POST', '/api/projects', { blueprint_name: blueprint });
  expect(started.status, started.text).toBe(201);
  const id = started.body.data.id as string;
  const detail = await until(
    () => api('GET', `/api/projects/records/${id}`),
    (r) => r.body.data?.closed_at !== null,
  );
  return { id, detail: detail.body.data as Record<string, any> };
}

describe('built-in blueprints on the default layout (no model provider)', () => {
  it.each(DEFAULT_BLUEPRINTS.map((d) => d.manifest.name))(
    '%s opens a thread with a built-in agent, meets no goal and names why per phase',
    async (name) => {
      const { id, detail } = await runToEnd(name);
      const phases = DEFAULT_BLUEPRINTS.find((d) => d.manifest.name === name)!.manifest.phases;
      expect(
        await query(stack.db.url, 'select status, closed_reason, root_thread_id, agents from projects where id = $1', [
          id,
        ]),
      ).toEqual([
        {
          status: 'failed',
          closed_reason: expect.stringMatching(/no language-model provider is configured/),
          root_thread_id: expect.stringMatching(/^mcp_[0-9a-f]{32}$/),
          agents: [phases[0]!.agents![0]],
        },
      ]);
      // The prompt reached the agent's thread; the model was never reached, so there is no reply.
      const [root] = await query(stack.db.url, 'select root_thread_id from projects where id = $1', [id]);
      expect(
        await query(stack.db.url, 'select role from conversation_messages where thread_id = $1', [
          root!.root_thread_id,
        ]),
      ).toEqual([{ role: 'user' }]);
      expect(detail.status_counts.met).toBe(0);
      expect(detail.goals.every((g: { status: string }) => g.status !== 'met')).toBe(true);
      expect(detail.phase_outcomes).toEqual(
        phases.map((p, i) =>
          i === 0
            ? {
                phase: p.id,
                status: 'failed',
                reason_code: 'no_model_provider',
                reason: expect.stringMatching(/no language-model provider is configured/),
              }
            : { phase: p.id, status: 'planned', reason_code: null, reason: null },
        ),
      );
      // The goal's own note says why it is not met.
      expect(detail.notes).toEqual([
        expect.objectContaining({
          goal: phases[0]!.id,
          actor: 'mission',
          status: 'in_progress',
          finding: expect.stringMatching(/^Not met: no_model_provider: /),
        }),
      ]);
      const kinds = await query(stack.db.url, 'select kind from project_events where project_id = $1 order by seq', [
        id,
      ]);
      expect(kinds.map((k) => k.kind)).not.toContain('completed');
      expect(kinds.map((k) => k.kind)).not.toContain('phase_completed');

      const report = await api('GET', `/api/projects/${id}/reports/system-test-lite`);
      expect(report.status).toBe(200);
      expect(report.body.data.summary).toMatchObject({ goals_met_or_waived: 0, phases_failed: 1 });
      expect(report.body.data.markdown).toContain('- Status: failed');
      expect(report.body.data.markdown).toContain(`| ${phases[0]!.id} | failed | no\\_model\\_provider |`);
      // A failed mission cannot be steered.
      const late = await api('PUT', `/api/projects/${id}/status`, { action: 'close' });
      expect(late.status).toBe(409);
    },
  );

  it('a phase naming no agent says so, and the mission opens no thread', async () => {
    const created = await api('POST', '/api/blueprints/', {
      blueprint_name: 'nobody-home',
      phases: [{ id: 'work', name: 'Work', goal: 'Do the work', prompts: [{ text: 'Do it' }] }],
    });
    expect(created.status, created.text).toBe(201);
    const { id, detail } = await runToEnd('nobody-home');
    expect(detail.phase_outcomes).toEqual([
      { phase: 'work', status: 'failed', reason_code: 'no_agent', reason: expect.stringMatching(/names no agent/) },
    ]);
    expect(detail.goals).toEqual([expect.objectContaining({ id: 'work', status: 'in_progress' })]);
    expect(await query(stack.db.url, 'select status, root_thread_id from projects where id = $1', [id])).toEqual([
      { status: 'failed', root_thread_id: null },
    ]);
    const chain = await api('GET', `/api/projects/${id}/blueprint-chain`);
    expect(chain.body.data.nodes).toEqual([]);
  });

  it('a thread_create whose first turn finds no model provider leaves no thread and no running workflow', async () => {
    const owner = {
      kind: 'person' as const,
      id: 'local-admin',
      tenant: 'default',
      displayName: 'local-admin',
      roles: ['admin'],
      permissions: permissionsFor(['admin']),
      credential: 'idp_jwt' as const,
    };
    const before = await query(stack.db.url, 'select id from conversation_threads order by id');
    const err = await startThread(stack.api.deps, stack.api.deps.orm.em.fork(), owner, {
      initialPrompt: 'is anyone there?',
      origin: 'mcp_origin',
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LlmFailureError);
    expect(((err as LlmFailureError).payload!.llm_failure as { kind: string }).kind).toBe('not_configured');
    expect(await query(stack.db.url, 'select id from conversation_threads order by id')).toEqual(before);
    const running = stack.api.deps.temporal.workflow.list({
      query: `TaskQueue = '${stack.config.temporal.taskQueue}' AND WorkflowType = 'threadWorkflow' AND ExecutionStatus = 'Running'`,
    });
    const known = new Set(before.map((r) => `thread/${r.id}`));
    for await (const w of running) expect(known.has(w.workflowId), w.workflowId).toBe(true);
  });
});
