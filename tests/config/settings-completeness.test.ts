/**
 * Issue 11 made whole: every setting the other configuration work introduced is in the one schema
 * (provenance for all of them in one call), run-time settings are read through the accessor
 * (`docs.base_url`, branding), branding has one store shared with the settings, `mesh.*` changes need
 * `manage_secrets`, and every configuration body refuses undeclared fields with 422, writing nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../../api/routes/index.js';
import { applyConfiguration } from '../../shared/settings/apply.js';
import { SETTING_PATHS, settingDef } from '../../shared/settings/definitions.js';
import { SECRET_MASK } from '../../shared/settings/store.js';
import { query } from '../helpers/db.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startConfigStack } from './support.js';

let s: OidcStack<'admin'>;
let stack: Stack;
let admin: string;

const INTERNAL = { 'x-platform-internal-token': 'internal-token-value' };
const SOURCES = '/api/config/setup/sources';
const PARTIAL = '/api/config/setup/apply-partial';

const partial = (content: unknown) =>
  http(stack.url, 'POST', PARTIAL, { token: admin, body: { content: JSON.stringify(content) } });
const source = async (path: string) => {
  const res = await http(stack.url, 'GET', `${SOURCES}?path=${path}`, { token: admin });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
};
/** Every table a configuration route writes, as text, to show a refusal left them alone. */
const written = async () => {
  const out: Record<string, unknown> = {};
  for (const table of [
    'platform_settings',
    'platform_settings_version',
    'platform_settings_applies',
    'deployment_settings',
    'user_configs',
    'eai_assignments',
    'mesh_settings',
    'llm_providers',
    'llm_settings',
  ])
    out[table] = await query(stack.db.url, `select * from ${table}`);
  return JSON.stringify(out);
};

beforeAll(async () => {
  s = await startConfigStack({
    tokens: { admin: { sub: 'root', name: 'Root Admin', email: 'root@example.com', roles: ['admin'] } },
    env: {
      PLATFORM_INTERNAL_TOKEN: 'internal-token-value',
      PLATFORM_SECRETS_KEY: 'completeness-secrets-key-of-at-least-32-bytes',
      PLATFORM_SIGNING_KEY: 'completeness-signing-key-of-at-least-32-bytes',
      PLATFORM_LICENSE_ENFORCEMENT_DISABLED: 'true',
      PLATFORM_SECRETS_RESEAL_BATCH_SIZE: '7',
    },
  });
  stack = s.stack;
  ({ admin } = s.tokens);
});
afterAll(() => s?.close());

describe('GET /api/config/setup/sources without path or section', () => {
  it('resolves every field of the schema, each with its layers, secrets masked', async () => {
    const res = await http(stack.url, 'GET', SOURCES, { token: admin });
    expect(res.status, res.text).toBe(200);
    const { sources, count } = res.body.data as {
      count: number;
      sources: Array<{
        path: string;
        effective_value: unknown;
        source: string;
        all_sources: Array<{ source: string }>;
      }>;
    };
    expect(count).toBe(SETTING_PATHS.length);
    expect(sources.map((s) => s.path).sort()).toEqual([...SETTING_PATHS].sort());
    for (const s of sources) {
      expect(['saved', 'env', 'default'], s.path).toContain(s.source);
      expect(s.all_sources[0]!.source, s.path).toBe(s.source);
      expect(s.all_sources.at(-1)!.source, s.path).toBe('default');
      if (settingDef(s.path as never).secret && s.effective_value !== null)
        expect(s.effective_value, s.path).toBe(SECRET_MASK);
    }
    const byPath = new Map(sources.map((s) => [s.path, s]));
    expect(byPath.get('platform.signing_key')).toMatchObject({ effective_value: SECRET_MASK, source: 'env' });
    expect(res.text).not.toContain('completeness-signing-key');
    expect(res.text).not.toContain('completeness-secrets-key');
  });

  it('includes the settings of the secrets, mesh, license, docs and branding work with their env names', async () => {
    expect(await source('license.enforcement_disabled')).toMatchObject({ effective_value: true, source: 'env' });
    expect(await source('secrets.reseal_batch_size')).toMatchObject({ effective_value: 7, source: 'env' });
    expect(await source('platform.container_service_mode')).toMatchObject({
      effective_value: false,
      source: 'default',
    });
    expect(await source('mesh.egress')).toMatchObject({ effective_value: ['0.0.0.0:443'], source: 'default' });
    expect(await source('mesh.advertise_tags')).toMatchObject({ effective_value: [], source: 'default' });
    expect(await source('docs.base_url')).toMatchObject({ effective_value: null, source: 'default' });
    expect(await source('license.public_key')).toMatchObject({ effective_value: null, source: 'default' });
    const envs = {
      'platform.container_service_mode': 'PLATFORM_CONTAINER_SERVICE_MODE',
      'mesh.auth_key_file': 'PLATFORM_MESH_AUTH_KEY_FILE',
      'secrets.reseal_batch_size': 'PLATFORM_SECRETS_RESEAL_BATCH_SIZE',
      'secrets.reseal_pause_ms': 'PLATFORM_SECRETS_RESEAL_PAUSE_MS',
      'license.public_key': 'PLATFORM_LICENSE_PUBLIC_KEY',
      'license.enforcement_disabled': 'PLATFORM_LICENSE_ENFORCEMENT_DISABLED',
      'docs.base_url': 'PLATFORM_DOCS_BASE_URL',
    } as const;
    for (const [path, env] of Object.entries(envs)) expect(settingDef(path as never).env, path).toBe(env);
  });

  it('refuses to save the process-level ones (trust roots and deployment shape), writing nothing', async () => {
    const before = await written();
    for (const content of [
      { 'license.public_key': '{"kty":"OKP"}' },
      { 'license.enforcement_disabled': false },
      { 'platform.container_service_mode': true },
      { 'mesh.auth_key_file': '/tmp/key' },
      { 'secrets.reseal_batch_size': 5 },
    ]) {
      const res = await partial(content);
      expect([res.status, res.body.error_type], JSON.stringify(content)).toEqual([400, 'bad_request']);
      expect(res.body.payload.refused).toEqual([
        { path: Object.keys(content)[0], reason: 'process_level', message: expect.stringMatching(/read-only here/) },
      ]);
    }
    expect(await written()).toBe(before);
  });
});

