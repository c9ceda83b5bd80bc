import { createServer, type Server } from 'node:http';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWTPayload } from 'jose';

export interface FakeIdp {
  issuer: string;
  audience: string;
  jwksUrl: string;
  publicKeyPem: string;
  /** Signs a token with the IdP's key (kid k1) unless told otherwise. */
  sign(
    claims: JWTPayload,
    options?: {
      expiresIn?: string | number | null;
      issuer?: string;
      audience?: string;
      kid?: string;
      foreignKey?: boolean;
    },
  ): Promise<string>;
  /** Number of JWKS fetches served (to check caching). */
  jwksHits(): number;
  close(): Promise<void>;
}

/** A local OIDC-style identity provider: a JWKS endpoint on loopback and a signer for test tokens. */
export async function startFakeIdp(): Promise<FakeIdp> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const foreign = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  let hits = 0;
  const server: Server = createServer((req, res) => {
    if (req.url === '/.well-known/jwks.json') {
      hits++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [jwk] }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const issuer = `http://127.0.0.1:${port}/`;
  const audience = 'platform-api';
  return {
    issuer,
    audience,
    jwksUrl: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    publicKeyPem: await exportSPKI(publicKey),
    async sign(claims, options = {}) {
      const jwt = new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? 'k1' })
        .setIssuer(options.issuer ?? issuer)
        .setAudience(options.audience ?? audience)
        .setIssuedAt();
      // `expiresIn: null` leaves the token without an exp claim (which must be refused).
      if (options.expiresIn !== null) jwt.setExpirationTime(options.expiresIn ?? '5m');
      return jwt.sign(options.foreignKey ? foreign.privateKey : privateKey);
    },
    jwksHits: () => hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
