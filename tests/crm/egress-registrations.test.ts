/**
 * Container-service deployments (issue 31, item 7; spec, CRM connection): the hosts a CRM connection
 * declares and the instance host it discovers at authorization are registered for the enforced egress
 * list (`mesh.egress`); the browser authorization opens only once they are approved into it; the
 * approval step is a person with `manage_secrets`, and its refusals write nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import { SERVICE_TOKEN } from '../action-review/support.js';
import { startCrmStack, type CrmStack } from './support.js';

let s: CrmStack;
let crmEntry: string;
/** The narrowed list: one public host, and the identity provider's keys (the API fetches them too). */
let narrowedList: string[];
const NAME = 'crm_mesh';
const api = (method: string, path: string, body?: unknown, token = s.admin) =>
  http(s.r.stack.url, method, path, { token, ...(body === undefined ? {} : { body }) });
const REGISTRATIONS = '/api/secrets/mesh-auth-key/egress/registrations';
const registrations = async () =>
  (await api('GET', REGISTRATIONS)).body.data.registrations as Array<Record<string, any>>;
const egressList = async () => (await api('GET', '/api/secrets/mesh-auth-key/egress')).body.data;
const rows = () => query(s.r.stack.db.url, 'select id, entry, status from egress_registrations order by entry');

const authorize = () => api('GET', `/api/connections/${NAME}/oauth/authorize`);
/** The browser's round trip through the fake CRM's consent page back to the callback. */
async function consent(authorizationUrl: string): Promise<Response> {
  const atCrm = await fetch(authorizationUrl, { redirect: 'manual' });
  return fetch(atCrm.headers.get('location')!);
}

beforeAll(async () => {
  s = await startCrmStack({ PLATFORM_CONTAINER_SERVICE_MODE: 'true' });
  crmEntry = `${new URL(s.crm.url).hostname}:${new URL(s.crm.url).port}`;
  // The operator narrows the list: the fake CRM's host is not on it.
  const idp = new URL(s.r.idp.jwksUrl);
  narrowedList = ['api.example.org:443', `${idp.hostname}:${idp.port}`];
  // Saved as the system identity: until the list names the identity provider, no person can sign in here.
  const narrowed = await http(s.r.stack.url, 'PUT', '/api/secrets/mesh-auth-key/egress', {
    headers: { 'x-platform-service-token': SERVICE_TOKEN },
    body: narrowedList,
  });
  expect(narrowed.status, narrowed.text).toBe(200);
});
afterAll(async () => s?.close());

describe('CRM hosts and the egress list in container-service mode', () => {
  it('registers the declared hosts at save, and opens no authorization until they are approved', async () => {
    const created = await api('POST', '/api/connections', {
      type: 'crm',
      name: NAME,
      auth_mode: 'user_oauth',
      config: { login_host: s.crm.url, client_id: s.crm.app.clientId, client_secret: s.crm.app.clientSecret },
    });
    expect(created.status, created.text).toBe(201);
    s.crm.app.callbackUrl = created.body.data.redirect_uri;
    expect(await registrations()).toEqual([
      expect.objectContaining({
        connection_name: NAME,
        entry: crmEntry,
        origin: 'declared',
        status: 'pending',
        admitted: false,
      }),
    ]);

    const refused = await authorize();
    expect(refused.status).toBe(409);
    expect(refused.body.payload).toMatchObject({ code: 'EGRESS_APPROVAL_REQUIRED', pending_entries: [crmEntry] });
    expect((await registrations()).length).toBe(1);
  });

  it('refuses the approval to a person without manage_secrets, an agent, an app token, an unknown id; writes nothing', async () => {
    const [pending] = await registrations();
    const before = await rows();
    const body = { registration_ids: [pending!.registration_id] };
    const reviewer = await api('POST', `${REGISTRATIONS}/approve`, body, s.r.tokens.rita);
    expect([reviewer.status, reviewer.body.payload.required_permission]).toEqual([403, 'manage_secrets']);
    const agent = await api('POST', `${REGISTRATIONS}/approve`, body, await s.r.agent('bot-1', 'thread-1'));
    expect(agent.status).toBe(403);
    const app = await api('POST', `${REGISTRATIONS}/approve`, body, s.r.tokens.app);
    expect([app.status, app.body.payload.required_principal_kinds]).toEqual([403, ['person']]);
    const unknown = await api('POST', `${REGISTRATIONS}/approve`, { registration_ids: ['egr_nothing'] });
    expect([unknown.status, unknown.body.payload.missing_ids]).toEqual([404, ['egr_nothing']]);
    expect(await rows()).toEqual(before);
    expect((await egressList()).entries).toEqual(narrowedList);
  });

  it('approving adds the host to the enforced list; the authorization then completes', async () => {
    const [pending] = await registrations();
    const approved = await api('POST', `${REGISTRATIONS}/approve`, { registration_ids: [pending!.registration_id] });
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body.data.registrations).toEqual([
      expect.objectContaining({ status: 'approved', admitted: true, decided_by: 'ada' }),
    ]);
    expect((await egressList()).entries).toEqual([...narrowedList, crmEntry]);
    const again = await api('POST', `${REGISTRATIONS}/approve`, { registration_ids: [pending!.registration_id] });
    expect([again.status, again.body.payload.code]).toEqual([409, 'egress_registration_not_pending']);

    // The org's instance answers on another host name: discovered at the callback, it is registered too.
    s.crm.instanceUrl = s.crm.url.replace('127.0.0.1', 'localhost');
    const start = await authorize();
    expect(start.status, start.text).toBe(200);
    const done = await consent(start.body.data.authorization_url);
    const refused = (await done.json()) as { payload: Record<string, unknown> };
    expect([done.status, refused.payload.code]).toEqual([409, 'EGRESS_APPROVAL_REQUIRED']);
    expect(refused.payload.pending_entries).toEqual([`localhost:${new URL(s.crm.url).port}`]);
    expect((await query(s.r.stack.db.url, 'select tokens_sealed from crm_connections'))[0]!.tokens_sealed).toBeNull();
    const discovered = (await registrations()).find((r) => r.origin === 'discovered');
    expect(discovered).toMatchObject({
      connection_name: NAME,
      entry: `localhost:${new URL(s.crm.url).port}`,
      status: 'pending',
      admitted: false,
    });

    // Rejected: it stays off the list, and a later save does not register it again.
    const rejected = await api('POST', `${REGISTRATIONS}/reject`, { registration_ids: [discovered!.registration_id] });
    expect(rejected.body.data.registrations).toEqual([
      expect.objectContaining({ status: 'rejected', admitted: false }),
    ]);
    expect((await egressList()).entries).toEqual([...narrowedList, crmEntry]);
    expect((await rows()).map((r) => r.status)).toEqual(['approved', 'rejected']);
  });
});
