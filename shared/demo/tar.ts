/**
 * A minimal streaming ustar writer (POSIX.1-1988 headers of 512 bytes, content padded to 512, two
 * zero blocks at the end). Entries are yielded one at a time, so an archive is never held whole:
 * `tarEntries(source)` turns an async sequence of `{name, content}` into archive bytes. Names longer
 * than 100 bytes use the ustar `prefix` field (up to 155 more bytes, split at a `/`).
 */
export interface TarEntry {
  name: string;
  content: Buffer;
  mtime?: Date;
}

const BLOCK = 512;

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function splitName(name: string): { name: string; prefix: string } {
  if (Buffer.byteLength(name) <= 100) return { name, prefix: '' };
  for (let i = name.length - 1; i > 0; i--) {
    if (name[i] !== '/') continue;
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100 && rest.length > 0)
      return { name: rest, prefix };
  }
  throw new Error(`tar entry name too long: ${name}`);
}

export function tarHeader(entry: { name: string; size: number; mtime?: Date }): Buffer {
  const h = Buffer.alloc(BLOCK, 0);
  const { name, prefix } = splitName(entry.name);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(0o644, 8), 100, 8, 'ascii');
  h.write(octal(0, 8), 108, 8, 'ascii');
  h.write(octal(0, 8), 116, 8, 'ascii');
  h.write(octal(entry.size, 12), 124, 12, 'ascii');
  h.write(octal(Math.floor((entry.mtime ?? new Date()).getTime() / 1000), 12), 136, 12, 'ascii');
  h.write('        ', 148, 8, 'ascii'); // checksum placeholder: eight spaces
  h.write('0', 156, 1, 'ascii'); // regular file
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii');
  return h;
}

/** The archive's bytes, entry by entry (header, content, padding), then the two end blocks. */
export async function* tarEntries(entries: AsyncIterable<TarEntry>): AsyncGenerator<Buffer> {
  for await (const entry of entries) {
    yield tarHeader({ name: entry.name, size: entry.content.length, mtime: entry.mtime });
    if (entry.content.length > 0) yield entry.content;
    const pad = (BLOCK - (entry.content.length % BLOCK)) % BLOCK;
    if (pad > 0) yield Buffer.alloc(pad, 0);
  }
  yield Buffer.alloc(BLOCK * 2, 0);
}
