/**
 * Endpoints an administrator saves through the API (shared/http/trust.ts, level `admin`) on the
 * default deployment (neither PLATFORM_EGRESS_ALLOW_PRIVATE nor CRM_ALLOW_INSECURE_LOOPBACK): a host
 * the policy never allows is refused when saved, not only when used: 400 `bad_request` with
 * `payload.code` EGRESS_REFUSED (a Git remote GIT_EGRESS_REFUSED), the host, the field and the flag
 * that would allow it (null: none would); nothing is written. With the flag, the same host saves.
 * Managed-source Git hosts: tests/managed-sources/egress.test.ts; refusals at use:
 * tests/integration/egress.test.ts. No DNS: every host here is a literal address.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jwtConfig, startCrmStack, type CrmStack } from '../crm/support.js';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';

/** The deployment defaults, over the shared stacks' allowance for their loopback fakes. */
const DEFAULT_EGRESS = { PLATFORM_EGRESS_ALLOW_PRIVATE: 'false', CRM_ALLOW_INSECURE_LOOPBACK: 'false' };
const METADATA = '169.254.169.254';

let s: CrmStack;
let fake: Server;
let agentBase: string;
const seen: string[] = [];

beforeAll(async () => {
  // A code-agent provider (and issue tracker) on loopback: GET /v1/models answers for the good key.
  fake = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ items: [] }));
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
  agentBase = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  s = await startCrmStack(DEFAULT_EGRESS);
}, 60_000);
afterAll(async () => {
  await s?.close();
  fake?.close();
});

const call = (method: string, path: string, body?: unknown) =>
  http(s.r.stack.url, method, path, { token: s.admin, ...(body === undefined ? {} : { body }) });

/** Runs `fn` as if the deployment had restarted with a flag (the API reads this configuration object per request). */
async function withFlag<T>(
  flag: 'PLATFORM_EGRESS_ALLOW_PRIVATE' | 'CRM_ALLOW_INSECURE_LOOPBACK',
  fn: () => Promise<T>,
) {
  const c = s.r.stack.config;
  const set = (on: boolean) =>
    flag === 'PLATFORM_EGRESS_ALLOW_PRIVATE' ? (c.egress.allowPrivate = on) : (c.crm.allowInsecureLoopback = on);
  set(true);
  try {
    return await fn();
  } finally {
    set(false);
  }
}

/** The refusal: the spec's error envelope with the payload naming code, host, flag and field. */
function expectRefused(
  res: Awaited<ReturnType<typeof call>>,
  want: { code?: string; host: string; allowed_by: string | null; field: string },
) {
  expect(res.status, res.text).toBe(400);
  expect(res.body).toEqual({
    error: expect.stringMatching(/is not allowed for outbound requests: .*\. Nothing was saved\.$/),
    error_type: 'bad_request',
    request_id: expect.any(String),
    payload: {
      code: want.code ?? 'EGRESS_REFUSED',
      host: want.host,
      allowed_by: want.allowed_by,
      fields: [{ field: want.field, message: expect.any(String) }],
    },
  });
  if (want.allowed_by) expect(res.body.error).toContain(want.allowed_by);
  else expect(res.body.error).toMatch(/never allowed/);
}

const connectionCount = async () =>
  (await query(s.r.stack.db.url, 'select count(*)::int as n from crm_connections'))[0]!.n as number;

