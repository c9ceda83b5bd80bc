import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  assertEgressAllowed,
  EgressError,
  egressFetch,
  egressFetchFunction,
  type Resolver,
} from '../../shared/http/egress.js';

const loopbackOnly = { allowPrivate: false, allowLoopback: true };
const closed = { allowPrivate: false, allowLoopback: false };

/** A loopback server whose handler a test sets; it counts the connections it accepted. */
let server: Server;
let port: number;
let connections = 0;
let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('ok');

beforeAll(async () => {
  server = createServer((req, res) => handler(req, res));
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
afterEach(() => {
  handler = (_req, res) => res.end('ok');
  vi.restoreAllMocks();
});

async function egressErrorOf(p: Promise<unknown>): Promise<EgressError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(EgressError);
    return err as EgressError;
  }
  throw new Error('expected an EgressError');
}

/** A resolver that answers from a table and counts its calls per host. */
function fakeDns(table: Record<string, string[] | (() => string[])>) {
  const calls: string[] = [];
  const resolve: Resolver = async (host) => {
    calls.push(host);
    const entry = table[host];
    if (!entry) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    const list = typeof entry === 'function' ? entry() : entry;
    return list.map((address) => ({ address, family: net.isIP(address) }));
  };
  return { resolve, calls };
}

describe('egress client', () => {
  it('refuses metadata, link-local and private addresses before any socket is opened', async () => {
    const connect = vi.spyOn(net.Socket.prototype, 'connect');
    const before = connections;
    const cases: Array<[string, RegExp]> = [
      [
        'http://169.254.169.254/latest/meta-data/',
        /address 169\.254\.169\.254 is link-local \(cloud metadata\); outbound requests to it are never allowed/,
      ],
      ['http://[fd00:ec2::254]/', /cloud metadata/],
      ['http://[::ffff:169.254.169.254]/', /cloud metadata/],
      ['http://2852039166/', /cloud metadata/], // 169.254.169.254 as one number
      ['http://0xa9fea9fe/', /cloud metadata/],
      ['http://metadata.google.internal/computeMetadata/v1/', /cloud metadata endpoint/],
      ['http://169.254.10.1/', /link-local/],
      ['http://[fe80::1]/', /link-local/],
      ['http://0.0.0.0/', /unspecified/],
      ['http://10.0.0.5/', /private; allowed only when PLATFORM_EGRESS_ALLOW_PRIVATE/],
      ['http://192.168.1.1/', /private/],
      ['http://100.64.0.1/', /private/],
      ['http://[fd12::1]/', /private/],
      ['http://[::ffff:10.0.0.1]/', /private/],
      ['file:///etc/passwd', /scheme file is not allowed/],
    ];
    for (const [url, message] of cases) {
      const err = await egressErrorOf(egressFetch(url, { policy: loopbackOnly }));
      expect(err.code, url).toBe('egress_refused');
      expect(err.message, url).toMatch(message);
      expect(err.sent).toBe(false);
    }
    expect(connect).not.toHaveBeenCalled();
    expect(connections).toBe(before);
  });

  it('refuses loopback unless the deployment allows it; allows private ranges only with PLATFORM_EGRESS_ALLOW_PRIVATE', async () => {
    const err = await egressErrorOf(egressFetch(`http://127.0.0.1:${port}/`, { policy: closed }));
    expect(err.code).toBe('egress_refused');
    expect(err.message).toBe(`address 127.0.0.1 is loopback; allowed only when PLATFORM_EGRESS_ALLOW_PRIVATE is set`);
    // A policy with a further loopback flag (CRM hosts) names it too.
    const crm = await egressErrorOf(
      egressFetch(`http://127.0.0.1:${port}/`, { policy: { ...closed, loopbackFlag: 'CRM_ALLOW_INSECURE_LOOPBACK' } }),
    );
    expect(crm.message).toBe(
      `address 127.0.0.1 is loopback; allowed only when PLATFORM_EGRESS_ALLOW_PRIVATE or CRM_ALLOW_INSECURE_LOOPBACK is set`,
    );
    const ok = await egressFetch(`http://127.0.0.1:${port}/`, { policy: loopbackOnly });
    expect(await ok.text()).toBe('ok');
    const viaPrivate = await egressFetch(`http://127.0.0.1:${port}/`, {
      policy: { allowPrivate: true, allowLoopback: false },
    });
    expect(viaPrivate.status).toBe(200);
    // Metadata stays refused even with both allowances.
    expect(
      (
        await egressErrorOf(
          egressFetch('http://169.254.169.254/', { policy: { allowPrivate: true, allowLoopback: true } }),
        )
      ).code,
    ).toBe('egress_refused');
  });

  it('checks every address a name resolves to, and connects to exactly the checked one (no rebinding)', async () => {
    let answer = 0;
    // First answer loopback (allowed), every later answer the metadata address: a rebinding DNS server.
    const dns = fakeDns({
      'rebind.test': () => (answer++ === 0 ? ['127.0.0.1'] : ['169.254.169.254']),
      'mixed.test': ['127.0.0.1', '10.1.2.3'],
      'private.test': ['192.168.0.10'],
    });
    const seen: string[] = [];
    handler = (req, res) => {
      seen.push(`${req.headers.host} from ${req.socket.remoteAddress}`);
      res.end('first');
    };
    const before = connections;
    const first = await egressFetch(`http://rebind.test:${port}/`, { policy: loopbackOnly, resolve: dns.resolve });
    expect(await first.text()).toBe('first');
    // One resolution for the check; the socket used its answer rather than asking DNS again.
    expect(dns.calls).toEqual(['rebind.test']);
    expect(seen).toEqual([`rebind.test:${port} from 127.0.0.1`]);
    const connect = vi.spyOn(net.Socket.prototype, 'connect');
    const second = await egressErrorOf(
      egressFetch(`http://rebind.test:${port}/`, { policy: loopbackOnly, resolve: dns.resolve }),
    );
    expect(second.code).toBe('egress_refused');
    expect(second.message).toBe(
      'host rebind.test resolves to 169.254.169.254: address 169.254.169.254 is link-local (cloud metadata); outbound requests to it are never allowed',
    );
    const mixed = await egressErrorOf(
      egressFetch(`http://mixed.test:${port}/`, { policy: loopbackOnly, resolve: dns.resolve }),
    );
    expect(mixed.message).toMatch(/^host mixed\.test resolves to 10\.1\.2\.3: address 10\.1\.2\.3 is private/);
    expect(
      (await egressErrorOf(egressFetch('https://private.test/', { policy: loopbackOnly, resolve: dns.resolve }))).code,
    ).toBe('egress_refused');
    await expect(assertEgressAllowed('https://private.test/', loopbackOnly, dns.resolve)).rejects.toThrow(/private/);
    expect(connect).not.toHaveBeenCalled();
    expect(connections).toBe(before + 1);
  });

  it('answers a host that does not resolve as a classified failure that was not sent', async () => {
    const dns = fakeDns({});
    const err = await egressErrorOf(
      egressFetch('https://nowhere.test/', { policy: loopbackOnly, resolve: dns.resolve }),
    );
    expect(err.code).toBe('egress_failed');
    expect(err.message).toBe('outbound request to nowhere.test failed: the host name does not resolve (ENOTFOUND)');
    expect(err.sent).toBe(false);
    expect(err.detailForLogs).toMatch(/ENOTFOUND/);
  });

  it('classifies a refused connection without the raw socket text', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const freePort = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const err = await egressErrorOf(egressFetch(`http://127.0.0.1:${freePort}/`, { policy: loopbackOnly }));
    expect(err.code).toBe('egress_failed');
    expect(err.message).toBe('outbound request to 127.0.0.1 failed: the connection was refused (ECONNREFUSED)');
    expect(err.socketCode).toBe('ECONNREFUSED');
    expect(err.sent).toBe(false);
  });

  it('follows redirects by hand, re-checking every hop, and stops at the hop limit', async () => {
    handler = (req, res) => {
      if (req.url === '/to-metadata')
        return void res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      if (req.url === '/to-private') return void res.writeHead(307, { location: 'http://10.0.0.1/' }).end();
      if (req.url === '/loop') return void res.writeHead(302, { location: '/loop' }).end();
      if (req.url === '/post-then-get') return void res.writeHead(303, { location: '/landed' }).end();
      res.end(`${req.method} ${req.url} auth=${req.headers.authorization ?? '-'}`);
    };
    const connect = vi.spyOn(net.Socket.prototype, 'connect');
    const toMetadata = await egressErrorOf(
      egressFetch(`http://127.0.0.1:${port}/to-metadata`, { policy: loopbackOnly }),
    );
    expect(toMetadata.code).toBe('egress_refused');
    expect(toMetadata.message).toMatch(/169\.254\.169\.254 is link-local \(cloud metadata\)/);
    expect(
      (await egressErrorOf(egressFetch(`http://127.0.0.1:${port}/to-private`, { policy: loopbackOnly }))).message,
    ).toMatch(/10\.0\.0\.1 is private/);
    // Only the loopback hops opened sockets.
    expect(connect).toHaveBeenCalledTimes(2);
    const loop = await egressErrorOf(
      egressFetch(`http://127.0.0.1:${port}/loop`, { policy: loopbackOnly, maxRedirects: 3 }),
    );
    expect(loop.code).toBe('egress_failed');
    expect(loop.message).toMatch(/redirected more than 3 times/);
    const manual = await egressFetch(`http://127.0.0.1:${port}/to-metadata`, {
      policy: loopbackOnly,
      redirect: 'manual',
    });
    expect(manual.status).toBe(302);
    const landed = await egressFetch(`http://127.0.0.1:${port}/post-then-get`, {
      policy: loopbackOnly,
      method: 'POST',
      body: 'x',
      headers: { authorization: 'Bearer t' },
    });
    expect(await landed.text()).toBe('GET /landed auth=Bearer t');
    expect(landed.redirected).toBe(true);
  });

  it('aborts an answer larger than the cap, declared or streamed', async () => {
    handler = (req, res) => {
      if (req.url === '/declared') return void res.writeHead(200, { 'content-length': '5000' }).end('x'.repeat(5000));
      res.writeHead(200);
      let sent = 0;
      const more = () => {
        while (sent < 50) {
          sent++;
          if (!res.write('y'.repeat(1000))) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    };
    const declared = await egressErrorOf(
      egressFetch(`http://127.0.0.1:${port}/declared`, { policy: loopbackOnly, maxResponseBytes: 1000 }),
    );
    expect(declared.code).toBe('egress_too_large');
    expect(declared.message).toBe('the answer from 127.0.0.1 is larger than 1000 bytes; the request was aborted');
    const streamed = await egressErrorOf(
      egressFetch(`http://127.0.0.1:${port}/chunked`, { policy: loopbackOnly, maxResponseBytes: 10_000 }),
    );
    expect(streamed.code).toBe('egress_too_large');
    const fits = await egressFetch(`http://127.0.0.1:${port}/chunked`, {
      policy: loopbackOnly,
      maxResponseBytes: 60_000,
    });
    expect((await fits.text()).length).toBe(50_000);
  });

  it('applies one deadline and tells a timeout from a cancellation', async () => {
    handler = () => {}; // never answers
    const started = Date.now();
    const timeout = await egressErrorOf(
      egressFetch(`http://127.0.0.1:${port}/slow`, { policy: loopbackOnly, timeoutMs: 200 }),
    );
    expect(timeout.code).toBe('egress_timeout');
    expect(timeout.message).toBe('outbound request to 127.0.0.1 did not complete within 200 ms');
    expect(timeout.sent).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const aborted = await egressErrorOf(
      egressFetch(`http://127.0.0.1:${port}/slow`, { policy: loopbackOnly, signal: controller.signal }),
    );
    expect(aborted.code).toBe('egress_aborted');
    // A fetch-shaped caller's AbortSignal.timeout is a TimeoutError, as fetch would name it.
    const fetchLike = egressFetchFunction(loopbackOnly);
    const named = await egressErrorOf(fetchLike(`http://127.0.0.1:${port}/slow`, { signal: AbortSignal.timeout(100) }));
    expect(named.name).toBe('TimeoutError');
    expect(named.code).toBe('egress_timeout');
  });
});
