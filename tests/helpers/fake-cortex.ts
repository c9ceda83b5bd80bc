/**
 * A warehouse-AI (Snowflake Cortex-style) REST service on loopback: `inference:complete` and
 * `inference:embed`, checking what the service checks: the token-type header, a programmatic
 * access token, or a key-pair JWT verified with the registered public key (RS256, issuer naming the
 * key's SHA-256 fingerprint, subject `<ACCOUNT>.<USER>`, at most one hour of lifetime, not expired).
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';

export interface FakeCortex {
  url: string;
  account: string;
  user: string;
  /** The accepted programmatic access token. */
  pat: string;
  /** The public key registered for the user (`ALTER USER … SET RSA_PUBLIC_KEY`). */
  publicKey: KeyObject | undefined;
  /** Bodies of the completion requests, in order. */
  completions: Array<Record<string, any>>;
  /** Each request's token type and the JWT claims when one was verified. */
  auths: Array<{ tokenType: string | undefined; claims?: Record<string, unknown> }>;
  /** The next completion answers these tool calls instead of text. */
  toolCalls: Array<{ name: string; input: unknown }> | undefined;
  close(): Promise<void>;
}

const fingerprint = (key: KeyObject) =>
  `SHA256:${createHash('sha256')
    .update((key.type === 'public' ? key : createPublicKey(key)).export({ type: 'spki', format: 'der' }))
    .digest('base64')}`;

export async function startFakeCortex(options: { account: string; user: string; pat: string }): Promise<FakeCortex> {
  const fake: FakeCortex = {
    url: '',
    ...options,
    publicKey: undefined,
    completions: [],
    auths: [],
    toolCalls: undefined,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  /** Answers the refusal message, or null when the request is authenticated. */
  const authenticate = (headers: Record<string, string | string[] | undefined>): string | null => {
    const tokenType = headers['x-snowflake-authorization-token-type'] as string | undefined;
    const token = /^Bearer (.+)$/.exec(String(headers.authorization ?? ''))?.[1];
    const entry: FakeCortex['auths'][number] = { tokenType };
    fake.auths.push(entry);
    if (!token) return 'Missing bearer token.';
    if (tokenType === 'PROGRAMMATIC_ACCESS_TOKEN')
      return token === fake.pat ? null : 'Invalid programmatic access token.';
    if (tokenType !== 'KEYPAIR_JWT') return 'Unsupported X-Snowflake-Authorization-Token-Type.';
    const parts = token.split('.');
    if (parts.length !== 3 || !fake.publicKey) return 'JWT token is invalid.';
    const header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString()) as { alg?: string };
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString()) as Record<string, unknown>;
    entry.claims = claims;
    if (header.alg !== 'RS256') return 'JWT token is invalid.';
    const ok = verify(
      'sha256',
      Buffer.from(`${parts[0]}.${parts[1]}`),
      fake.publicKey,
      Buffer.from(parts[2]!, 'base64url'),
    );
    if (!ok) return 'JWT token is invalid.';
    const sub = `${fake.account}.${fake.user}`.toUpperCase();
    if (claims.sub !== sub || claims.iss !== `${sub}.${fingerprint(fake.publicKey)}`) return 'JWT token is invalid.';
    const now = Math.floor(Date.now() / 1000);
    const iat = Number(claims.iat);
    const exp = Number(claims.exp);
    if (!Number.isFinite(iat) || !Number.isFinite(exp) || exp - iat > 3600 || exp <= now || iat > now + 60)
      return 'JWT token is invalid.';
    return null;
  };
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const json = (status: number, value: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      const refusal = authenticate(req.headers);
      if (refusal) return json(401, { code: '390144', message: refusal });
      const body = JSON.parse(raw || '{}') as Record<string, any>;
      if (req.method === 'POST' && req.url === '/api/v2/cortex/inference:complete') {
        fake.completions.push(body);
        if (typeof body.model !== 'string' || !Array.isArray(body.messages))
          return json(400, { message: 'model and messages are required' });
        const calls = fake.toolCalls;
        fake.toolCalls = undefined;
        const content_list = calls
          ? calls.map((c, i) => ({
              type: 'tool_use',
              tool_use: { tool_use_id: `tooluse_${i}`, name: c.name, input: c.input },
            }))
          : [{ type: 'text', text: 'pong' }];
        return json(200, {
          id: 'cortex-fake',
          model: body.model,
          choices: [{ message: { content: calls ? '' : 'pong', content_list } }],
          usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
        });
      }
      if (req.method === 'POST' && req.url === '/api/v2/cortex/inference:embed') {
        const texts = (body.text ?? []) as string[];
        return json(200, {
          object: 'list',
          data: texts.map((_, index) => ({ object: 'embedding', index, embedding: [[0.5, 0.25]] })),
          model: body.model,
          usage: { total_tokens: texts.length },
        });
      }
      json(404, { message: 'not found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return fake;
}
