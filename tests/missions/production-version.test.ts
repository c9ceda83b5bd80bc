/**
 * A versioned blueprint's production version is what runs (issue 31 item 1), over real HTTP with a
 * worker and the fake model: with no production version assigned a start answers 404 and writes
 * nothing; promoted v1 runs v1's prompt and goals; a working-copy edit that is not promoted changes
 * no run; promoting v2 runs v2. The mission read names the version it runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { startMissionStack, until, type MissionStack } from './support.js';

let s: MissionStack;

beforeAll(async () => {
  s = await startMissionStack('mission-production-');
});
afterAll(() => s?.close());

const api: MissionStack['api'] = (...args) => s.api(...args);
const versioning = (p: string) => `/api/blueprints/release-notes/versioning/${p}`;

const phasesAt = (v: string) => [
  {
    id: 'draft',
    name: `Draft ${v}`,
    goal: `Notes drafted ${v}`,
    agents: ['analyst'],
    prompts: [{ text: `Draft the release notes, edition ${v}` }],
  },
];

const projectCount = async () =>
  (await query<{ n: number }>(s.stack.db.url, 'select count(*)::int as n from projects'))[0]!.n;

/** Starts a mission of `release-notes`, waits for it to complete; answers its read, its goals and the prompts it sent. */
async function run() {
  const calls = s.llm.requests.length;
  const r = await api('POST', '/api/projects', 'olivia', { blueprint_name: 'release-notes' });
  expect(r.status).toBe(201);
  const id = r.body.data.id as string;
  const done = await until(
    async () =>
      ((await api('GET', '/api/projects', 'olivia')).body.data.items as Array<Record<string, any>>).find(
        (p) => p.id === id,
      ),
    (p) => p?.status === 'completed',
  );
  const detail = (await api('GET', `/api/projects/records/${id}`, 'olivia')).body.data;
  const prompts = s.llm.requests
    .slice(calls)
    .flatMap((q) => q.messages.filter((m) => m.role === 'user').map((m) => m.content ?? ''));
  // The records detail names the same version in its scope.
  expect(detail.scope).toMatchObject({
    blueprint_version: r.body.data.blueprint_version,
    blueprint_commit: r.body.data.blueprint_commit,
  });
  return {
    started: r.body.data,
    done: done!,
    goals: (detail.goals as Array<{ name: string }>).map((g) => g.name),
    prompts,
  };
}

describe('a versioned blueprint runs its production version', () => {
  const commits: Record<number, string> = {};

  it('answers 404 BLUEPRINT_PRODUCTION_NOT_ASSIGNED while no version is promoted, writing nothing', async () => {
    expect(
      (await api('POST', '/api/blueprints/', 'olivia', { blueprint_name: 'release-notes', phases: phasesAt('v1') }))
        .status,
    ).toBe(201);
    expect((await api('POST', versioning('enable'), 'olivia', {})).status).toBe(200);
    const saved = await api('POST', versioning('versions'), 'olivia', { label: 'first' });
    expect(saved.status).toBe(200);
    expect(saved.body.data.version.version_number).toBe(1);
    commits[1] = saved.body.data.version.commit_sha;

    const refused = await api('POST', '/api/projects', 'olivia', { blueprint_name: 'release-notes' });
    expect(refused.status).toBe(404);
    expect(refused.body.error_type).toBe('not_found');
    expect(refused.body.request_id).toEqual(expect.any(String));
    expect(refused.body.payload).toEqual({
      code: 'BLUEPRINT_PRODUCTION_NOT_ASSIGNED',
      blueprint_name: 'release-notes',
    });
    // The mission tool refuses the same way.
    const viaTool = await api('POST', '/api/tool_call', 'olivia', {
      tool: 'mission',
      arguments: { action: 'START', blueprint_name: 'release-notes' },
    });
    expect(viaTool.status).toBe(404);
    expect(viaTool.body.payload.code).toBe('BLUEPRINT_PRODUCTION_NOT_ASSIGNED');
    expect(await projectCount()).toBe(0);
  });

  it('runs promoted v1: its prompt and goals, and the mission names version 1 and its commit', async () => {
    expect((await api('POST', versioning('promote'), 'olivia', { version_number: 1 })).status).toBe(200);
    const m = await run();
    expect(m.started).toMatchObject({ blueprint_version: 1, blueprint_commit: commits[1] });
    expect(m.done).toMatchObject({ blueprint_version: 1, blueprint_commit: commits[1] });
    expect(m.goals).toEqual(['Notes drafted v1']);
    expect(m.prompts.some((p) => p.includes('edition v1'))).toBe(true);
    expect(m.prompts.some((p) => p.includes('edition v2'))).toBe(false);
  });

  it('keeps running v1 after a working-copy edit that is not promoted, and after saving it as v2', async () => {
    const edited = await api('PATCH', '/api/blueprints/release-notes', 'olivia', { phases: phasesAt('v2') });
    expect(edited.status).toBe(200);
    const m = await run();
    expect(m.done).toMatchObject({ blueprint_version: 1, blueprint_commit: commits[1] });
    expect(m.goals).toEqual(['Notes drafted v1']);
    expect(m.prompts.some((p) => p.includes('edition v1'))).toBe(true);
    expect(m.prompts.some((p) => p.includes('edition v2'))).toBe(false);

    const saved = await api('POST', versioning('versions'), 'olivia', { label: 'second' });
    expect(saved.status).toBe(200);
    expect(saved.body.data.version.version_number).toBe(2);
    commits[2] = saved.body.data.version.commit_sha;
    expect((await run()).done).toMatchObject({ blueprint_version: 1, blueprint_commit: commits[1] });
  });

  it('runs v2 once it is promoted; the v1 missions still say v1', async () => {
    expect((await api('POST', versioning('promote'), 'olivia', { version_number: 2 })).status).toBe(200);
    const m = await run();
    expect(m.done).toMatchObject({ blueprint_version: 2, blueprint_commit: commits[2] });
    expect(m.goals).toEqual(['Notes drafted v2']);
    expect(m.prompts.some((p) => p.includes('edition v2'))).toBe(true);
    expect(m.prompts.some((p) => p.includes('edition v1'))).toBe(false);
    const all = (await api('GET', '/api/projects', 'olivia')).body.data.items as Array<{ blueprint_version: number }>;
    expect(all.map((p) => p.blueprint_version).sort()).toEqual([1, 1, 1, 2]);
  });

  it('runs a standard blueprint from its working copy, naming no version', async () => {
    expect(
      (await api('POST', '/api/blueprints/', 'olivia', { blueprint_name: 'plain-notes', phases: phasesAt('wc') }))
        .status,
    ).toBe(201);
    const r = await api('POST', '/api/projects', 'olivia', { blueprint_name: 'plain-notes' });
    expect(r.status).toBe(201);
    expect(r.body.data.blueprint_version).toBeNull();
    expect(r.body.data.blueprint_commit).toMatch(/^[0-9a-f]{40}$/);
  });
});
