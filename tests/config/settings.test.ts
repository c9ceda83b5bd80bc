/**
 * The configuration store over real HTTP: precedence (saved, env, default), provenance with masked
 * secrets, full and partial applies (YAML and JSON, multipart file), dry runs and refusals that
 * write nothing, the apply record, the sweep schedule following its setting, and access rules.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HANDBACK_SWEEP_SCHEDULE_ID } from '../../shared/action-review/sweep-schedule.js';
import { Settings } from '../../shared/settings/store.js';
import { query } from '../helpers/db.js';
import type { FakeIdp } from '../helpers/fake-idp.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startConfigStack } from './support.js';

let s: OidcStack;
let idp: FakeIdp;
let stack: Stack;
let admin: string;
let member: string;

const SOURCES = '/api/config/setup/sources';
const APPLY = '/api/config/setup/apply';
const PARTIAL = '/api/config/setup/apply-partial';

const savedRows = () => query(stack.db.url, 'select path, value, sealed from platform_settings order by path');
const applies = () => query(stack.db.url, 'select * from platform_settings_applies order by id');
const version = async () =>
  Number((await query(stack.db.url, 'select version from platform_settings_version'))[0]!.version);
const partial = (content: string, extra: Record<string, unknown> = {}) =>
  http(stack.url, 'POST', PARTIAL, { token: admin, body: { content, ...extra } });
const full = (content: string, extra: Record<string, unknown> = {}) =>
  http(stack.url, 'POST', APPLY, { token: admin, body: { content, ...extra } });
const source = (path: string) => http(stack.url, 'GET', `${SOURCES}?path=${path}`, { token: admin });

beforeAll(async () => {
  s = await startConfigStack({
    worker: true,
    tokens: { admin: { sub: 'root', name: 'Root Admin', roles: ['admin'] }, member: { sub: 'ann', roles: ['member'] } },
    env: {
      PLATFORM_SERVICE_TOKEN: 'service-token-value',
      PLATFORM_SECRETS_KEY: 'test-secrets-key-of-at-least-32-bytes',
      CRM_MAX_APPROVAL_TTL_SECONDS: '7200',
      ETL_PROJECT_PATH: '/srv/etl-from-env',
    },
  });
  ({
    stack,
    idp,
    tokens: { admin, member },
  } = s);
});
afterAll(async () => {
  await stack?.api.deps.temporal.schedule
    .getHandle(HANDBACK_SWEEP_SCHEDULE_ID)
    .delete()
    .catch(() => undefined);
  await s?.close();
});

describe('precedence: saved, then env, then default', () => {
  it('reports each layer for env-set, default-only and saved paths', async () => {
    const envSet = await source('crm.max_approval_ttl_seconds');
    expect(envSet.status, envSet.text).toBe(200);
    expect(envSet.body.data).toEqual({
      path: 'crm.max_approval_ttl_seconds',
      effective_value: 7200,
      source: 'env',
      all_sources: [
        { source: 'env', value: 7200 },
        { source: 'default', value: 86_400 },
      ],
    });
    const dflt = await source('etl.run_timeout_seconds');
    expect(dflt.body.data).toMatchObject({ effective_value: 900, source: 'default' });

    const res = await partial('crm:\n  max_approval_ttl_seconds: 3600\netl:\n  run_timeout_seconds: 60\n');
    expect(res.status, res.text).toBe(200);
    expect(res.body.success).toBe(true);
    const saved = await source('crm.max_approval_ttl_seconds');
    expect(saved.body.data).toEqual({
      path: 'crm.max_approval_ttl_seconds',
      effective_value: 3600,
      source: 'saved',
      all_sources: [
        { source: 'saved', value: 3600 },
        { source: 'env', value: 7200 },
        { source: 'default', value: 86_400 },
      ],
    });
    expect((await source('etl.run_timeout_seconds')).body.data).toMatchObject({ effective_value: 60, source: 'saved' });
    // Another process's accessor (its own cache) sees each change once it checks the version row again;
    // with no staleness allowed, that is every read.
    const other = new Settings(stack.api.deps.orm, stack.config, { maxStalenessMs: 0 });
    expect(await other.get('crm.max_approval_ttl_seconds')).toBe(3600);
    expect(await other.get('etl.project_path')).toBe('/srv/etl-from-env');
    expect(await other.get('etl.runner_url')).toBeNull();

    // Unsetting (null) falls back to env, then default.
    const unset = await partial('{"crm.max_approval_ttl_seconds": null, "etl": {"run_timeout_seconds": null}}');
    expect(unset.body.result).toMatchObject({ deleted: 2, added: 0, updated: 0 });
    expect((await source('crm.max_approval_ttl_seconds')).body.data).toMatchObject({
      effective_value: 7200,
      source: 'env',
    });
    expect((await source('etl.run_timeout_seconds')).body.data).toMatchObject({ source: 'default' });
    expect(await other.get('crm.max_approval_ttl_seconds')).toBe(7200);
  });
});

describe('sources', () => {
  it('lists a section, everything, and masks secrets wherever they show', async () => {
    const etl = await http(stack.url, 'GET', `${SOURCES}?section=etl`, { token: admin });
    expect(etl.status).toBe(200);
    expect(etl.body.data.sources.map((s: { path: string }) => s.path)).toEqual([
      'etl.project_path',
      'etl.jobs_dir',
      'etl.run_timeout_seconds',
      'etl.runner_url',
      'etl.runner_token',
      'etl.cloud_base_url',
      'etl.cloud_token',
    ]);
    expect(etl.body.data.count).toBe(7);
    const nested = await http(stack.url, 'GET', `${SOURCES}?section=enhancements.code_agent`, { token: admin });
    // enabled, adapter, connection_name, target_repo_url, target_base_ref, auto_create_pr, runner_command,
    // run_timeout_seconds, poll_interval_seconds
    expect(nested.body.data.count).toBe(9);

    const all = await http(stack.url, 'GET', SOURCES, { token: admin });
    expect(all.body.data.count).toBeGreaterThan(60);
    const byPath = new Map(all.body.data.sources.map((s: { path: string }) => [s.path, s]));
    expect(byPath.get('auth.service_token')).toMatchObject({ effective_value: '********', source: 'env' });
    expect(byPath.get('secrets.key')).toMatchObject({ effective_value: '********', source: 'env' });
    expect(byPath.get('database.url')).toMatchObject({ effective_value: '********', source: 'env' });
    expect(all.text).not.toContain('service-token-value');
    expect(all.text).not.toContain('test-secrets-key');

    const res = await partial('etl:\n  cloud_token: tok-very-secret\n');
    expect(res.body.result.changes).toEqual([
      { path: 'etl.cloud_token', old_value: null, new_value: '********', action: 'added' },
    ]);
    expect(res.text).not.toContain('tok-very-secret');
    const row = (await savedRows()).find((r) => r.path === 'etl.cloud_token')!;
    expect(row.value).toBeNull();
    expect(String(row.sealed)).toMatch(/^v1\./);
    expect(String(row.sealed)).not.toContain('tok-very-secret');
    const token = await source('etl.cloud_token');
    expect(token.body.data).toEqual({
      path: 'etl.cloud_token',
      effective_value: '********',
      source: 'saved',
      all_sources: [
        { source: 'saved', value: '********' },
        { source: 'default', value: null },
      ],
    });
    expect(await stack.api.deps.settings.get('etl.cloud_token')).toBe('tok-very-secret');
    // Sending the mask back keeps the secret.
    const keep = await partial('etl:\n  cloud_token: "********"\n');
    expect(keep.body.result).toMatchObject({ skipped: 1, added: 0, updated: 0, deleted: 0 });
    expect(await stack.api.deps.settings.get('etl.cloud_token')).toBe('tok-very-secret');
    expect((await applies()).at(-1)!.changes).toEqual([
      { path: 'etl.cloud_token', old_value: null, new_value: '********', action: 'added' },
    ]);
    await partial('etl:\n  cloud_token: null\n');
  });

  it('answers 404 for an unknown path or section', async () => {
    const unknown = await source('crm.no_such_setting');
    expect([unknown.status, unknown.body.error_type]).toEqual([404, 'not_found']);
    const section = await http(stack.url, 'GET', `${SOURCES}?section=nothing_here`, { token: admin });
    expect(section.status).toBe(404);
  });
});

describe('apply', () => {
  it('a dry run reports the changes and writes nothing', async () => {
    const [rowsBefore, v, appliesBefore] = [await savedRows(), await version(), (await applies()).length];
    const res = await full('enhancements:\n  code_agent:\n    enabled: true\n    adapter: cloud\n', {
      dry_run: true,
      output_format: 'yaml',
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ success: true, dry_run: true, output_format: 'yaml' });
    expect(res.body.result).toMatchObject({ added: 2, updated: 0, deleted: 0, errors: [] });
    expect(res.body.content).toBe('enhancements:\n  code_agent:\n    adapter: cloud\n    enabled: true\n');
    expect(await savedRows()).toEqual(rowsBefore);
    expect(await version()).toBe(v);
    expect((await applies()).length).toBe(appliesBefore);
  });

  it('a full apply replaces what was saved and is recorded with who and when', async () => {
    await partial('etl:\n  jobs_dir: /srv/jobs\n');
    const res = await full(
      JSON.stringify({
        schema_version: 3,
        name: 'prod',
        description: 'whole file',
        enhancements: { code_agent: { enabled: true } },
        'branding.product_name': 'Acme Agents',
      }),
    );
    expect(res.status, res.text).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.result).toMatchObject({ added: 2, updated: 0, deleted: 1, skipped: 0, errors: [] });
    expect(res.body.result.changes).toContainEqual({
      path: 'etl.jobs_dir',
      old_value: '/srv/jobs',
      new_value: null,
      action: 'deleted',
    });
    expect(JSON.parse(res.body.content)).toEqual({
      branding: { product_name: 'Acme Agents' },
      enhancements: { code_agent: { enabled: true } },
    });
    expect((await savedRows()).map((r) => r.path)).toEqual([
      'branding.product_name',
      'enhancements.code_agent.enabled',
    ]);
    const record = (await applies()).at(-1)!;
    expect(record).toMatchObject({ mode: 'full', applied_by: 'root', added: 2, deleted: 1 });
    expect(Date.now() - new Date(record.applied_at as string).getTime()).toBeLessThan(60_000);
    const again = await full(res.body.content);
    expect(again.body.result).toMatchObject({ added: 0, updated: 0, deleted: 0, skipped: 2 });
  });

  it.each([
    ['an unknown path', 'crm:\n  nope: 1\n', 422, 'unprocessable_entity', 'crm.nope', 'unknown_setting'],
    [
      'a wrong type',
      'crm:\n  max_approval_ttl_seconds: "soon"\n',
      400,
      'bad_request',
      'crm.max_approval_ttl_seconds',
      'invalid_value',
    ],
    ['a process-level path', 'auth:\n  provider: none\n', 400, 'bad_request', 'auth.provider', 'process_level'],
    ['a root that is not a mapping', '- a\n- b\n', 400, 'bad_request', null, 'not_a_mapping'],
    ['text that is not YAML', 'a: [1, 2\n', 400, 'bad_request', null, 'unparseable'],
  ])(
    'refuses %s with the error envelope and writes nothing, not even the valid path beside it (full and partial)',
    async (_what, content, status, errorType, path, reason) => {
      await partial('etl:\n  jobs_dir: /keep\n');
      const [rowsBefore, v, appliesBefore] = [await savedRows(), await version(), (await applies()).length];
      for (const send of [full, partial]) {
        for (const dry_run of [false, true]) {
          const res = await send(`${content.startsWith('-') ? '' : 'etl:\n  run_timeout_seconds: 5\n'}${content}`, {
            dry_run,
          });
          expect(res.status, res.text).toBe(status);
          expect(res.body).toMatchObject({ error_type: errorType, request_id: res.headers.get('x-request-id') });
          expect(res.body).not.toHaveProperty('success');
          expect(res.body.payload.refused).toEqual([{ path, reason, message: expect.any(String) }]);
          expect(res.body.payload.errors).toEqual([res.body.payload.refused[0].message]);
          expect(await savedRows()).toEqual(rowsBefore);
          expect(await version()).toBe(v);
          expect(await applies()).toHaveLength(appliesBefore);
        }
      }
    },
  );

  it('names every refused setting of one request, 422 when any is undeclared', async () => {
    const rowsBefore = await savedRows();
    const res = await partial('auth:\n  provider: none\nlisten:\n  nope: 1\netl:\n  run_timeout_seconds: 7\n');
    expect(res.status, res.text).toBe(422);
    expect(res.body.payload.refused.map((r: { path: string; reason: string }) => [r.path, r.reason])).toEqual([
      ['listen', 'unknown_setting'],
      ['auth.provider', 'process_level'],
    ]);
    expect(await savedRows()).toEqual(rowsBefore);
  });

  it('refuses connection keys, pointing to /api/connections', async () => {
    const rowsBefore = await savedRows();
    const res = await partial('connections:\n  crm_main:\n    type: crm\n');
    expect([res.status, res.body.error_type]).toEqual([400, 'bad_request']);
    expect(res.body.payload.refused).toEqual([
      {
        path: 'connections',
        reason: 'connections_not_configuration',
        message: expect.stringContaining('/api/connections'),
      },
    ]);
    const single = await full('connection: {name: x}\n');
    expect(single.status).toBe(400);
    expect(single.body.payload.errors[0]).toContain('/api/connections');
    expect(await savedRows()).toEqual(rowsBefore);
  });

  it('apply-partial merges the given paths, keeps the rest and strips document metadata', async () => {
    await full('etl:\n  jobs_dir: /srv/jobs\n  run_timeout_seconds: 30\n');
    const res = await partial(
      'schema_version: 2\nname: tweak\ndescription: only the timeout\netl:\n  run_timeout_seconds: 45\n',
    );
    expect(res.body.success, res.text).toBe(true);
    expect(res.body.result).toMatchObject({ added: 0, updated: 1, deleted: 0, skipped: 0 });
    expect(res.body.result.changes).toEqual([
      { path: 'etl.run_timeout_seconds', old_value: 30, new_value: 45, action: 'updated' },
    ]);
    expect(await savedRows()).toEqual([
      { path: 'etl.jobs_dir', value: '/srv/jobs', sealed: null },
      { path: 'etl.run_timeout_seconds', value: 45, sealed: null },
    ]);
  });

  it('apply-file takes a multipart YAML file, honours dry_run, and refuses a missing file with 400', async () => {
    const upload = (fields: Record<string, string | Blob>, qs = '') => {
      const form = new FormData();
      for (const [k, v] of Object.entries(fields)) form.append(k, v);
      return fetch(`${stack.url}/api/config/setup/apply-file${qs}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}` },
        body: form,
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
    };
    const file = new Blob(['demo:\n  mode_enabled: true\n'], { type: 'application/yaml' });
    const rowsBefore = await savedRows();
    const dry = await upload({ file }, '?dry_run=true');
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({ success: true, dry_run: true });
    expect(dry.body.result).toMatchObject({ added: 1, deleted: 2 });
    expect(await savedRows()).toEqual(rowsBefore);

    const applied = await upload({ file });
    expect(applied.body.success).toBe(true);
    expect(await savedRows()).toEqual([{ path: 'demo.mode_enabled', value: true, sealed: null }]);
    const demo = await http(stack.url, 'GET', '/api/config/demo-mode');
    expect(demo.body).toEqual({ success: true, data: { demo_mode: true } });

    const missing = await upload({ other: 'x' });
    expect([missing.status, missing.body.error_type]).toEqual([400, 'bad_request']);
    expect(missing.body.payload.fields).toEqual([{ field: 'body.file', message: 'required' }]);
    expect(await savedRows()).toEqual([{ path: 'demo.mode_enabled', value: true, sealed: null }]);
    // Demo mode on turns the demo gate on (only the owner, admins and staff pass): turn it off for the tests below.
    const off = await upload({ file: new Blob(['demo:\n  mode_enabled: false\n'], { type: 'application/yaml' }) });
    expect(off.body.success).toBe(true);
  });

  it('undeclared body fields answer 422 and write nothing', async () => {
    const rowsBefore = await savedRows();
    const res = await http(stack.url, 'POST', PARTIAL, {
      token: admin,
      body: { content: 'etl:\n  jobs_dir: /x\n', extra: 1 },
    });
    expect([res.status, res.body.error_type]).toEqual([422, 'unprocessable_entity']);
    expect(await savedRows()).toEqual(rowsBefore);
  });
});

describe('the sweep interval reaches the running schedule without a restart', () => {
  it('apply-partial updates the Temporal schedule to the new interval', async () => {
    const handle = stack.api.deps.temporal.schedule.getHandle(HANDBACK_SWEEP_SCHEDULE_ID);
    const res = await partial('action_review:\n  sweep_interval_seconds: 120\n');
    expect(res.body.success, res.text).toBe(true);
    const described = await handle.describe();
    expect(described.spec.intervals?.[0]?.every).toBe(120_000);
    expect(described.action).toMatchObject({ taskQueue: stack.config.temporal.taskQueue });

    await partial('action_review:\n  sweep_interval_seconds: 45\n');
    expect((await handle.describe()).spec.intervals?.[0]?.every).toBe(45_000);
    // Unset: back to the env/default value (600 s here).
    await partial('action_review:\n  sweep_interval_seconds: null\n');
    expect((await handle.describe()).spec.intervals?.[0]?.every).toBe(600_000);
  });

  it('the proposal size limit follows its setting at once', async () => {
    const propose = () =>
      http(stack.url, 'POST', '/api/action-review/proposals', {
        token: admin,
        body: {
          action_type: 'ticket.write.v1',
          payload: { title: 'Big', body: 'y'.repeat(1500) },
          expected_effect: 'A ticket',
        },
      });
    await partial('action_review:\n  max_proposal_bytes: 1024\n');
    const refused = await propose();
    expect([refused.status, refused.body.payload?.limit_bytes]).toEqual([413, 1024]);
    await partial('action_review:\n  max_proposal_bytes: null\n');
    expect((await propose()).status).not.toBe(413);
  });
});

describe('configuration views', () => {
  it('GET /api/config/auth describes the provider without secrets', async () => {
    const res = await http(stack.url, 'GET', '/api/config/auth', { token: admin });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      provider: 'oidc',
      issuer: idp.issuer,
      audience: idp.audience,
      roles_claim: 'roles',
      service_token_configured: true,
      internal_token_configured: false,
      client_secret_configured: false,
    });
    expect(res.text).not.toContain('service-token-value');
  });

  it('user-config is per user', async () => {
    const empty = await http(stack.url, 'GET', '/api/config/user-config', { token: member });
    expect(empty.body.data).toEqual({ config: {}, updated_at: null });
    const saved = await http(stack.url, 'POST', '/api/config/user-config', {
      token: member,
      body: { config: { theme: 'dark', pinned: ['a'] } },
    });
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({ success: true, message: 'Preferences saved.' });
    expect((await http(stack.url, 'GET', '/api/config/user-config', { token: member })).body.data.config).toEqual({
      theme: 'dark',
      pinned: ['a'],
    });
    expect((await http(stack.url, 'GET', '/api/config/user-config', { token: admin })).body.data.config).toEqual({});
    const undeclared = await http(stack.url, 'POST', '/api/config/user-config', {
      token: member,
      body: { config: {}, theme: 'x' },
    });
    expect(undeclared.status).toBe(422);
    const tooBig = await http(stack.url, 'POST', '/api/config/user-config', {
      token: member,
      body: { config: { blob: 'z'.repeat(70_000) } },
    });
    expect(tooBig.status).toBe(413);
  });

  it('frontend flags follow the tracker automation setting', async () => {
    const before = await http(stack.url, 'GET', '/api/config/frontend', { token: member });
    expect(before.body.data.jira_automation_enabled).toBe(false);
    await partial('enhancements:\n  tracker_automation:\n    enabled: true\n');
    const after = await http(stack.url, 'GET', '/api/config/frontend', { token: member });
    expect(after.body.data).toMatchObject({ jira_automation_enabled: true, auth_provider: 'oidc' });
  });
});

describe('access', () => {
  it('needs a credential (401) and access_config_panel (403) for the configuration routes', async () => {
    const calls: Array<[string, string, unknown]> = [
      ['GET', SOURCES, undefined],
      ['POST', APPLY, { content: '{}' }],
      ['POST', PARTIAL, { content: '{}' }],
      ['GET', '/api/config/auth', undefined],
    ];
    const rowsBefore = await savedRows();
    for (const [method, path, body] of calls) {
      const anon = await http(stack.url, method, path, { body });
      expect([anon.status, anon.body.error_type], path).toEqual([401, 'authentication']);
      const denied = await http(stack.url, method, path, { body, token: member });
      expect([denied.status, denied.body.payload?.required_permission], path).toEqual([403, 'access_config_panel']);
    }
    for (const path of ['/api/config/user-config', '/api/config/frontend']) {
      expect((await http(stack.url, 'GET', path)).status).toBe(401);
    }
    expect(await savedRows()).toEqual(rowsBefore);
  });
});
