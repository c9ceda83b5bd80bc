import { describe, expect, it } from 'vitest';
import { refusedBeforeChange } from '../../shared/action-review/executors/crm-failures.js';
import { loadConfig } from '../../shared/config.js';
import { CrmApiError, CrmAuthError } from '../../shared/crm/errors.js';
import { validateCrmConnection } from '../../shared/crm/connection-config.js';
import { crmEgress } from '../../shared/http/trust.js';
import { mergeDigest } from '../../shared/crm/merge-selection.js';
import { mergeEnvelope, parseMergeResponse, soapFault } from '../../shared/crm/soap.js';
import { projectMerge, SurvivorshipPolicySchema } from '../../shared/crm/survivorship.js';
import { secretBox } from '../../shared/secrets/secret-box.js';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const rec = (id: string, lastModified: string, fields: Record<string, unknown>) => ({ id, lastModified, fields });

describe('survivorship', () => {
  const s = rec('S', '2026-01-01T00:00:00.000+0000', { A: 's', B: null, C: 'old', D: 's' });
  const l1 = rec('L1', '2026-01-03T00:00:00.000+0000', { A: 'l1', B: null, C: 'new', D: 'l1' });
  const l2 = rec('L2', '2026-01-02T00:00:00.000+0000', { A: 'l2', B: 'b2', C: 'mid', D: null });
  it('applies each rule field by field, prefer_survivor by default', () => {
    const policy = SurvivorshipPolicySchema.parse({
      version: '1',
      preview_fields: ['A'],
      rules: { B: 'prefer_non_null', C: 'prefer_most_recent', D: 'prefer_loser' },
    });
    const p = projectMerge(policy, s, [l1, l2]);
    expect(p.fields).toEqual(['A', 'B', 'C', 'D']);
    expect(p.values).toEqual({ A: 's', B: 'b2', C: 'new', D: 'l1' });
    expect(p.sources).toEqual({ A: 'S', B: 'L2', C: 'L1', D: 'L1' });
    expect(p.writes).toEqual({ B: 'b2', C: 'new', D: 'l1' });
  });
  it('digest changes with any stamp, loser order or policy version', () => {
    const sel = { connectionName: 'c', kind: 'Contact' as const, survivorId: 'S', loserIds: ['L1', 'L2'] };
    const d = mergeDigest(sel, '1', s, [l1, l2]);
    expect(mergeDigest(sel, '1', s, [l1, l2])).toBe(d);
    expect(mergeDigest(sel, '2', s, [l1, l2])).not.toBe(d);
    expect(mergeDigest({ ...sel, loserIds: ['L2', 'L1'] }, '1', s, [l2, l1])).not.toBe(d);
    expect(mergeDigest(sel, '1', { ...s, lastModified: '2026-01-09T00:00:00.000+0000' }, [l1, l2])).not.toBe(d);
  });
});

describe('SOAP merge', () => {
  it('builds the partner envelope and reads result and fault shapes', () => {
    const xml = mergeEnvelope('tok&1', { kind: 'Lead', masterId: '00Q000000000001', loserIds: ['00Q000000000002'] });
    expect(xml).toContain(
      '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:urn="urn:partner.soap.sforce.com" xmlns:ens="urn:sobject.partner.soap.sforce.com"',
    );
    expect(xml).toContain('<urn:sessionId>tok&amp;1</urn:sessionId>');
    expect(xml).toContain(
      '<urn:masterRecord xsi:type="ens:Lead"><ens:type>Lead</ens:type><ens:Id>00Q000000000001</ens:Id></urn:masterRecord><urn:recordToMergeIds>00Q000000000002</urn:recordToMergeIds>',
    );
    const failed = parseMergeResponse(
      '<r><result><errors><fields>x</fields><message>gone</message><statusCode>ENTITY_IS_DELETED</statusCode></errors><id>1</id><success>false</success></result></r>',
    );
    expect(failed).toMatchObject({
      success: false,
      errors: [{ statusCode: 'ENTITY_IS_DELETED', message: 'gone', fields: ['x'] }],
    });
    expect(
      soapFault('<s:Fault><faultcode>sf:INVALID_SESSION_ID</faultcode><faultstring>bad</faultstring></s:Fault>'),
    ).toEqual({ code: 'sf:INVALID_SESSION_ID', message: 'bad' });
  });
});

