import { createServer, type Server } from 'node:http';

/** A token request as the fake saw it: how the client authenticated and what it asked for. */
export interface TokenRequest {
  method: 'client_secret_basic' | 'client_secret_post' | 'none';
  clientId: string | undefined;
  grantType: string | null;
  scope: string | null;
}

/**
 * A local OAuth 2.0 token endpoint (RFC 6749 §4.4 client credentials) at `POST /token`. It accepts
 * the client only through the configured authentication method (RFC 6749 §2.3.1: Basic header with
 * form-encoded id and secret, or `client_id`/`client_secret` form fields; both at once is refused)
 * and issues `tok-1`, `tok-2`, … in order.
 */
export interface FakeOauthToken {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  method: 'client_secret_basic' | 'client_secret_post';
  /** `expires_in` of issued tokens; `undefined` leaves it out of the answer. */
  expiresIn: number | undefined;
  /** Tokens issued so far. */
  issued: number;
  /** What token the next grant issues. */
  nextToken(): string;
  requests: TokenRequest[];
  close(): Promise<void>;
}

const formDecode = (v: string) => decodeURIComponent(v.replace(/\+/g, ' '));

export async function startFakeOauthToken(clientId: string, clientSecret: string): Promise<FakeOauthToken> {
  const fake: FakeOauthToken = {
    tokenUrl: '',
    clientId,
    clientSecret,
    method: 'client_secret_basic',
    expiresIn: 3600,
    issued: 0,
    nextToken: () => `tok-${fake.issued + 1}`,
    requests: [],
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const json = (status: number, value: unknown) =>
        res
          .writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
          .end(JSON.stringify(value));
      if (req.method !== 'POST' || req.url !== '/token') return json(404, { error: 'not_found' });
      if (!req.headers['content-type']?.startsWith('application/x-www-form-urlencoded'))
        return json(400, { error: 'invalid_request', error_description: 'form body expected' });
      const form = new URLSearchParams(raw);
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
      const posted = form.has('client_id') || form.has('client_secret');
      let id: string | undefined;
      let secret: string | undefined;
      if (basic) {
        const decoded = Buffer.from(basic[1]!, 'base64').toString();
        const colon = decoded.indexOf(':');
        id = formDecode(decoded.slice(0, colon));
        secret = formDecode(decoded.slice(colon + 1));
      } else if (posted) {
        id = form.get('client_id') ?? undefined;
        secret = form.get('client_secret') ?? undefined;
      }
      const used = basic ? 'client_secret_basic' : posted ? 'client_secret_post' : 'none';
      fake.requests.push({ method: used, clientId: id, grantType: form.get('grant_type'), scope: form.get('scope') });
      if (basic && posted)
        return json(400, { error: 'invalid_request', error_description: 'more than one client authentication' });
      if (form.get('grant_type') !== 'client_credentials') return json(400, { error: 'unsupported_grant_type' });
      if (used !== fake.method || id !== fake.clientId || secret !== fake.clientSecret)
        return json(401, { error: 'invalid_client', error_description: 'FAKE-IDP: client authentication failed' });
      const token = fake.nextToken();
      fake.issued++;
      return json(200, {
        access_token: token,
        token_type: 'Bearer',
        ...(fake.expiresIn === undefined ? {} : { expires_in: fake.expiresIn }),
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.tokenUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/token`;
  return fake;
}
