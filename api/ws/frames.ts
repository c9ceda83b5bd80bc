import { createHash, randomBytes } from 'node:crypto';

/**
 * A minimal RFC 6455 codec (the project has no WebSocket dependency): the opening handshake's accept
 * key, frame encoding (masked for clients, unmasked for the server) and an incremental frame parser.
 * Fragmented messages are reassembled; extensions are not negotiated.
 */
export const OPCODES = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export function acceptKey(key: string): string {
  return createHash('sha1')
    .update(key + GUID)
    .digest('base64');
}

export function encodeFrame(opcode: number, payload: Buffer, options: { mask?: boolean } = {}): Buffer {
  const len = payload.length;
  const mask = options.mask ? randomBytes(4) : undefined;
  const headerLen = 2 + (len < 126 ? 0 : len < 65536 ? 2 : 8) + (mask ? 4 : 0);
  const header = Buffer.alloc(headerLen);
  header[0] = 0x80 | opcode;
  let offset = 2;
  if (len < 126) header[1] = len;
  else if (len < 65536) {
    header[1] = 126;
    header.writeUInt16BE(len, 2);
    offset = 4;
  } else {
    header[1] = 127;
    header.writeBigUInt64BE(BigInt(len), 2);
    offset = 10;
  }
  if (!mask) return Buffer.concat([header, payload]);
  header[1]! |= 0x80;
  mask.copy(header, offset);
  const body = Buffer.alloc(len);
  for (let i = 0; i < len; i++) body[i] = payload[i]! ^ mask[i % 4]!;
  return Buffer.concat([header, body]);
}

export function closeFrame(code: number, reason: string, options: { mask?: boolean } = {}): Buffer {
  const text = Buffer.from(reason.slice(0, 120), 'utf8');
  const payload = Buffer.alloc(2 + text.length);
  payload.writeUInt16BE(code, 0);
  text.copy(payload, 2);
  return encodeFrame(OPCODES.close, payload, options);
}

export interface Message {
  opcode: number;
  payload: Buffer;
}

export class FrameTooLargeError extends Error {}

/** Feeds bytes in, gets whole messages (control frames and reassembled data messages) out. */
export class FrameParser {
  private buffer = Buffer.alloc(0);
  private fragments: Buffer[] = [];
  private fragmentOpcode = 0;

  constructor(private readonly maxMessageBytes = 64 * 1024) {}

  push(chunk: Buffer): Message[] {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const out: Message[] = [];
    for (;;) {
      if (this.buffer.length < 2) return out;
      const b0 = this.buffer[0]!;
      const b1 = this.buffer[1]!;
      const fin = (b0 & 0x80) !== 0;
      const opcode = b0 & 0x0f;
      const masked = (b1 & 0x80) !== 0;
      let len = b1 & 0x7f;
      let offset = 2;
      if (len === 126) {
        if (this.buffer.length < 4) return out;
        len = this.buffer.readUInt16BE(2);
        offset = 4;
      } else if (len === 127) {
        if (this.buffer.length < 10) return out;
        const big = this.buffer.readBigUInt64BE(2);
        if (big > BigInt(this.maxMessageBytes)) throw new FrameTooLargeError('frame too large');
        len = Number(big);
        offset = 10;
      }
      if (len > this.maxMessageBytes) throw new FrameTooLargeError('frame too large');
      const maskLen = masked ? 4 : 0;
      if (this.buffer.length < offset + maskLen + len) return out;
      const mask = masked ? this.buffer.subarray(offset, offset + 4) : undefined;
      const payload = Buffer.from(this.buffer.subarray(offset + maskLen, offset + maskLen + len));
      if (mask) for (let i = 0; i < payload.length; i++) payload[i] = payload[i]! ^ mask[i % 4]!;
      this.buffer = this.buffer.subarray(offset + maskLen + len);
      if (opcode >= 0x8) {
        out.push({ opcode, payload });
        continue;
      }
      if (opcode !== OPCODES.continuation) this.fragmentOpcode = opcode;
      this.fragments.push(payload);
      if (this.fragments.reduce((n, f) => n + f.length, 0) > this.maxMessageBytes)
        throw new FrameTooLargeError('message too large');
      if (fin) {
        out.push({ opcode: this.fragmentOpcode, payload: Buffer.concat(this.fragments) });
        this.fragments = [];
      }
    }
  }
}
