/**
 * Egress address policy (issue 9, section 3). Node-only (uses node:net).
 * Classifies an IP address and decides whether an outbound request may connect to it.
 * Link-local and cloud-metadata addresses are never allowed; private/CGNAT ranges only with
 * `allowPrivate`; loopback with `allowPrivate` or `allowLoopback`. Which policy a destination gets
 * depends on who chose it (shared/http/trust.ts); the client that applies it is shared/http/egress.ts.
 * @error-codes: the egress family (`EgressCodes`, docs/architecture.md "Error codes").
 */
import { isIP } from 'node:net';

/** The codes of an `EgressError`, and `EGRESS_REFUSED`: a saved endpoint the policy never allows (shared/http/trust.ts). */
export const EgressCodes = {
  egress_refused: 'egress_refused',
  egress_timeout: 'egress_timeout',
  egress_too_large: 'egress_too_large',
  egress_failed: 'egress_failed',
  egress_aborted: 'egress_aborted',
  EGRESS_REFUSED: 'EGRESS_REFUSED',
} as const;
export type EgressCode = (typeof EgressCodes)[keyof typeof EgressCodes];
export type EgressErrorCode = Exclude<EgressCode, 'EGRESS_REFUSED'>;

/**
 * A classified outbound-request failure: the message names the policy or the failure in words,
 * never a raw socket message (that stays in `detailForLogs`). `sent` is false when the request
 * provably never left this process (refused by policy, DNS failure, connection refused).
 */
export class EgressError extends Error {
  readonly socketCode: string | undefined;
  sent: boolean | undefined;
  readonly detailForLogs: string | undefined;
  constructor(
    readonly code: EgressErrorCode,
    message: string,
    extra: { socketCode?: string | undefined; sent?: boolean; detailForLogs?: string } = {},
  ) {
    super(message);
    this.name = 'EgressError';
    this.socketCode = extra.socketCode;
    this.sent = code === 'egress_refused' ? false : extra.sent;
    this.detailForLogs = extra.detailForLogs;
  }
}

/**
 * Who chose a destination (shared/http/trust.ts): the operator (environment at start), an
 * administrator (saved through the API) or a request (a URL a user or agent supplies).
 */
export type EndpointTrust = 'operator' | 'admin' | 'user';

export interface EgressPolicy {
  allowPrivate: boolean;
  allowLoopback: boolean;
  /** Who chose the destinations this policy guards; a refusal names what would allow them. Absent: `admin`. */
  trust?: EndpointTrust;
  /** A setting besides PLATFORM_EGRESS_ALLOW_PRIVATE that opens loopback here (CRM hosts: CRM_ALLOW_INSECURE_LOOPBACK). */
  loopbackFlag?: string;
  /** Container-service mode: only `host:port` destinations on the mesh egress list (`destinations`) are reached. */
  containerService?: boolean;
  /** The egress list's source (shared/secrets/mesh.ts `attachMeshEgress`); absent: `0.0.0.0:443` only. */
  destinations?: () => Promise<readonly string[]>;
}

/** The mesh egress list when none is stored: any host, port 443. */
export const DEFAULT_DESTINATIONS: readonly string[] = ['0.0.0.0:443'];

/** Whether `host:port` is on the list (`0.0.0.0:<port>` admits any host on that port; names compare case-insensitively). */
export function destinationAllowed(host: string, port: number, entries: readonly string[]): boolean {
  const h = host
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
  return entries.some((entry) => {
    const i = entry.lastIndexOf(':');
    const eHost = entry.slice(0, i).toLowerCase();
    return Number(entry.slice(i + 1)) === port && (eHost === '0.0.0.0' || eHost === h);
  });
}

/** In container-service mode, refuses a destination outside the mesh egress list. */
export async function checkDestination(url: URL, policy: EgressPolicy): Promise<void> {
  if (!policy.containerService) return;
  const entries = policy.destinations ? await policy.destinations() : DEFAULT_DESTINATIONS;
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  if (!destinationAllowed(url.hostname, port, entries)) {
    throw new EgressError(
      'egress_refused',
      `${url.hostname}:${port} is not on the mesh egress list; in container-service mode outbound requests reach only its destinations`,
    );
  }
}

