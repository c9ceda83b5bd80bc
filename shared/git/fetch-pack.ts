/**
 * isomorphic-git fetches (negotiation, shallow lines, refs), while the pack it receives is indexed
 * natively (shared/git/pack-index.ts). `packStoringHttp` wraps the HTTP client a fetch is given: an
 * upload-pack response carrying a pack (side-band) has the pack stored and indexed into the object
 * store, and reaches isomorphic-git with the same protocol lines but an empty pack, which isomorphic-git
 * neither writes nor indexes (its `fromPack` in pure JavaScript was most of a first sync's CPU). Any
 * response this does not recognise (no side-band, an error band, no objects) passes through unchanged
 * for isomorphic-git to handle as before.
 */
import { createHash } from 'node:crypto';
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';
import { storePack, type IndexOptions } from './pack-index.js';

/** The bytes of a request or response body, whatever form the client gave it in. */
export async function collectBody(
  body: AsyncIterableIterator<Uint8Array> | AsyncIterable<Uint8Array> | Uint8Array[] | Uint8Array,
): Promise<Buffer> {
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const parts: Uint8Array[] = [];
  for await (const part of body as AsyncIterable<Uint8Array>) parts.push(part);
  return Buffer.concat(parts);
}

const FLUSH = Buffer.from('0000', 'latin1');

function pktLine(payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, '0'), 'latin1'), payload]);
}

/** A pack of no objects (header and checksum): what isomorphic-git skips. */
function emptyPack(): Buffer {
  const header = Buffer.from('PACK\0\0\0\x02\0\0\0\0', 'latin1');
  return Buffer.concat([header, createHash('sha1').update(header).digest()]);
}

/**
 * An upload-pack response split into its pack (band 1 of side-band) and the same response with an
 * empty pack instead; null when it is not a side-band response with a pack of at least one object.
 */
export function splitUploadPack(body: Buffer): { pack: Buffer; rest: Buffer } | null {
  const lines: Buffer[] = [];
  const pack: Buffer[] = [];
  for (let pos = 0; pos < body.length;) {
    if (body.length - pos < 4) return null;
    const len = Number.parseInt(body.toString('latin1', pos, pos + 4), 16);
    if (!/^[0-9a-f]{4}$/i.test(body.toString('latin1', pos, pos + 4))) return null;
    if (len === 0) {
      lines.push(FLUSH);
      pos += 4;
      continue;
    }
    if (len < 5 || pos + len > body.length) return null;
    const payload = body.subarray(pos + 4, pos + len);
    pos += len;
    const band = payload[0];
    if (band === 1) pack.push(payload.subarray(1));
    else if (band === 3)
      return null; // the server's error: isomorphic-git reports it
    else if (band !== 2) lines.push(body.subarray(pos - len, pos)); // protocol lines (shallow, ACK, NAK)
  }
  const bytes = Buffer.concat(pack);
  if (bytes.length < 32 || bytes.toString('latin1', 0, 4) !== 'PACK' || bytes.readUInt32BE(8) === 0) return null;
  const rest = Buffer.concat([...lines, pktLine(Buffer.concat([Buffer.from([1]), emptyPack()])), FLUSH]);
  return { pack: bytes, rest };
}

async function* once(bytes: Uint8Array): AsyncIterableIterator<Uint8Array> {
  yield bytes;
}

function isUploadPack(req: GitHttpRequest): boolean {
  if ((req.method ?? 'GET') !== 'POST') return false;
  try {
    return new URL(req.url).pathname.endsWith('/git-upload-pack');
  } catch {
    return false;
  }
}

/**
 * `http` with the packs of upload-pack responses stored into the object store at `gitdir` (indexed
 * natively) before isomorphic-git reads the response.
 */
export function packStoringHttp(http: HttpClient, gitdir: string, options: IndexOptions = {}): HttpClient {
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const res = await http.request(req);
      if (!isUploadPack(req) || res.statusCode !== 200 || !res.body) return res;
      const body = await collectBody(res.body);
      const split = splitUploadPack(body);
      if (split) await storePack(gitdir, split.pack, options);
      return { ...res, body: once(split ? split.rest : body) };
    },
  };
}

/** A ref listing as `refListingOnce` keeps it, in a form that travels between activities (JSON). */
export interface RefListing {
  /** The URL requested, and the one that answered (after redirects). */
  request: string;
  url: string;
  statusCode: number;
  statusMessage: string;
  headers: Record<string, string>;
  /** The body, base64. */
  body: string;
}

/** Listings larger than this are not handed on (a repository with very many refs lists them again). */
const HANDED_ON_BYTES = 256 * 1024;

/** An HTTP client that replays the first ref listing it read, and can answer that listing. */
export interface ListingHttp extends HttpClient {
  /** The listing read (or seeded), when it is small enough to hand on; null otherwise. */
  listing(): RefListing | null;
}

/**
 * `http` answering a repeated ref listing (`GET …/info/refs?service=git-upload-pack`) from the first
 * one it read: a sync lists the refs to resolve its release ref, then isomorphic-git's fetch lists
 * them again before negotiating. The replay saves that round trip, and the fetch then wants exactly
 * the commit the resolve chose even if the ref moved in between. Only a successful listing is kept,
 * for as long as this client lives (one sync). `seed`: a listing an earlier step of the same sync
 * read (`listing()`), answered as if this client had read it.
 */
export function refListingOnce(http: HttpClient, seed: RefListing | null = null): ListingHttp {
  const listings = new Map<string, { res: GitHttpResponse; body: Buffer }>();
  if (seed) {
    const { request, body, ...res } = seed;
    listings.set(request, { res: { ...res, method: 'GET' }, body: Buffer.from(body, 'base64') });
  }
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const listing = (req.method ?? 'GET') === 'GET' && /\/info\/refs\?service=git-upload-pack$/.test(req.url);
      const kept = listing ? listings.get(req.url) : undefined;
      if (kept) return { ...kept.res, body: once(kept.body) };
      const res = await http.request(req);
      if (!listing || res.statusCode !== 200 || !res.body) return res;
      const body = await collectBody(res.body);
      listings.set(req.url, { res, body });
      return { ...res, body: once(body) };
    },
    listing() {
      const [entry] = listings.entries();
      if (!entry || listings.size !== 1 || entry[1].body.length > HANDED_ON_BYTES) return null;
      const [request, { res, body }] = entry;
      return {
        request,
        url: res.url,
        statusCode: res.statusCode,
        statusMessage: res.statusMessage,
        headers: res.headers ?? {},
        body: body.toString('base64'),
      };
    },
  };
}
