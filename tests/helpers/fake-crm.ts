import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { importSPKI, jwtVerify } from 'jose';
import { finishFakeCrm } from './fake-crm-data.js';
import type { FakeCrm } from './fake-crm-types.js';

export type { FakeCrm } from './fake-crm-types.js';

/** Salesforce-style stamp: `2024-05-01T12:34:56.000+0000`. */
const stamp = (ms: number) => new Date(ms).toISOString().replace('Z', '+0000');
const b64url = (b: Buffer) => b.toString('base64url');

/**
 * A local CRM on loopback speaking the real wire protocol (PROTOCOLS.md): the token endpoint with
 * four grants and the real error pairs, authorize with PKCE, REST reads/PATCH/query, and the SOAP
 * merge with its envelope, result and fault shapes.
 */
export async function startFakeCrm(publicKeyPem: string): Promise<FakeCrm> {
  const accessTokens = new Set<string>();
  const refreshTokens = new Set<string>();
  const codes = new Map<string, { redirectUri: string; challenge: string }>();
  let clock = Date.parse('2026-11-01T10:00:00Z');
  const tick = () => stamp((clock += 1000));
  const crm: FakeCrm = {
    url: '',
    records: new Map(),
    app: {
      clientId: 'consumer-key-1',
      clientSecret: 'consumer-secret-1',
      publicKeyPem,
      callbackUrl: '',
      jwtUser: 'integration@example.com',
      runAsUser: true,
    },
    customDomain: true,
    soapMode: 'ok',
    counts: { soap: 0, patch: 0, token: {} },
    calls: [],
    queryPageSize: 2000,
    revokeAccessTokens: () => accessTokens.clear(),
    releaseHanging: () => {},
    issueRefreshToken() {
      const t = `rt-${b64url(randomBytes(12))}`;
      refreshTokens.add(t);
      return t;
    },
    touch(id, field, value) {
      const r = crm.records.get(id)!;
      r.fields[field] = value;
      r.lastModified = tick();
    },
    close: async () => {},
  };

  const json = (res: ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const oauthError = (res: ServerResponse, error: string, description: string) =>
    json(res, 400, { error, error_description: description });
  const restError = (res: ServerResponse, status: number, errorCode: string, message: string) =>
    json(res, status, [{ message, errorCode, fields: [] }]);
  const issue = (res: ServerResponse, withRefresh: boolean) => {
    const access = `at-${b64url(randomBytes(12))}`;
    accessTokens.add(access);
    const id = `${crm.url}/id/00D000000000001/005000000000001`;
    const issuedAt = String(Date.now());
    const signature = createHmac('sha256', crm.app.clientSecret)
      .update(id + issuedAt)
      .digest('base64');
    json(res, 200, {
      access_token: access,
      instance_url: crm.instanceUrl ?? crm.url,
      id,
      token_type: 'Bearer',
      issued_at: issuedAt,
      signature,
      scope: 'api refresh_token',
      ...(withRefresh ? { refresh_token: crm.issueRefreshToken() } : {}),
    });
  };

  async function token(form: URLSearchParams, res: ServerResponse) {
    const grant = form.get('grant_type') ?? '';
    crm.counts.token[grant] = (crm.counts.token[grant] ?? 0) + 1;
    const clientOk = () => {
      if (form.get('client_id') !== crm.app.clientId)
        return void oauthError(res, 'invalid_client_id', 'client identifier invalid');
      if (form.get('client_secret') !== crm.app.clientSecret)
        return void oauthError(res, 'invalid_client', 'invalid client credentials');
      return true;
    };
    switch (grant) {
      case 'authorization_code': {
        if (!clientOk()) return;
        const code = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        if (!code) return oauthError(res, 'invalid_grant', 'invalid authorization code');
        if (form.get('redirect_uri') !== code.redirectUri)
          return oauthError(res, 'redirect_uri_mismatch', 'redirect_uri must match configuration');
        if (
          b64url(
            createHash('sha256')
              .update(form.get('code_verifier') ?? '')
              .digest(),
          ) !== code.challenge
        )
          return oauthError(res, 'invalid_grant', 'invalid code verifier');
        return issue(res, true);
      }
      case 'urn:ietf:params:oauth:grant-type:jwt-bearer': {
        try {
          const { payload } = await jwtVerify(
            form.get('assertion') ?? '',
            await importSPKI(crm.app.publicKeyPem, 'RS256'),
            { algorithms: ['RS256'] },
          );
          if (payload.aud !== crm.url) return oauthError(res, 'invalid_grant', 'audience is invalid');
          if (payload.iss !== crm.app.clientId)
            return oauthError(res, 'invalid_client_id', 'client identifier invalid');
          if (payload.sub !== crm.app.jwtUser)
            return oauthError(res, 'invalid_grant', "user hasn't approved this consumer");
          if (!payload.exp || payload.exp > Date.now() / 1000 + 180)
            return oauthError(res, 'invalid_grant', 'invalid assertion');
        } catch {
          return oauthError(res, 'invalid_grant', 'invalid assertion');
        }
        return issue(res, false);
      }
      case 'refresh_token':
        if (form.get('client_id') !== crm.app.clientId)
          return oauthError(res, 'invalid_client_id', 'client identifier invalid');
        if (!refreshTokens.has(form.get('refresh_token') ?? ''))
          return oauthError(res, 'invalid_grant', 'expired access/refresh token');
        return issue(res, false);
      case 'client_credentials':
        if (!crm.customDomain) return oauthError(res, 'invalid_grant', 'request not supported on this domain');
        if (!clientOk()) return;
        if (!crm.app.runAsUser) return oauthError(res, 'invalid_grant', 'no client credentials user enabled');
        return issue(res, false);
      default:
        return oauthError(res, 'unsupported_grant_type', 'grant type not supported');
    }
  }

  function authorize(url: URL, res: ServerResponse) {
    const redirectUri = url.searchParams.get('redirect_uri') ?? '';
    if (url.searchParams.get('client_id') !== crm.app.clientId)
      return oauthError(res, 'invalid_client_id', 'client identifier invalid');
    if (redirectUri !== crm.app.callbackUrl) {
      // The real service shows an error page; its redirect carries the same pair.
      const back = new URL(redirectUri);
      back.search = new URLSearchParams({
        error: 'redirect_uri_mismatch',
        error_description: 'redirect_uri must match configuration',
        state: url.searchParams.get('state') ?? '',
      }).toString();
      return res.writeHead(302, { location: back.toString() }).end();
    }
    const code = b64url(randomBytes(16));
    codes.set(code, { redirectUri, challenge: url.searchParams.get('code_challenge') ?? '' });
    const back = new URL(redirectUri);
    back.search = new URLSearchParams({ code, state: url.searchParams.get('state') ?? '' }).toString();
    res.writeHead(302, { location: back.toString() }).end();
  }

  return finishFakeCrm(crm, { token, authorize, json, restError, tick, accessTokens });
}