describe('settings', () => {
  const rt = { client_id: 'c', client_secret: 's', refresh_token: 'r' };
  it('accepts plain-http loopback only with the deployment flag; derives hosts; keeps secrets apart', async () => {
    await expect(
      validateCrmConnection(
        'refresh_token',
        { ...rt, login_host: 'http://127.0.0.1:1' },
        { policy: crmEgress(loadConfig({})) },
      ),
    ).rejects.toThrow(/CRM_ALLOW_INSECURE_LOOPBACK/);
    const v = await validateCrmConnection(
      'user_oauth',
      { client_id: 'c', client_secret: 's', login_host: 'test.example.com' },
      { policy: crmEgress(loadConfig({})) },
    );
    expect(v.settings).toMatchObject({
      login_host: 'https://test.example.com',
      token_url: 'https://test.example.com/services/oauth2/token',
      authorization_url: 'https://test.example.com/services/oauth2/authorize',
      scopes: ['api', 'refresh_token'],
    });
    expect(v.secrets).toEqual({ client_secret: 's' });
    // Left at the published (full-URL) default, the URLs derive from login_host; another URL is kept.
    const atDefault = await validateCrmConnection(
      'user_oauth',
      {
        client_id: 'c',
        client_secret: 's',
        login_host: 'test.example.com',
        authorization_url: 'https://login.salesforce.com/services/oauth2/authorize',
        token_url: 'https://login.salesforce.com/services/oauth2/token',
      },
      { policy: crmEgress(loadConfig({})) },
    );
    expect(atDefault.settings).toMatchObject({
      token_url: 'https://test.example.com/services/oauth2/token',
      authorization_url: 'https://test.example.com/services/oauth2/authorize',
    });
    const custom = await validateCrmConnection(
      'user_oauth',
      {
        client_id: 'c',
        client_secret: 's',
        login_host: 'test.example.com',
        token_url: 'https://sso.example.com/oauth/token',
      },
      { policy: crmEgress(loadConfig({})) },
    );
    expect(custom.settings.token_url).toBe('https://sso.example.com/oauth/token');
    expect(loadConfig({}).crm).toEqual({ allowInsecureLoopback: false, maxApprovalTtlSeconds: 86_400 });
  });

  it('refuses a host the CRM egress policy never allows with EGRESS_REFUSED, naming the flag that would allow it', async () => {
    const refusal = (login_host: string, env: Record<string, string> = {}) =>
      validateCrmConnection('refresh_token', { ...rt, login_host }, { policy: crmEgress(loadConfig(env)) }).then(
        () => null,
        (e: { payload?: unknown }) => e.payload,
      );
    expect(await refusal('http://127.0.0.1:1')).toEqual({
      code: 'EGRESS_REFUSED',
      host: '127.0.0.1:1',
      allowed_by: 'CRM_ALLOW_INSECURE_LOOPBACK',
      fields: [{ field: 'body.config.login_host', message: expect.stringMatching(/is loopback/) }],
    });
    expect(await refusal('10.1.2.3')).toMatchObject({ host: '10.1.2.3', allowed_by: 'PLATFORM_EGRESS_ALLOW_PRIVATE' });
    expect(await refusal('https://169.254.169.254', { PLATFORM_EGRESS_ALLOW_PRIVATE: 'true' })).toMatchObject({
      allowed_by: null,
    });
    expect(await refusal('http://127.0.0.1:1', { CRM_ALLOW_INSECURE_LOOPBACK: 'true' })).toBeNull();
    expect(await refusal('https://10.1.2.3', { PLATFORM_EGRESS_ALLOW_PRIVATE: 'true' })).toBeNull();
    // PLATFORM_EGRESS_ALLOW_PRIVATE reaches a loopback CRM over https; plain http there stays the CRM flag's.
    expect(await refusal('https://127.0.0.1:1', { PLATFORM_EGRESS_ALLOW_PRIVATE: 'true' })).toBeNull();
    expect(await refusal('http://127.0.0.1:1', { PLATFORM_EGRESS_ALLOW_PRIVATE: 'true' })).toMatchObject({
      fields: [{ field: 'body.config.login_host', message: expect.stringMatching(/CRM_ALLOW_INSECURE_LOOPBACK=true/) }],
    });
  });
  it('seals with AES-256-GCM; without PLATFORM_SECRETS_KEY a 0600 key file is generated once', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'secrets-'));
    const config = loadConfig({ PLATFORM_DATA_DIR: dir });
    const sealed = secretBox(config).seal('hunter2');
    expect(sealed).not.toContain('hunter2');
    expect(secretBox(loadConfig({ PLATFORM_DATA_DIR: dir })).open(sealed)).toBe('hunter2');
    expect(statSync(path.join(dir, 'secrets.key')).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(dir, 'secrets.key'), 'utf8').trim().length).toBeGreaterThan(30);
    expect(() =>
      secretBox(loadConfig({ PLATFORM_SECRETS_KEY: 'another-key-of-at-least-32-bytes!' })).open(sealed),
    ).toThrow(/PLATFORM_SECRETS_KEY differs/);
  });
});

describe('CRM failures', () => {
  it('carry codes and an error_id in message and payload; the CRM’s text is for the log only', () => {
    const err = new CrmApiError(502, 'HTTP_502', '<html>upstream db-7.internal refused</html>');
    expect(err.message).toMatch(/^The CRM answered 502 HTTP_502 \(error_id [0-9a-f-]{36}\)\.$/);
    expect(JSON.stringify(err.payload)).not.toContain('db-7');
    expect(err.payload).toMatchObject({ code: 'HTTP_502', crm_status: 502, error_id: err.errorId });
    expect(err.logDetail).toMatchObject({
      error_id: err.errorId,
      crm_text: '<html>upstream db-7.internal refused</html>',
    });
    expect(
      new CrmApiError(400, 'DUPLICATE_VALUE', 'duplicate value found: Email on record 003…').message,
    ).not.toContain('duplicate value');
  });

  it('count as "nothing was written" only when the call was refused before any change', () => {
    const network = (code: string) =>
      Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error(code), { code }) });
    const refused = [
      new CrmApiError(500, 'INVALID_SESSION_ID'),
      new CrmApiError(500, 'INVALID_CROSS_REFERENCE_KEY'),
      new CrmApiError(500, 'ENTITY_IS_DELETED'),
      new CrmApiError(400, 'HTTP_400'),
      new CrmApiError(404, 'NOT_FOUND'),
      new CrmAuthError('invalid_grant', 'expired access/refresh token'),
      network('ECONNREFUSED'),
    ];
    const unknown = [
      new CrmApiError(500, 'UNKNOWN_EXCEPTION'),
      new CrmApiError(502, 'HTTP_502'),
      new CrmApiError(503, 'HTTP_503'),
      new CrmApiError(504, 'HTTP_504'),
      network('ECONNRESET'),
      Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' }),
      new Error('the merge response has no result element'),
    ];
    for (const err of refused) expect(refusedBeforeChange(err), err.message).toBe(true);
    for (const err of unknown) expect(refusedBeforeChange(err), err.message).toBe(false);
  });
});
