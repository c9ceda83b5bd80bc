/**
 * `boundUnreadBody` (api/http/body.ts) on a plain Node server that answers 401 without reading the body, as the
 * API's guard does: a body within the bound is still discarded by Node so the client gets its answer and the
 * connection carries the next request; a body past the bound has its connection closed once the bound is passed.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundUnreadBody, largestAcceptedBody } from '../../api/http/body.js';
import type { AnyRoute } from '../../api/http/route.js';

const BOUND = 1024 * 1024;
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((req, res) => {
    boundUnreadBody(req, res, BOUND);
    res.writeHead(401, { 'content-type': 'text/plain', 'content-length': '7' }).end('refused');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A raw connection: what it received, and whether the server closed it. */
async function open(): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  socket.on('error', () => undefined); // the reset of a write after the close
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, received: () => text, closed };
}

const head = (length: number) =>
  `POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\n`;

/** Writes `total` bytes of body, or until the connection is closed; answers how many were written. */
async function send(socket: Socket, closed: Promise<void>, total: number): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let sent = 0;
  while (!socket.destroyed && sent < total) {
    const piece = chunk.subarray(0, Math.min(chunk.length, total - sent));
    const more = socket.write(piece);
    sent += piece.length;
    if (!more) await Promise.race([once(socket, 'drain').catch(() => undefined), closed]);
  }
  return sent;
}

describe('a refused request whose body is still coming', () => {
  it('within the bound: the client gets its answer and the connection carries the next request', async () => {
    const { socket, received, closed } = await open();
    const length = BOUND - 64 * 1024;
    socket.write(head(length));
    expect(await send(socket, closed, length)).toBe(length);
    socket.write(`GET /next HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    const answers = () => received().match(/HTTP\/1\.1 401 /g)?.length ?? 0;
    for (let i = 0; i < 200 && answers() < 2 && !socket.destroyed; i++) await new Promise((r) => setTimeout(r, 25));
    expect(answers()).toBe(2);
    expect(socket.destroyed).toBe(false);
    socket.destroy();
  });

  it('past the bound: the connection is closed soon after, far short of what was announced', async () => {
    const { socket, received, closed } = await open();
    const announced = 512 * 1024 * 1024;
    socket.write(head(announced));
    const sent = await send(socket, closed, announced);
    await closed;
    expect(received()).toMatch(/^HTTP\/1\.1 401 /);
    expect(sent).toBeLessThan(announced / 4);
  });
});

describe('largestAcceptedBody', () => {
  it('is the JSON limit, or a multipart route’s files with room for its fields', () => {
    const route = (multipart?: AnyRoute['multipart']) => ({ multipart }) as AnyRoute;
    expect(largestAcceptedBody([route()], 1000)).toBe(1000);
    expect(
      largestAcceptedBody([route(), route({ maxFileBytes: 5000, maxFiles: 2, maxFields: 1, fileFields: ['f'] })], 1000),
    ).toBe(11_000);
    expect(
      largestAcceptedBody(
        [route({ maxFileBytes: 5000, maxFiles: 2, maxTotalFileBytes: 6000, maxFields: 1, fileFields: ['f'] })],
        1000,
      ),
    ).toBe(7000);
  });
});