describe('docs.base_url is read at run time', () => {
  const session = () => http(stack.url, 'POST', '/api/docs/session', { token: admin, body: { path: 'guides/a.html' } });

  it('answers 503 while unset, follows a saved value without a restart, and refuses an unsafe one', async () => {
    const unset = await session();
    expect(unset.status).toBe(503);
    expect(unset.body.error_type).toBe('service_unavailable');

    const saved = await partial({ docs: { base_url: 'https://docs.example.com/platform/' } });
    expect(saved.body.success, saved.text).toBe(true);
    expect(await source('docs.base_url')).toMatchObject({
      effective_value: 'https://docs.example.com/platform',
      source: 'saved',
    });
    const ok = await session();
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.url).toMatch(/^https:\/\/docs\.example\.com\/platform\/auth\/session\?token=/);

    for (const bad of ['http://docs.example.com', 'https://docs.example.com/?next=x', 'https://u:p@docs.example.com']) {
      const res = await partial({ 'docs.base_url': bad });
      expect([res.status, res.body.error_type], bad).toEqual([400, 'bad_request']);
    }
    expect((await source('docs.base_url')).effective_value).toBe('https://docs.example.com/platform');

    expect((await partial({ 'docs.base_url': null })).body.success).toBe(true);
    expect((await session()).status).toBe(503);
  });
});

describe('branding has one store: the branding route and the settings agree', () => {
  it('a PUT is a saved setting, an apply shows in GET branding, and both refuse the same values', async () => {
    const put = await http(stack.url, 'PUT', '/api/config/branding', {
      token: admin,
      body: { product_name: 'Acme Data', primary_color: '#112233' },
    });
    expect(put.status, put.text).toBe(200);
    expect(await source('branding.product_name')).toMatchObject({ effective_value: 'Acme Data', source: 'saved' });
    const frontend = await http(stack.url, 'GET', '/api/config/frontend', { token: admin });
    expect(frontend.body.data.product_name).toBe('Acme Data');
    const [record] = await query<{ applied_by: string; mode: string }>(
      stack.db.url,
      'select applied_by, mode from platform_settings_applies order by id desc limit 1',
    );
    expect(record).toMatchObject({ mode: 'partial' });
    expect(put.body.data.updated_by).toBe(record!.applied_by);

    const applied = await partial({ branding: { primary_color: '#445566', support_email: 'help@example.com' } });
    expect(applied.body.success, applied.text).toBe(true);
    const get = await http(stack.url, 'GET', '/api/config/branding');
    expect(get.status).toBe(200);
    expect(get.body.data).toMatchObject({
      product_name: 'Acme Data',
      primary_color: '#445566',
      support_email: 'help@example.com',
    });

    const before = await written();
    for (const [field, value] of [
      ['primary_color', 'red'],
      ['product_name', ''],
      ['support_url', 'http://example.com'],
      ['support_email', 'not-an-address'],
    ] as const) {
      const applied = await partial({ [`branding.${field}`]: value });
      expect([applied.status, applied.body.error_type], field).toEqual([400, 'bad_request']);
      const viaRoute = await http(stack.url, 'PUT', '/api/config/branding', { token: admin, body: { [field]: value } });
      expect(viaRoute.status, field).toBe(400);
    }
    expect(await written()).toBe(before);

    const cleared = await http(stack.url, 'PUT', '/api/config/branding', {
      token: admin,
      body: { primary_color: null },
    });
    expect(cleared.body.data.primary_color).toBeNull();
    expect(await source('branding.primary_color')).toMatchObject({ source: 'default' });
    const rows = await query(stack.db.url, `select key from deployment_settings where key = 'branding'`);
    expect(rows).toEqual([]);
  });
});

