import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/**
 * A desktop provisioner on loopback (the API shared/desktop/provisioner.ts describes). Tests change
 * its fields to steer answers and read `calls` to see what the platform sent.
 */
export interface FakeProvisioner {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  /** Every call: method, path, bearer credential, body. */
  calls: Array<{ method: string; path: string; bearer: string | undefined; body: unknown }>;
  /** Codes the token endpoint refuses (400). */
  refusedCodes: Set<string>;
  /** Device credentials issued and not signed out. */
  devices: Set<string>;
  /** AI keys issued and not revoked. */
  liveKeys: Set<string>;
  revokedKeys: string[];
  /** Key revocation answers 500 while set. */
  revokeFails: boolean;
  /** Device calls answer 401 while set (a refused device credential). */
  refuseDevices: boolean;
  /** Credit reads answer 500 while set. */
  creditFails: boolean;
  activation: {
    llm: { returning: boolean; plan_mode: string; remaining_usd: number | null };
    trial: Record<string, unknown> | null;
    version_policy: Record<string, unknown> | null;
  };
  credit: Record<string, unknown>;
  /** `${target}/${arch}` → a manifest, `none` (204), or `fail` (500); missing keys answer 404. */
  updates: Record<string, Record<string, unknown> | 'none' | 'fail'>;
  /** Diagnostics: advertise gzip; chunks whose log bytes exceed `maxChunkBytes` answer 413; `refuseDiagnostics` answers 400 to a start. */
  diagnosticsGzip: boolean;
  maxChunkBytes: number | undefined;
  refuseDiagnostics: boolean;
  uploads: Map<
    string,
    { trigger: string; total_bytes: number; chunks: Buffer[]; attempts: number[]; completed: unknown }
  >;
  /** Hosted demo AI keys issued (`POST /v1/hosted/ai-keys`) with what the platform sent; `hostedKeyFails` answers 500. */
  hostedKeys: Array<{ id: string; owner: unknown }>;
  /** What every `POST /v1/hosted/ai-keys` sent (refused ones included), in order. */
  hostedKeyRequests: unknown[];
  hostedKeyFails: boolean;
  count(path: string): number;
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage) =>
  new Promise<Buffer>((resolve) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts)));
  });

