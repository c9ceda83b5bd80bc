/**
 * Scan type `missions` (issue 31 item 8): `missions/<key>/mission.yaml` of a managed source starts one
 * mission per key at sync, of a built-in or of a blueprint the same source imports; later syncs start
 * none again; bad manifests and blueprints the source may not run are degraded artifacts, never a failed sync.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import { basicCredentials, managedSources, startGitStack, type GitStack } from './support.js';

let env: GitStack;

beforeAll(async () => {
  env = await startGitStack({ dataDirPrefix: 'msrc-missions-' });
}, 60_000);
afterAll(() => env?.close());

const { create, sync } = managedSources(() => env, {
  name: 'missions',
  scan_types_enabled: ['blueprints', 'missions'],
  credentials: basicCredentials(),
});

const blueprintManifest = (name: string) =>
  `schema_version: 1\nname: ${name}\nblueprint:\n  short_description: Shipped with missions\nphases:\n  - id: gather\n    name: Gather\n    goal: Collect the accounts\n    prompts:\n      - text: Collect them\n`;

const projects = async () =>
  (await http(env.stack.url, 'GET', '/api/projects', { token: env.admin })).body.data.items as Array<
    Record<string, any>
  >;
const imported = (sourceId: string) =>
  query<{ mission_key: string; project_id: string | null }>(
    env.stack.db.url,
    'select mission_key, project_id from managed_source_missions where source_id = $1 order by mission_key',
    [sourceId],
  );

describe('managed missions', () => {
  it('starts each declared mission once; refuses what the source may not run as degraded artifacts', async () => {
    // A blueprint of another source: this source may not run it.
    const otherRepo = env.gitServer.repo('missions-other');
    otherRepo.write({ 'blueprints/foreign-review/blueprint_manifest.yaml': blueprintManifest('foreign-review') });
    const other = await create(otherRepo, { name: 'other', scan_types_enabled: ['blueprints'] });
    expect((await sync(other)).body.data.hydrate.blueprints).toMatchObject({ applied: 1 });

    const declared: Record<string, string> = {
      weekly: 'blueprint: weekly-review\nname: Weekly review, first\nparameters:\n  week: 48\n',
      'self-check': 'blueprint: platform-self-check\n',
      foreign: 'blueprint: foreign-review\n',
      nowhere: 'blueprint: no-such-blueprint\n',
      broken: 'blueprint: [unclosed\n',
      Bad_Key: 'blueprint: weekly-review\n',
    };
    const repo = env.gitServer.repo('missions-a');
    const commit = repo.write({
      'blueprints/weekly-review/blueprint_manifest.yaml': blueprintManifest('weekly-review'),
      ...Object.fromEntries(Object.entries(declared).map(([key, text]) => [`missions/${key}/mission.yaml`, text])),
    });
    const id = await create(repo);
    const synced = await sync(id);
    const r = synced.body.data;
    expect([synced.status, r.outcome]).toEqual([200, 'updated_with_errors']);
    expect(r.candidates.missions).toBe(6);
    expect(r.hydrate.missions).toMatchObject({ found: 6, applied: 2, waiting: 0 });
    const reasons = Object.fromEntries(
      (r.hydrate.missions.degraded_artifacts as Array<{ artifact_id: string; reason: string }>).map((d) => [
        d.artifact_id,
        d.reason,
      ]),
    );
    expect(reasons).toEqual({
      Bad_Key: expect.stringContaining('mission folder name'),
      broken: expect.stringContaining('invalid YAML'),
      foreign: expect.stringContaining('neither a built-in nor imported'),
      nowhere: expect.stringContaining('neither a built-in nor imported'),
    });

    const rows = await imported(id);
    expect(rows.map((x) => x.mission_key)).toEqual(['self-check', 'weekly']);
    const mine = (await projects()).filter((p) => p.requested_by === `managed-source:${id}`);
    expect(mine.map((p) => p.id).sort()).toEqual(rows.map((x) => x.project_id).sort());
    const weekly = mine.find((p) => p.id === rows.find((x) => x.mission_key === 'weekly')!.project_id)!;
    expect(weekly).toMatchObject({ name: 'Weekly review, first', blueprint_name: 'weekly-review' });
    expect(mine.find((p) => p.blueprint_name === 'platform-self-check')).toBeDefined();
    expect(await query(env.stack.db.url, 'select parameters from projects where id = $1', [weekly.id])).toEqual([
      { parameters: { week: 48 } },
    ]);
    expect(commit).toMatch(/^[0-9a-f]{40}$/);

    // A later sync (the weekly manifest changed) starts nothing again; the degraded ones are tried again.
    repo.write({
      'missions/weekly/mission.yaml': 'blueprint: weekly-review\nname: Weekly review, renamed\n',
      'missions/extra/mission.yaml': 'blueprint: weekly-review\nname: An extra one\n',
    });
    const again = await sync(id);
    expect(again.body.data.hydrate.missions).toMatchObject({ found: 7, applied: 1 });
    expect((again.body.data.hydrate.missions.degraded_artifacts as unknown[]).length).toBe(4);
    expect((await imported(id)).map((x) => x.mission_key)).toEqual(['extra', 'self-check', 'weekly']);
    const after = (await projects()).filter((p) => p.requested_by === `managed-source:${id}`);
    expect(after).toHaveLength(3);
    expect(
      after
        .filter((p) => p.blueprint_name === 'weekly-review')
        .map((p) => p.name)
        .sort(),
    ).toEqual(['An extra one', 'Weekly review, first']);
  });
});