describe('CRM connections', () => {
  it('refuse a loopback login host (CRM_ALLOW_INSECURE_LOOPBACK would allow it) and a metadata one; nothing saved', async () => {
    const before = await connectionCount();
    const loopback = await call('POST', '/api/connections', {
      name: 'crm_loopback',
      type: 'crm',
      auth_mode: 'jwt_bearer',
      config: jwtConfig(s),
    });
    expectRefused(loopback, {
      host: new URL(s.crm.url).host,
      allowed_by: 'CRM_ALLOW_INSECURE_LOOPBACK',
      field: 'body.config.login_host',
    });
    const metadata = await call('POST', '/api/connections', {
      name: 'crm_metadata',
      type: 'crm',
      auth_mode: 'jwt_bearer',
      config: jwtConfig(s, { instance_url: `https://${METADATA}` }),
    });
    // The login host is checked first and is refused too; PLATFORM_EGRESS_ALLOW_PRIVATE opens it.
    expect(metadata.status).toBe(400);
    const onlyInstance = await withFlag('CRM_ALLOW_INSECURE_LOOPBACK', () =>
      call('POST', '/api/connections', {
        name: 'crm_metadata',
        type: 'crm',
        auth_mode: 'jwt_bearer',
        config: jwtConfig(s, { instance_url: `https://${METADATA}` }),
      }),
    );
    expectRefused(onlyInstance, { host: METADATA, allowed_by: null, field: 'body.config.instance_url' });
    expect(await connectionCount()).toBe(before);
  });

  it('save with the flag; a PATCH to a private host is refused later and the stored host kept', async () => {
    const created = await withFlag('CRM_ALLOW_INSECURE_LOOPBACK', () =>
      call('POST', '/api/connections', { name: 'crm_ok', type: 'crm', auth_mode: 'jwt_bearer', config: jwtConfig(s) }),
    );
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.connection_test.status).toBe('passed');
    const moved = await call('PATCH', '/api/connections/crm_ok', { config: { login_host: 'https://10.0.0.7' } });
    expectRefused(moved, {
      host: '10.0.0.7',
      allowed_by: 'PLATFORM_EGRESS_ALLOW_PRIVATE',
      field: 'body.config.login_host',
    });
    expect((await call('GET', '/api/connections/crm_ok')).body.data.config.login_host).toBe(s.crm.url);
  });
});

describe('code-agent connections (also the tracker credentials: an api_key connection)', () => {
  it('refuse a loopback api_base_url unless PLATFORM_EGRESS_ALLOW_PRIVATE (the CRM flag no longer opens it); nothing saved or sent', async () => {
    const before = await connectionCount();
    const save = (name: string, api_base_url: string) =>
      call('POST', '/api/connections', {
        name,
        type: 'api_key',
        auth_mode: 'api_key',
        config: { api_key: 'k', api_base_url },
      });
    const loopback = await withFlag('CRM_ALLOW_INSECURE_LOOPBACK', () => save('agent_loopback', agentBase));
    expectRefused(loopback, {
      host: new URL(agentBase).host,
      allowed_by: 'PLATFORM_EGRESS_ALLOW_PRIVATE',
      field: 'body.config.api_base_url',
    });
    expectRefused(await save('agent_metadata', `https://${METADATA}/v1`), {
      host: METADATA,
      allowed_by: null,
      field: 'body.config.api_base_url',
    });
    expect(await connectionCount()).toBe(before);
    expect(seen).toEqual([]);
  });

  it('save and test a loopback api_base_url with PLATFORM_EGRESS_ALLOW_PRIVATE; a later PATCH to a private host is refused', async () => {
    const created = await withFlag('PLATFORM_EGRESS_ALLOW_PRIVATE', () =>
      call('POST', '/api/connections', {
        name: 'tracker_site',
        type: 'api_key',
        auth_mode: 'api_key',
        config: { api_key: 'k', api_base_url: agentBase },
      }),
    );
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.connection_test.status).toBe('passed');
    expect(seen).toContain('GET /v1/models');
    const moved = await call('PATCH', '/api/connections/tracker_site', {
      config: { api_base_url: 'https://192.168.1.9' },
    });
    expectRefused(moved, {
      host: '192.168.1.9',
      allowed_by: 'PLATFORM_EGRESS_ALLOW_PRIVATE',
      field: 'body.config.api_base_url',
    });
    expect((await call('GET', '/api/connections/tracker_site')).body.data.config.api_base_url).toBe(agentBase);
  });
});