export type AddressClass = 'metadata' | 'link_local' | 'unspecified' | 'reserved' | 'loopback' | 'private' | 'public';

const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata', 'metadata.azure.internal', 'instance-data']);
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254', '100.100.100.200', '169.254.170.2']);

/** Parses an IPv4 literal in any form inet_aton accepts (decimal, octal, hex, 1-4 parts); null if not one. */
export function parseIpv4Literal(host: string): number[] | null {
  const parts = host.split('.');
  if (parts.length < 1 || parts.length > 4) return null;
  const nums: number[] = [];
  for (const p of parts) {
    let n: number;
    if (/^0x[0-9a-f]*$/i.test(p)) n = p.length === 2 ? 0 : parseInt(p.slice(2), 16);
    else if (/^0[0-7]*$/.test(p)) n = parseInt(p, 8);
    else if (/^[1-9][0-9]*$/.test(p)) n = parseInt(p, 10);
    else return null;
    nums.push(n);
  }
  const last = nums.pop()!;
  if (nums.some((n) => n > 255)) return null;
  if (last >= 256 ** (4 - nums.length)) return null;
  const out = [...nums];
  const rest = [];
  let v = last;
  for (let i = 0; i < 4 - nums.length; i++) {
    rest.unshift(v % 256);
    v = Math.floor(v / 256);
  }
  return [...out, ...rest];
}

function expandIpv6(addr: string): number[] | null {
  let a = addr.toLowerCase().replace(/^\[|\]$/g, '');
  const zone = a.indexOf('%');
  if (zone >= 0) a = a.slice(0, zone);
  if (isIP(a) !== 6) return null;
  // Rewrite a trailing dotted IPv4 part as two hex groups.
  const v4 = a.match(/^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/);
  if (v4) {
    const o = v4.slice(2).map(Number) as [number, number, number, number];
    a = `${v4[1]}${((o[0] << 8) | o[1]).toString(16)}:${((o[2] << 8) | o[3]).toString(16)}`;
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((x) => parseInt(x, 16)));
  if (!a.includes('::')) {
    const g = parse(a);
    return g.length === 8 ? g : null;
  }
  const [head, tail] = a.split('::') as [string, string];
  const h = parse(head);
  const t = parse(tail);
  const fill = 8 - h.length - t.length;
  return fill < 0 ? null : [...h, ...new Array<number>(fill).fill(0), ...t];
}

function classifyV4(o: number[]): AddressClass {
  const [a, b] = o as [number, number, number, number];
  const s = o.join('.');
  if (METADATA_ADDRESSES.has(s)) return 'metadata';
  if (a === 169 && b === 254) return 'link_local';
  if (a === 0) return 'unspecified';
  if (a >= 224) return 'reserved'; // multicast, 240/4, broadcast
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127))
    return 'private';
  return 'public';
}

/** Classifies an IP address (v4 in any literal form, v6 incl. IPv4-mapped); null when it is not an IP. */
export function classifyAddress(address: string): AddressClass | null {
  const v4 = parseIpv4Literal(address);
  if (v4) return classifyV4(v4);
  const g = expandIpv6(address);
  if (!g) return null;
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) forms.
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || (g[5] === 0 && (g[6]! > 0 || g[7]! > 1)))) {
    return classifyV4([g[6]! >> 8, g[6]! & 255, g[7]! >> 8, g[7]! & 255]);
  }
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address a gateway would connect to.
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    return classifyV4([g[6]! >> 8, g[6]! & 255, g[7]! >> 8, g[7]! & 255]);
  }
  if (g[0] === 0x2002) return classifyV4([g[1]! >> 8, g[1]! & 255, g[2]! >> 8, g[2]! & 255]);
  if (g.join(':') === [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254].join(':')) return 'metadata';
  if (g.every((x) => x === 0)) return 'unspecified';
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'loopback';
  if ((g[0]! & 0xffc0) === 0xfe80) return 'link_local';
  if ((g[0]! & 0xfe00) === 0xfc00 || (g[0]! & 0xffc0) === 0xfec0) return 'private'; // unique-local, old site-local
  if ((g[0]! & 0xff00) === 0xff00) return 'reserved'; // multicast
  return 'public';
}

