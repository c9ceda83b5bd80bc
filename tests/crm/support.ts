import { exportPKCS8, exportSPKI, generateKeyPair } from 'jose';
import { expect } from 'vitest';
import { startFakeCrm, type FakeCrm } from '../helpers/fake-crm.js';
import { http } from '../helpers/stack.js';
import { startReviewStack, type ReviewStack } from '../action-review/support.js';

export interface CrmStack {
  r: ReviewStack;
  crm: FakeCrm;
  privateKeyPem: string;
  /** An admin (manage_all_connections) and the reviewers' tokens. */
  admin: string;
  close(): Promise<void>;
}

export const POLICY = {
  version: 'v1',
  preview_fields: ['LastName', 'Email'],
  rules: { Email: 'prefer_non_null', Phone: 'prefer_most_recent' },
};

/** Ids: 18 characters, like the CRM's. */
export const SURVIVOR = '003000000000001AAA';
export const LOSER_A = '003000000000002AAA';
export const LOSER_B = '003000000000003AAA';

/** A review stack whose deployment allows loopback CRMs, and a fake CRM with three duplicate contacts. */
export async function startCrmStack(env: Record<string, string> = {}, logLines?: string[]): Promise<CrmStack> {
  const keys = await generateKeyPair('RS256', { extractable: true });
  const crm = await startFakeCrm(await exportSPKI(keys.publicKey));
  const r = await startReviewStack(
    { CRM_ALLOW_INSECURE_LOOPBACK: 'true', PLATFORM_SECRETS_KEY: 'test-secrets-key-of-at-least-32-bytes', ...env },
    logLines,
  );
  const admin = await r.idp.sign({ sub: 'ada', name: 'Ada Admin', roles: ['admin'] }, { expiresIn: '1h' });
  return {
    r,
    crm,
    privateKeyPem: await exportPKCS8(keys.privateKey),
    admin,
    close: async () => (await r.close(), await crm.close()),
  };
}

/** Fresh records, a well-behaved SOAP endpoint and zeroed write counters before each test. */
export function resetFakeCrm(crm: FakeCrm): void {
  seedContacts(crm);
  crm.soapMode = 'ok';
  crm.counts.soap = 0;
  crm.counts.patch = 0;
}

export function seedContacts(crm: FakeCrm): void {
  crm.records.set(SURVIVOR, {
    type: 'Contact',
    fields: { LastName: 'Lovelace', Email: null, Phone: '111' },
    lastModified: '2026-10-01T10:00:00.000+0000',
    deleted: false,
  });
  crm.records.set(LOSER_A, {
    type: 'Contact',
    fields: { LastName: 'Lovelace A.', Email: 'ada@example.com', Phone: '222' },
    lastModified: '2026-10-03T10:00:00.000+0000',
    deleted: false,
  });
  crm.records.set(LOSER_B, {
    type: 'Contact',
    fields: { LastName: 'L.', Email: 'other@example.com', Phone: null },
    lastModified: '2026-10-02T10:00:00.000+0000',
    deleted: false,
  });
}

export const jwtConfig = (s: CrmStack, extra: Record<string, unknown> = {}) => ({
  consumer_key: s.crm.app.clientId,
  username: s.crm.app.jwtUser,
  private_key: s.privateKeyPem,
  login_host: s.crm.url,
  merge_enabled: 'true',
  merge_survivorship_policy: JSON.stringify(POLICY),
  ...extra,
});

/** Saves a jwt_bearer connection with merges enabled; answers the response body. */
export async function createJwtConnection(s: CrmStack, name = 'crm_main', extra: Record<string, unknown> = {}) {
  const res = await http(s.r.stack.url, 'POST', '/api/connections', {
    token: s.admin,
    body: { name, type: 'crm', auth_mode: 'jwt_bearer', config: jwtConfig(s, extra) },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.data;
}

export const selection = (connection = 'crm_main') => ({
  connection_name: connection,
  record_kind: 'Contact',
  survivor_id: SURVIVOR,
  loser_ids: [LOSER_A, LOSER_B],
});

export const APPROVALS = '/api/crm/merge/approvals';

/** Requests an approval for the default selection (as Rita); answers its id. */
export async function requestMerge(s: CrmStack): Promise<string> {
  const res = await http(s.r.stack.url, 'POST', APPROVALS, { token: s.r.tokens.rita, body: selection() });
  expect(res.status, res.text).toBe(201);
  return res.body.data.approval_id as string;
}

/** Requests and approves (as Ravi, a person with APPROVE_AGENT_ACTION); answers the id. */
export async function requestAndApprove(s: CrmStack): Promise<string> {
  const id = await requestMerge(s);
  const res = await http(s.r.stack.url, 'POST', `${APPROVALS}/${id}/approve`, { token: s.r.tokens.ravi, body: {} });
  expect(res.status, res.text).toBe(200);
  return id;
}

/** Calls the crm_connector tool through POST /api/tool_call. */
export const crmTool = (s: CrmStack, token: string, args: Record<string, unknown>) =>
  http(s.r.stack.url, 'POST', '/api/tool_call', {
    token,
    body: { tool: 'crm_connector', arguments: { connection_name: 'crm_main', ...args } },
  });