describe('language-model providers', () => {
  const providers = async () =>
    (await call('GET', '/api/config/llm-providers/info')).body.data.providers as Array<{
      sub_provider: string | null;
      settings: Record<string, unknown>;
    }>;

  it('refuse a loopback base_url and a metadata oauth_token_url; nothing saved', async () => {
    expectRefused(
      await call('POST', '/api/config/llm-providers/other', {
        sub_provider: 'local',
        base_url: 'http://127.0.0.1:9/v1',
        api_key: 'k',
        model_name: 'm',
      }),
      { host: '127.0.0.1:9', allowed_by: 'PLATFORM_EGRESS_ALLOW_PRIVATE', field: 'body.base_url' },
    );
    expectRefused(
      await call('POST', '/api/config/llm-providers/proxy', {
        base_url: 'https://proxy.example.com/v1',
        auth_mechanism: 'oauth_client_credentials',
        oauth_token_url: `http://${METADATA}/token`,
        oauth_client_id: 'c',
        oauth_client_secret: 's',
      }),
      { host: METADATA, allowed_by: null, field: 'body.oauth_token_url' },
    );
    expect(await providers()).toEqual([]);
  });

  it('save a loopback base_url with PLATFORM_EGRESS_ALLOW_PRIVATE; a PUT to a metadata host keeps the stored one', async () => {
    const saved = await withFlag('PLATFORM_EGRESS_ALLOW_PRIVATE', () =>
      call('POST', '/api/config/llm-providers/other', {
        sub_provider: 'local',
        base_url: 'http://127.0.0.1:9/v1',
        api_key: 'k',
        model_name: 'm',
      }),
    );
    expect(saved.body, saved.text).toMatchObject({ success: true });
    const put = await call('PUT', '/api/config/llm-providers/other', {
      sub_provider: 'local',
      base_url: `http://${METADATA}/v1`,
    });
    expectRefused(put, { host: METADATA, allowed_by: null, field: 'body.base_url' });
    expect((await providers()).map((p) => [p.sub_provider, p.settings.base_url])).toEqual([
      ['local', 'http://127.0.0.1:9/v1'],
    ]);
  });
});

describe('settings that hold an endpoint (configuration apply)', () => {
  const apply = (content: Record<string, unknown>, dry_run = false) =>
    call('POST', '/api/config/setup/apply-partial', { content: JSON.stringify(content), dry_run });
  const source = async (path: string) =>
    (await call('GET', `/api/config/setup/sources?path=${path}`)).body.data as {
      source: string;
      effective_value: unknown;
    };

  it('refuse the ETL runner, a forge API and a Git remote the policy never allows, dry run included; nothing saved', async () => {
    expectRefused(await apply({ 'etl.runner_url': 'http://127.0.0.1:9' }), {
      host: '127.0.0.1:9',
      allowed_by: 'PLATFORM_EGRESS_ALLOW_PRIVATE',
      field: 'etl.runner_url',
    });
    expectRefused(
      await apply({ enhancements: { knowledge_base: { forge_api_url: `http://${METADATA}/api/v3` } } }, true),
      {
        host: METADATA,
        allowed_by: null,
        field: 'enhancements.knowledge_base.forge_api_url',
      },
    );
    expectRefused(
      await apply({
        'etl.run_timeout_seconds': 60,
        'enhancements.coding_agent.agent_cli.target_repo_url': 'https://10.0.0.7/team/app.git',
      }),
      {
        code: 'GIT_EGRESS_REFUSED',
        host: '10.0.0.7',
        allowed_by: 'PLATFORM_EGRESS_ALLOW_PRIVATE',
        field: 'enhancements.coding_agent.agent_cli.target_repo_url',
      },
    );
    for (const path of [
      'etl.runner_url',
      'etl.run_timeout_seconds',
      'enhancements.knowledge_base.forge_api_url',
      'enhancements.coding_agent.agent_cli.target_repo_url',
    ])
      expect((await source(path)).source, path).toBe('default');
  });

  it('save a loopback ETL runner with PLATFORM_EGRESS_ALLOW_PRIVATE', async () => {
    const res = await withFlag('PLATFORM_EGRESS_ALLOW_PRIVATE', () =>
      apply({ 'etl.runner_url': 'http://127.0.0.1:9' }),
    );
    expect(res.body, res.text).toMatchObject({ success: true, result: { added: 1 } });
    expect(await source('etl.runner_url')).toMatchObject({ source: 'saved', effective_value: 'http://127.0.0.1:9' });
  });
});
