import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import type { Duplex } from 'node:stream';
import { acceptKey, closeFrame, FrameParser, OPCODES } from '../../api/ws/frames.js';

/** An open WebSocket (test client over node:http; Node 20 has no global WebSocket client). */
export interface WsOpen {
  status: 101;
  /** The 101 response's headers (e.g. the accepted `sec-websocket-protocol`). */
  headers: Record<string, string | string[] | undefined>;
  /** JSON text messages received so far, in order. */
  messages: Record<string, any>[];
  /** The first message (already received or still to come) matching `predicate`. */
  waitFor(predicate: (m: Record<string, any>) => boolean): Promise<Record<string, any>>;
  /** Resolves when the server closes (close frame code and reason, or 1006 when the socket just ends). */
  closed: Promise<{ code: number; reason: string }>;
  close(): void;
}

export interface WsRefused {
  status: number;
  body: Record<string, any>;
}

export function isOpen(r: WsOpen | WsRefused): r is WsOpen {
  return r.status === 101;
}

export function connectWs(
  base: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<WsOpen | WsRefused> {
  const url = new URL(path, base);
  const key = randomBytes(16).toString('base64');
  return new Promise((resolve, reject) => {
    const req = request({
      hostname: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Key': key,
        'Sec-WebSocket-Version': '13',
        ...headers,
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
    });
    req.on('upgrade', (res, socket: Duplex, head: Buffer) => {
      if (res.headers['sec-websocket-accept'] !== acceptKey(key)) {
        reject(new Error('bad Sec-WebSocket-Accept'));
        return;
      }
      resolve(openSocket(socket, head, res.headers));
    });
    req.end();
  });
}

function openSocket(socket: Duplex, head: Buffer, headers: Record<string, string | string[] | undefined>): WsOpen {
  const messages: Record<string, any>[] = [];
  const waiters: { predicate: (m: Record<string, any>) => boolean; resolve: (m: Record<string, any>) => void }[] = [];
  let resolveClosed!: (v: { code: number; reason: string }) => void;
  const closed = new Promise<{ code: number; reason: string }>((r) => (resolveClosed = r));
  const parser = new FrameParser(16 * 1024 * 1024);
  const onData = (chunk: Buffer) => {
    for (const m of parser.push(chunk)) {
      if (m.opcode === OPCODES.close) {
        resolveClosed({
          code: m.payload.length >= 2 ? m.payload.readUInt16BE(0) : 1005,
          reason: m.payload.subarray(2).toString('utf8'),
        });
        socket.end();
      } else if (m.opcode === OPCODES.text) {
        const msg = JSON.parse(m.payload.toString('utf8')) as Record<string, any>;
        messages.push(msg);
        for (const w of [...waiters])
          if (w.predicate(msg)) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(msg);
          }
      }
    }
  };
  socket.on('data', onData);
  socket.on('close', () => resolveClosed({ code: 1006, reason: '' }));
  socket.on('error', () => {});
  if (head.length) onData(head);
  return {
    status: 101,
    headers,
    messages,
    waitFor(predicate) {
      const found = messages.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
    closed,
    close() {
      socket.write(closeFrame(1000, 'bye', { mask: true }));
      socket.end();
    },
  };
}