export async function startFakeProvisioner(): Promise<FakeProvisioner> {
  const fake: FakeProvisioner = {
    baseUrl: '',
    clientId: 'desktop-client',
    clientSecret: 'desktop-client-secret',
    calls: [],
    refusedCodes: new Set(),
    devices: new Set(),
    liveKeys: new Set(),
    revokedKeys: [],
    revokeFails: false,
    refuseDevices: false,
    creditFails: false,
    activation: {
      llm: { returning: false, plan_mode: 'monthly', remaining_usd: 20 },
      trial: null,
      version_policy: null,
    },
    credit: {
      model: 'platform-large',
      max_budget_usd: 20,
      spend_usd: 5,
      alternatives: ['platform-small'],
      resets_at: '2026-12-01T00:00:00Z',
    },
    updates: {},
    diagnosticsGzip: false,
    maxChunkBytes: undefined,
    refuseDiagnostics: false,
    uploads: new Map(),
    hostedKeys: [],
    hostedKeyRequests: [],
    hostedKeyFails: false,
    count: (path) => fake.calls.filter((c) => c.path === path).length,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    void readBody(req).then((bytes) => answer(req, res, bytes));
  });
  const answer = (req: IncomingMessage, res: ServerResponse, bytes: Buffer) => {
    const raw = req.method === 'PUT' ? '' : bytes.toString('utf8');
    const url = new URL(req.url ?? '/', 'http://x');
    const auth = req.headers.authorization;
    const bearer = auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = raw;
    }
    fake.calls.push({ method: req.method ?? 'GET', path: url.pathname, bearer, body });
    const send = (status: number, payload?: unknown) => {
      res.writeHead(status, payload === undefined ? {} : { 'content-type': 'application/json' });
      res.end(payload === undefined ? undefined : JSON.stringify(payload));
    };
    if (req.headers['x-client-id'] !== fake.clientId || req.headers['x-client-secret'] !== fake.clientSecret)
      return send(403, { error: 'unknown client' });
    const b = (body ?? {}) as Record<string, string>;
    const device = () => {
      if (fake.refuseDevices || !bearer || !fake.devices.has(bearer)) {
        send(401, { error: 'device credential refused' });
        return false;
      }
      return true;
    };
    const p = url.pathname;
    if (p === '/v1/desktop/token' && req.method === 'POST') {
      if (!b.code || fake.refusedCodes.has(b.code)) return send(400, { error: 'invalid_grant' });
      const device_credential = `dev-${randomBytes(8).toString('hex')}`;
      const ai_key = { id: `key-${randomBytes(4).toString('hex')}`, secret: `sk-${randomBytes(8).toString('hex')}` };
      fake.devices.add(device_credential);
      fake.liveKeys.add(ai_key.id);
      return send(200, { device_credential, ai_key });
    }
    if (p === '/v1/desktop/ai-keys/revoke' && req.method === 'POST') {
      if (fake.revokeFails) return send(500, { error: 'key store down' });
      if (!fake.liveKeys.delete(b.key_id!)) return send(404, { error: 'no such key' });
      fake.revokedKeys.push(b.key_id!);
      return send(204);
    }
    if ((p === '/v1/desktop/activate' || p === '/v1/desktop/check-in') && req.method === 'POST') {
      if (!device()) return;
      return send(200, fake.activation);
    }
    if (p === '/v1/desktop/sign-out' && req.method === 'POST') {
      if (!device()) return;
      fake.devices.delete(bearer!);
      return send(204);
    }
    if (p === '/v1/desktop/credit' && req.method === 'GET') {
      if (fake.creditFails) return send(500, { error: 'down' });
      if (!device()) return;
      return send(200, fake.credit);
    }
    if (p === '/v1/desktop/diagnostics' && req.method === 'POST') {
      if (!device()) return;
      if (fake.refuseDiagnostics) return send(400, { error: 'diagnostics refused' });
      const upload_id = `up-${randomBytes(4).toString('hex')}`;
      const body = b as unknown as { trigger: string; total_bytes: number };
      fake.uploads.set(upload_id, {
        trigger: body.trigger,
        total_bytes: body.total_bytes,
        chunks: [],
        attempts: [],
        completed: null,
      });
      return send(200, { upload_id, accept_encoding: fake.diagnosticsGzip ? ['gzip'] : [] });
    }
    const chunk = /^\/v1\/desktop\/diagnostics\/([^/]+)\/chunks\/(\d+)$/.exec(p);
    if (chunk && req.method === 'PUT') {
      if (!device()) return;
      const up = fake.uploads.get(chunk[1]!);
      if (!up) return send(404, { error: 'no upload' });
      const logBytes = req.headers['content-encoding'] === 'gzip' ? gunzipSync(bytes) : bytes;
      up.attempts.push(logBytes.length);
      if (fake.maxChunkBytes !== undefined && logBytes.length > fake.maxChunkBytes)
        return send(413, { error: 'too large' });
      up.chunks[Number(chunk[2])] = logBytes;
      return send(204);
    }
    const done = /^\/v1\/desktop\/diagnostics\/([^/]+)\/complete$/.exec(p);
    if (done && req.method === 'POST') {
      if (!device()) return;
      const up = fake.uploads.get(done[1]!);
      if (!up) return send(404, { error: 'no upload' });
      up.completed = body;
      return send(204);
    }
    if (p === '/v1/hosted/ai-keys' && req.method === 'POST') {
      fake.hostedKeyRequests.push(body);
      if (fake.hostedKeyFails) return send(500, { error: 'key store down' });
      const ai_key = { id: `hkey-${randomBytes(4).toString('hex')}`, secret: `sk-${randomBytes(8).toString('hex')}` };
      fake.hostedKeys.push({ id: ai_key.id, owner: body });
      fake.liveKeys.add(ai_key.id);
      return send(200, { ai_key });
    }
    if (p === '/v1/hosted/credit' && req.method === 'GET') {
      if (fake.creditFails) return send(500, { error: 'down' });
      if (!fake.liveKeys.has(url.searchParams.get('key_id') ?? '')) return send(404, { error: 'no such key' });
      return send(200, fake.credit);
    }
    const upd = /^\/v1\/desktop\/update\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(p);
    if (upd && req.method === 'GET') {
      if (!device()) return;
      const entry = fake.updates[`${upd[1]}/${upd[2]}`];
      if (entry === undefined) return send(404, { error: 'no channel' });
      if (entry === 'none') return send(204);
      if (entry === 'fail') return send(500, { error: 'down' });
      return send(200, entry);
    }
    send(404, { error: 'not found' });
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  fake.baseUrl = `http://127.0.0.1:${addr.port}`;
  return fake;
}
