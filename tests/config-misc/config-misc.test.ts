/**
 * The hosted-demo owner (internal route) and the configuration routes a PostgreSQL deployment
 * answers plainly: warehouse status, e-mail, warehouse-host context, the connection inventory with
 * its sensitive fields, external access integrations; licensing without a public key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { FakeIdp } from '../helpers/fake-idp.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startMiscStack } from './support.js';

let s: OidcStack<'admin' | 'reviewer' | 'member'>;
let idp: FakeIdp;
let stack: Stack;
let admin: string;
let reviewer: string;
let member: string;
const internal = { 'x-platform-internal-token': 'internal-secret' };

beforeAll(async () => {
  s = await startMiscStack({
    env: { PLATFORM_INTERNAL_TOKEN: 'internal-secret', PLATFORM_PUBLIC_BASE_URL: 'https://agents.acme.example' },
    tokens: {
      admin: { sub: 'root', roles: ['admin'] },
      reviewer: { sub: 'rita', roles: ['reviewer'] },
      member: { sub: 'ann', roles: ['member'] },
    },
  });
  ({
    stack,
    idp,
    tokens: { admin, reviewer, member },
  } = s);
});
afterAll(() => s?.close());

describe('PUT /api/internal/demo-access/owner', () => {
  const put = (body: unknown, headers: Record<string, string> = internal) =>
    http(stack.url, 'PUT', '/api/internal/demo-access/owner', { headers, body });
  const stored = () => query(stack.db.url, `select value from deployment_settings where key = 'demo_access.owner'`);

  it('takes only the internal token (401 absent or unrecognised; a bearer token is not enough)', async () => {
    const body = { email: 'owner@acme.example', email_verified: true, sub: '', force: false };
    const absent = await put(body, {});
    expect(absent.status).toBe(401);
    expect(absent.body.payload.reason).toBe('internal_token_absent');
    const wrong = await put(body, { 'x-platform-internal-token': 'guess' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.payload.reason).toBe('internal_token_unrecognised');
    const bearer = await http(stack.url, 'PUT', '/api/internal/demo-access/owner', { token: admin, body });
    expect(bearer.status).toBe(401);
    expect(await stored()).toEqual([]);
  });

  it('needs a non-empty, verified address (400) and refuses undeclared fields (422)', async () => {
    for (const body of [
      { email: '', email_verified: true },
      { email: 'not-an-address', email_verified: true },
      { email: 'owner@acme.example' },
      { email: 'owner@acme.example', email_verified: false },
    ]) {
      const res = await put(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await put({ email: 'owner@acme.example', email_verified: true, role: 'admin' })).status).toBe(422);
    expect(await stored()).toEqual([]);
  });

  it('sets the owner, is idempotent for the same owner, records a later sub with its display name', async () => {
    const first = await put({ email: 'Owner@Acme.example', email_verified: true, sub: '' });
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toEqual({
      owner_sub: null,
      owner_email: 'Owner@Acme.example',
      owner_display_name: null,
      changed: true,
    });
    const same = await put({ email: 'owner@acme.example', email_verified: true, sub: '', force: false });
    expect(same.body.data.changed).toBe(false);

    // The owner signs in; the provisioner then names their subject.
    const owner = await idp.sign({
      sub: 'owner-1',
      name: 'Olive Owner',
      email: 'owner@acme.example',
      roles: ['member'],
    });
    await http(stack.url, 'GET', '/api/auth/me', { token: owner });
    const withSub = await put({ email: 'owner@acme.example', email_verified: true, sub: 'owner-1' });
    expect(withSub.body.data).toEqual({
      owner_sub: 'owner-1',
      owner_email: 'Owner@Acme.example',
      owner_display_name: 'Olive Owner',
      changed: true,
    });
  });

  it('refuses a different owner with 409 without force, leaving the owner; replaces it with force', async () => {
    const before = await stored();
    const other = await put({ email: 'someone@else.example', email_verified: true, sub: 'other-9' });
    expect(other.status).toBe(409);
    expect(other.body.payload).toMatchObject({ code: 'DEMO_OWNER_EXISTS', owner_email: 'Owner@Acme.example' });
    // Same address but a different subject is a different owner too.
    const otherSub = await put({ email: 'owner@acme.example', email_verified: true, sub: 'impostor' });
    expect(otherSub.status).toBe(409);
    expect(await stored()).toEqual(before);

    const forced = await put({ email: 'someone@else.example', email_verified: true, sub: 'other-9', force: true });
    expect(forced.status).toBe(200);
    expect(forced.body.data).toEqual({
      owner_sub: 'other-9',
      owner_email: 'someone@else.example',
      owner_display_name: null,
      changed: true,
    });
    expect((await stored())[0]!.value).toMatchObject({ email: 'someone@else.example', sub: 'other-9' });
  });
});

describe('warehouse and e-mail on a PostgreSQL deployment', () => {
  it('warehouse status: not a warehouse, no current one, none available (any signed-in user)', async () => {
    const res = await http(stack.url, 'GET', '/api/config/warehouse/status', { token: member });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: { is_snowflake: false, metadata_backend: 'postgresql', current_warehouse: null, available_warehouses: [] },
    });
    expect((await http(stack.url, 'GET', '/api/config/warehouse/status')).status).toBe(401);
  });

  it('e-mail: saves a default address that stays unvalidated, reports sending unavailable, deletes it', async () => {
    const empty = await http(stack.url, 'GET', '/api/config/email/status', { token: admin });
    expect(empty.body.data).toMatchObject({
      configured: false,
      default_address: null,
      is_validated: false,
      sending_available: false,
    });
    const saved = await http(stack.url, 'PUT', '/api/config/email', {
      token: admin,
      body: { default_address: 'ops@acme.example' },
    });
    expect(saved.status).toBe(200);
    expect(saved.body.data).toMatchObject({
      default_address: 'ops@acme.example',
      is_validated: false,
      updated_by: 'root',
    });
    const status = await http(stack.url, 'GET', '/api/config/email/status', { token: admin });
    expect(status.body.data).toMatchObject({
      configured: true,
      default_address: 'ops@acme.example',
      is_validated: false,
    });
    expect((await http(stack.url, 'GET', '/api/config/email', { token: admin })).body.data.default_address).toBe(
      'ops@acme.example',
    );

    const undeclared = await http(stack.url, 'PUT', '/api/config/email', {
      token: admin,
      body: { default_address: 'x@acme.example', is_validated: true },
    });
    expect(undeclared.status).toBe(422);
    const bad = await http(stack.url, 'PUT', '/api/config/email', { token: admin, body: { default_address: 'nope' } });
    expect(bad.status).toBe(400);
    expect((await http(stack.url, 'GET', '/api/config/email', { token: admin })).body.data.default_address).toBe(
      'ops@acme.example',
    );

    const reset = await http(stack.url, 'DELETE', '/api/config/email/status', { token: admin });
    expect(reset.body.data).toMatchObject({ deleted: true, configured: false, default_address: null });
    await http(stack.url, 'PUT', '/api/config/email', { token: admin, body: { default_address: 'ops@acme.example' } });
    const deleted = await http(stack.url, 'DELETE', '/api/config/email', { token: admin });
    expect(deleted.body.data).toMatchObject({ deleted: true, default_address: null });
    const again = await http(stack.url, 'DELETE', '/api/config/email', { token: admin });
    expect(again.body.data.deleted).toBe(false);
  });

  it('e-mail routes need access_config_panel', async () => {
    for (const [method, path] of [
      ['GET', '/api/config/email'],
      ['PUT', '/api/config/email'],
      ['DELETE', '/api/config/email'],
      ['GET', '/api/config/email/status'],
      ['DELETE', '/api/config/email/status'],
    ] as const) {
      const body = method === 'PUT' ? { default_address: 'a@acme.example' } : undefined;
      const res = await http(stack.url, method, path, { token: member, body });
      expect(res.status, `${method} ${path}`).toBe(403);
    }
    expect(await query(stack.db.url, `select 1 from deployment_settings where key = 'email.default_address'`)).toEqual(
      [],
    );
  });
});

async function insertConnection(name: string, createdBy: string) {
  await query(
    stack.db.url,
    `insert into crm_connections (id, tenant, name, type, auth_mode, settings, secrets_sealed, merge_enabled, policy,
       egress_hosts, test_result, tokens_sealed, oauth_pending_sealed, created_by, created_at, updated_at)
     values ($1, 'default', $2, 'crm', 'client_credentials', $3::jsonb, 'sealed', false, null, $4::jsonb, null, null, null, $5, now(), now())`,
    [
      `conn-${name}`,
      name,
      JSON.stringify({ login_host: `https://${name}.crm.example`, client_id: 'abc' }),
      JSON.stringify([`${name}.crm.example`]),
      createdBy,
    ],
  );
}

describe('connections and outbound-access context', () => {
  beforeAll(async () => {
    await insertConnection('alpha', 'root');
    await insertConnection('beta', 'rita');
  });

  it('db-connections: sensitive fields for manage_all_connections and for the owner only', async () => {
    const asAdmin = await http(stack.url, 'GET', '/api/config/db-connections', { token: admin });
    expect(asAdmin.status).toBe(200);
    expect(asAdmin.body.data.connections).toEqual([
      expect.objectContaining({
        name: 'alpha',
        connection_kind: 'crm',
        owner: 'root',
        sensitive_fields_included: true,
        connection_string: 'https://alpha.crm.example',
        allowed_bot_ids: null,
        allowed_user_ids: null,
      }),
      expect.objectContaining({ name: 'beta', sensitive_fields_included: true }),
    ]);
    // The reviewer has view_connections and owns beta only.
    const asReviewer = await http(stack.url, 'GET', '/api/config/db-connections', { token: reviewer });
    expect(asReviewer.status).toBe(200);
    const [alpha, beta] = asReviewer.body.data.connections;
    expect(alpha.sensitive_fields_included).toBe(false);
    for (const field of ['allowed_bot_ids', 'allowed_user_ids', 'connection_string'])
      expect(alpha).not.toHaveProperty(field);
    expect(beta).toMatchObject({ sensitive_fields_included: true, connection_string: 'https://beta.crm.example' });
    expect(JSON.stringify(asAdmin.body)).not.toContain('sealed');
  });

  it('db-connections refuses a caller with none of the three permissions (403)', async () => {
    const res = await http(stack.url, 'GET', '/api/config/db-connections', { token: member });
    expect(res.status).toBe(403);
    expect(res.body.payload.required_permissions_any).toEqual([
      'access_config_panel',
      'manage_all_connections',
      'view_connections',
    ]);
  });

  it('warehouse-host context: public host and URLs, and the hosts connections reach', async () => {
    const res = await http(stack.url, 'GET', '/api/config/warehouse-host/context', { token: admin });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      host: 'agents.acme.example',
      public_url: 'https://agents.acme.example',
      mcp_url: 'https://agents.acme.example/mcp/',
      public_url_configured: true,
      is_snowflake: false,
      egress_hosts: [
        { connection: 'alpha', host: 'alpha.crm.example' },
        { connection: 'beta', host: 'beta.crm.example' },
      ],
    });
    expect((await http(stack.url, 'GET', '/api/config/warehouse-host/context', { token: member })).status).toBe(403);
  });
});

describe('external access integrations', () => {
  it('records a valid assignment on both paths with verification not checked; status reads it', async () => {
    const res = await http(stack.url, 'POST', '/api/config/eai/assign', {
      token: admin,
      body: { reference_name: 'CRM_ACCESS_1', integration_type: 'crm_egress' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      recorded: true,
      reference_name: 'CRM_ACCESS_1',
      verification: { checked: false, applied: false },
    });
    const enh = await http(stack.url, 'POST', '/api/enhancements/eai/assign', {
      token: admin,
      body: { reference_name: 'LLM_ACCESS', integration_type: 'llm' },
    });
    expect(enh.body).toMatchObject({ success: true, recorded: true });
    const status = await http(stack.url, 'GET', '/api/config/eai/CRM_ACCESS_1/assigned', { token: admin });
    expect(status.body.data).toMatchObject({
      reference_name: 'CRM_ACCESS_1',
      assigned: true,
      integration_type: 'crm_egress',
      assigned_by: 'root',
      verification: { checked: false, applied: false },
    });
    const none = await http(stack.url, 'GET', '/api/config/eai/NOT_ASSIGNED/assigned', { token: admin });
    expect(none.body.data).toMatchObject({ assigned: false, integration_type: null });
  });

  it('answers success false for names other than letters, digits, underscore, recording nothing', async () => {
    const before = await query(stack.db.url, 'select reference_name from eai_assignments order by 1');
    for (const body of [
      { reference_name: 'bad-name', integration_type: 'x' },
      { reference_name: 'ok_name', integration_type: 'drop table;' },
      { reference_name: '', integration_type: 'x' },
    ]) {
      for (const path of ['/api/config/eai/assign', '/api/enhancements/eai/assign']) {
        const res = await http(stack.url, 'POST', path, { token: admin, body });
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({
          success: false,
          recorded: false,
          verification: { checked: false, applied: false },
        });
      }
    }
    expect(await query(stack.db.url, 'select reference_name from eai_assignments order by 1')).toEqual(before);
    const badPath = await http(stack.url, 'GET', '/api/config/eai/bad-name/assigned', { token: admin });
    expect(badPath.status).toBe(400);
  });

  it('needs access_config_panel', async () => {
    const body = { reference_name: 'X', integration_type: 'y' };
    expect((await http(stack.url, 'POST', '/api/config/eai/assign', { token: member, body })).status).toBe(403);
    expect((await http(stack.url, 'POST', '/api/enhancements/eai/assign', { token: member, body })).status).toBe(403);
    expect((await http(stack.url, 'GET', '/api/config/eai/X/assigned', { token: member })).status).toBe(403);
  });
});

describe('licensing without a public key', () => {
  it('reports enforcement disabled (no public key), checks ok, and activation answers 501', async () => {
    const status = await http(stack.url, 'GET', '/api/license/status', { token: admin });
    expect(status.body.data).toMatchObject({
      activated: false,
      spcs_mode: false,
      enforcement_disabled: true,
      enforcement_disabled_reason: 'no_public_key',
      public_key_configured: false,
    });
    const check = await http(stack.url, 'GET', '/api/license/check', { token: admin });
    expect(check.body.data).toMatchObject({ ok: true, reason: 'not_activated', enforcement_disabled: true });
    const activate = await http(stack.url, 'POST', '/api/license/activate', {
      token: admin,
      body: { license: 'aaa.bbb.ccc' },
    });
    expect(activate.status).toBe(501);
    expect(activate.body.error_type).toBe('not_available_here');
  });
});