/** Refuses a host name known to be a metadata endpoint before any DNS lookup. */
export function checkHostName(host: string): void {
  const h = host.toLowerCase().replace(/\.$/, '');
  if (METADATA_HOSTS.has(h)) {
    throw new EgressError(
      'egress_refused',
      `host ${h} is a cloud metadata endpoint; outbound requests to it are never allowed`,
    );
  }
}

/** Throws a classified `egress_refused` error when the policy does not allow connecting to `address`. */
export function checkAddress(address: string, policy: EgressPolicy): void {
  const cls = classifyAddress(address);
  if (cls === null) throw new EgressError('egress_refused', `"${address}" is not an IP address; refusing to connect`);
  switch (cls) {
    case 'metadata':
      throw new EgressError(
        'egress_refused',
        `address ${address} is link-local (cloud metadata); outbound requests to it are never allowed`,
      );
    case 'link_local':
      throw new EgressError(
        'egress_refused',
        `address ${address} is link-local; outbound requests to it are never allowed`,
      );
    case 'unspecified':
      throw new EgressError(
        'egress_refused',
        `address ${address} is unspecified; outbound requests to it are never allowed`,
      );
    case 'reserved':
      throw new EgressError(
        'egress_refused',
        `address ${address} is multicast or reserved; outbound requests to it are never allowed`,
      );
    case 'loopback':
      if (policy.allowLoopback || policy.allowPrivate) return;
      throw new EgressError('egress_refused', `address ${address} is loopback; ${howToAllow('loopback', policy)}`);
    case 'private':
      if (policy.allowPrivate) return;
      throw new EgressError('egress_refused', `address ${address} is private; ${howToAllow('private', policy)}`);
    case 'public':
      return;
  }
}

/** The flag that allows a refused private or loopback address, for the refusal's message. */
export const ALLOW_PRIVATE_FLAG = 'PLATFORM_EGRESS_ALLOW_PRIVATE';

/** What would allow a private or loopback address under `policy`, in words. */
function howToAllow(cls: 'private' | 'loopback', policy: EgressPolicy): string {
  if (policy.trust === 'user') return 'a URL supplied with a request never reaches private or loopback addresses';
  const extra = cls === 'loopback' && policy.loopbackFlag ? ` or ${policy.loopbackFlag}` : '';
  return `allowed only when ${ALLOW_PRIVATE_FLAG}${extra} is set`;
}

/** Names that are loopback by definition (RFC 6761), whatever a resolver answers. */
function loopbackName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/**
 * The refusal for a URL `policy` never allows, decided without DNS (so a save never waits on a
 * resolver): a scheme other than http(s), a cloud-metadata name, a literal address or a loopback name
 * the policy refuses. Null when a request may be allowed (a name is checked again at each request).
 */
export function refusedAtSave(raw: string, policy: EgressPolicy): EgressError | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return new EgressError('egress_refused', `"${raw}" is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return new EgressError(
      'egress_refused',
      `scheme ${url.protocol.replace(/:$/, '')} is not allowed (http and https only)`,
    );
  const host = url.hostname.replace(/^\[|\]$/g, '');
  try {
    checkHostName(host);
    if (isIP(host)) checkAddress(host, policy);
    else if (loopbackName(host)) checkAddress('127.0.0.1', policy);
    return null;
  } catch (err) {
    if (!(err instanceof EgressError)) throw err;
    return isIP(host) || !loopbackName(host)
      ? err
      : new EgressError(err.code, `host ${host} is loopback${err.message.slice(err.message.indexOf(';'))}`);
  }
}

/** Why an operator endpoint can never be reached (start-time check), or null. */
export function operatorEndpointRefusal(raw: string): string | null {
  const refused = refusedAtSave(raw, { allowPrivate: true, allowLoopback: true, trust: 'operator' });
  return refused ? refused.message : null;
}
