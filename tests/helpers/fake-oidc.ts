import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';

export interface FakeOidc {
  issuer: string;
  audience: string;
  jwksUrl: string;
  clientId: string;
  clientSecret: string;
  /** Every request to /authorize and /token, for assertions about what the platform forwarded. */
  authorizeRequests: URL[];
  tokenRequests: URLSearchParams[];
  /** Signs an access token as this provider would (or with a foreign key / another audience). */
  sign(claims: JWTPayload, options?: { audience?: string; foreignKey?: boolean }): Promise<string>;
  close(): Promise<void>;
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};
const readBody = async (req: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
};

/**
 * A local OpenID provider on 127.0.0.1: discovery, JWKS, an authorization endpoint that signs the
 * user `subject` in at once (redirecting back with a code), and a token endpoint that checks the
 * client credentials, the redirect URI and PKCE S256 before issuing an access token for `audience`
 * (with `claims` added to the signed-in user's token, e.g. a hosted deployment's tenant and installation).
 */
export async function startFakeOidc(
  options: { subject?: string; roles?: string[]; claims?: JWTPayload } = {},
): Promise<FakeOidc> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'oidc-1', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, { challenge: string; redirectUri: string; clientId: string }>();
  const authorizeRequests: URL[] = [];
  const tokenRequests: URLSearchParams[] = [];
  let issuer = '';
  const audience = 'platform-api';
  const clientId = 'platform-gateway';
  const clientSecret = 'upstream-secret';
  const foreign = await generateKeyPair('RS256');
  const sign = (claims: JWTPayload, opts: { audience?: string; foreignKey?: boolean } = {}) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'oidc-1' })
      .setIssuer(issuer)
      .setAudience(opts.audience ?? audience)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(opts.foreignKey ? foreign.privateKey : privateKey);
  const accessToken = () =>
    sign({
      sub: options.subject ?? 'olivia',
      name: 'Olivia OAuth',
      roles: options.roles ?? ['admin'],
      ...options.claims,
    });

  const server: Server = createServer(
    (req, res) =>
      void (async () => {
        const url = new URL(req.url ?? '/', issuer);
        if (url.pathname === '/.well-known/openid-configuration') {
          return json(res, 200, {
            issuer,
            authorization_endpoint: `${issuer}/authorize?tenant_hint=acme`,
            token_endpoint: `${issuer}/token`,
            jwks_uri: `${issuer}/jwks`,
            grant_types_supported: ['authorization_code', 'refresh_token'],
            token_endpoint_auth_methods_supported: ['client_secret_post'],
          });
        }
        if (url.pathname === '/jwks') return json(res, 200, { keys: [jwk] });
        if (url.pathname === '/authorize') {
          authorizeRequests.push(url);
          const q = url.searchParams;
          if (q.get('client_id') !== clientId || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge'))
            return json(res, 400, { error: 'invalid_request' });
          const code = randomBytes(16).toString('hex');
          codes.set(code, { challenge: q.get('code_challenge')!, redirectUri: q.get('redirect_uri')!, clientId });
          const back = new URL(q.get('redirect_uri')!);
          back.searchParams.set('code', code);
          back.searchParams.set('state', q.get('state')!);
          res.writeHead(302, { location: back.toString() }).end();
          return;
        }
        if (url.pathname === '/token' && req.method === 'POST') {
          const form = await readBody(req);
          tokenRequests.push(form);
          if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret)
            return json(res, 401, { error: 'invalid_client' });
          if (form.get('grant_type') === 'refresh_token') {
            if (form.get('refresh_token') !== 'refresh-1') return json(res, 400, { error: 'invalid_grant' });
            return json(res, 200, { access_token: await accessToken(), token_type: 'Bearer', expires_in: 300 });
          }
          const grant = codes.get(form.get('code') ?? '');
          codes.delete(form.get('code') ?? '');
          if (!grant || grant.redirectUri !== form.get('redirect_uri'))
            return json(res, 400, { error: 'invalid_grant', error_description: 'unknown code or redirect_uri' });
          const verifier = form.get('code_verifier') ?? '';
          if (createHash('sha256').update(verifier).digest('base64url') !== grant.challenge) {
            return json(res, 400, { error: 'invalid_grant', error_description: 'PKCE verification failed' });
          }
          return json(res, 200, {
            access_token: await accessToken(),
            token_type: 'Bearer',
            expires_in: 300,
            refresh_token: 'refresh-1',
            scope: 'openid',
          });
        }
        res.writeHead(404).end();
      })(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    issuer,
    audience,
    jwksUrl: `${issuer}/jwks`,
    clientId,
    clientSecret,
    authorizeRequests,
    tokenRequests,
    sign,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