describe('mesh settings need manage_secrets', () => {
  it('refuses a change by a caller without it, and a full apply that would unset them', async () => {
    const em = stack.api.deps.orm.em.fork();
    const configAdmin = new Set(['access_config_panel']);
    const apply = (mode: 'full' | 'partial', content: unknown, permissions: ReadonlySet<string>) =>
      applyConfiguration(em, stack.config, stack.api.deps.settings, {
        mode,
        content: JSON.stringify(content),
        dryRun: false,
        appliedBy: 'tester',
        permissions,
      });
    const before = await written();
    const refused = await apply('partial', { 'mesh.egress': ['api.example.com:443'] }, configAdmin).catch(
      (err: unknown) => err,
    );
    expect(refused).toMatchObject({
      errorType: 'forbidden',
      status: 403,
      payload: {
        refused: [
          { path: 'mesh.egress', reason: 'permission_required', message: expect.stringMatching(/manage_secrets/) },
        ],
      },
    });
    expect(await written()).toBe(before);

    const allowed = await partial({ mesh: { egress: ['api.example.com:443'], advertise_tags: ['tag:web'] } });
    expect(allowed.body.success, allowed.text).toBe(true);
    const snapshot = await written();
    const full = await apply('full', { 'etl.run_timeout_seconds': 60 }, configAdmin).catch((err: unknown) => err);
    expect(full).toMatchObject({ errorType: 'forbidden' });
    expect((full as { payload: { errors: string[] } }).payload.errors.join('\n')).toMatch(
      /mesh\.egress: .*manage_secrets .*full apply unsets/,
    );
    expect(await written()).toBe(snapshot);
  });
});

describe('every configuration body refuses undeclared fields with 422', () => {
  it('answers 422 unprocessable_entity on each config route and writes nothing', async () => {
    const routes = allRoutes().filter((r) => r.bodyKind === 'config');
    expect(routes.length).toBeGreaterThan(20);
    const before = await written();
    for (const route of routes) {
      const hex = '0123456789abcdef0123456789abcdef';
      const params: Record<string, string> = {
        field_path: 'llm_providers.openai.api_key',
        source_id: 'src_0123456789abcdef',
        // Well-formed ids, so the body (not a malformed path) is what is refused.
        project_id: route.path.startsWith('/api/organizational-projects') ? `wprj_${hex}` : `prj_${hex}`,
        question_set_id: `qs_${hex}_phase-1`,
        kind: 'thread',
        ref_id: 'thread-1',
        knowledge_base_id: `kb_${hex}`,
      };
      const path = route.path.replace(/:([a-z_]+)/g, (_m, name: string) => params[name] ?? 'openai');
      const res = await http(stack.url, route.method.toUpperCase(), path, {
        ...(route.access.kind === 'internal' ? { headers: INTERNAL } : { token: admin }),
        body: { undeclared_field: 1 },
      });
      expect(res.status, `${route.method} ${route.path}: ${res.text}`).toBe(422);
      expect(res.body.error_type).toBe('unprocessable_entity');
      expect(res.body.payload.fields).toContain('body.undeclared_field');
    }
    expect(await written()).toBe(before);
    // The issue's own configuration bodies are all among them.
    const configPaths = new Set(routes.map((r) => `${r.method} ${r.path}`));
    for (const p of [
      'post /api/config/setup/apply',
      'post /api/config/setup/apply-partial',
      'post /api/config/user-config',
      'put /api/config/branding',
      'put /api/config/email',
      'post /api/config/eai/assign',
      'post /api/enhancements/eai/assign',
      'put /api/secrets/mesh-auth-key/egress',
      'put /api/secrets/mesh-auth-key/advertise-tags',
      'post /api/license/activate',
      'post /api/docs/session',
      'put /api/internal/demo-access/owner',
    ])
      expect(configPaths, p).toContain(p);
  });
});
