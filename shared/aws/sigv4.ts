/**
 * AWS Signature Version 4 (header signing), with node:crypto only. Steps as AWS documents them:
 * 1. canonical request: method, canonical URI, canonical query, canonical headers, signed header
 *    names, hex SHA-256 of the payload;
 * 2. string to sign: `AWS4-HMAC-SHA256`, the request time, the scope
 *    (`<yyyymmdd>/<region>/<service>/aws4_request`), hex SHA-256 of the canonical request;
 * 3. signing key: HMAC chain `AWS4<secret>` → date → region → service → `aws4_request`;
 * 4. signature: hex HMAC of the string to sign under the signing key, sent in `Authorization`.
 */
import { createHash, createHmac } from 'node:crypto';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
}

export interface SignInput {
  method: string;
  url: URL;
  /** Headers to send (any case); `host` and `x-amz-date` are added, every header given is signed. */
  headers: Record<string, string>;
  body: string;
  region: string;
  service: string;
  credentials: AwsCredentials;
  /** The signing time (default: now). */
  now?: Date;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';

export const sha256Hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** `20150830T123600Z` for a date. */
export const amzDate = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');

/** RFC 3986 encoding as SigV4 wants it: everything but `A-Z a-z 0-9 - _ . ~` as `%XX` (upper-case hex). */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * The canonical URI of every service but S3: each segment of the path as sent (already encoded
 * once) is encoded again, so a model id `a:b` sent as `a%3Ab` signs as `a%253Ab`.
 */
export function canonicalUri(wirePath: string): string {
  const path = wirePath === '' ? '/' : wirePath;
  return path
    .split('/')
    .map((segment) => uriEncode(segment))
    .join('/');
}

/** Query parameters sorted by encoded name (then value), each name and value encoded. */
export function canonicalQuery(search: string): string {
  const raw = search.startsWith('?') ? search.slice(1) : search;
  if (!raw) return '';
  const pairs = raw.split('&').map((p) => {
    const i = p.indexOf('=');
    const decode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    const [k, v] = i === -1 ? [decode(p), ''] : [decode(p.slice(0, i)), decode(p.slice(i + 1))];
    return [uriEncode(k), uriEncode(v)] as const;
  });
  pairs.sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

/** Lower-case names, trimmed values with inner runs of spaces collapsed, sorted by name. */
function canonicalHeaders(headers: Record<string, string>): { block: string; signed: string } {
  const entries = Object.entries(headers)
    .map(([k, v]) => [k.toLowerCase(), v.trim().replace(/\s+/g, ' ')] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    block: entries.map(([k, v]) => `${k}:${v}\n`).join(''),
    signed: entries.map(([k]) => k).join(';'),
  };
}

export function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
}

/** Every intermediate of one signature (for tests and for the verifying fakes' error messages). */
export interface Signed {
  canonicalRequest: string;
  stringToSign: string;
  signedHeaders: string;
  signature: string;
  authorization: string;
  /** The headers to send: the given ones plus `host`, `x-amz-date`, the session token and `authorization`. */
  headers: Record<string, string>;
}

/** Signs one request (Authorization header form). */
export function signV4(input: SignInput): Signed {
  const time = amzDate(input.now ?? new Date());
  const date = time.slice(0, 8);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.headers)) headers[k.toLowerCase()] = v;
  headers.host ??= input.url.host;
  headers['x-amz-date'] = time;
  if (input.credentials.sessionToken) headers['x-amz-security-token'] = input.credentials.sessionToken;
  const { block, signed } = canonicalHeaders(headers);
  const canonicalRequest = [
    input.method.toUpperCase(),
    canonicalUri(input.url.pathname),
    canonicalQuery(input.url.search),
    block,
    signed,
    sha256Hex(input.body),
  ].join('\n');
  const scope = `${date}/${input.region}/${input.service}/aws4_request`;
  const stringToSign = [ALGORITHM, time, scope, sha256Hex(canonicalRequest)].join('\n');
  const signature = createHmac(
    'sha256',
    signingKey(input.credentials.secretAccessKey, date, input.region, input.service),
  )
    .update(stringToSign, 'utf8')
    .digest('hex');
  const authorization = `${ALGORITHM} Credential=${input.credentials.accessKeyId}/${scope}, SignedHeaders=${signed}, Signature=${signature}`;
  return {
    canonicalRequest,
    stringToSign,
    signedHeaders: signed,
    signature,
    authorization,
    headers: { ...headers, authorization },
  };
}
