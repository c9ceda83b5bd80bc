import { createHash } from 'node:crypto';
import pg from 'pg';
import { tapLogLines } from './log.js';

/**
 * Worker log lines to the API's log WebSockets (hosted mode): the worker relays its lines that name a
 * workflow or a principal through PostgreSQL NOTIFY on its tenant's channel; the API LISTENs on the
 * channels of the tenants with an open log socket and hands each line to those sockets, which filter
 * it as they filter their own process's lines. Each side holds one dedicated connection (not the ORM
 * pool). A payload is at most `MAX_RELAY_BYTES` (NOTIFY refuses 8000): a longer line is cut to its
 * identifying fields and a shortened `msg`, marked `truncated`. Best effort: the worker keeps at most
 * `MAX_QUEUED_LINES` unsent lines (the oldest dropped), and lines sent while the API's connection is
 * down are lost. Neither side logs from inside the relay (a log line would relay itself).
 */
export const LOG_CHANNEL_PREFIX = 'platform_log_';
export const MAX_RELAY_BYTES = 7500;
export const MAX_QUEUED_LINES = 1000;
const KEPT_FIELDS = [
  'time',
  'level',
  'service',
  'tenant',
  'principal_id',
  'request_id',
  'workflow_id',
  'run_id',
  'activity_type',
  'activity_id',
  'attempt',
  'trace_id',
] as const;

/** The tenant's channel: an identifier PostgreSQL accepts whatever the tenant's spelling. */
export function logChannel(tenant: string): string {
  return `${LOG_CHANNEL_PREFIX}${createHash('sha256').update(tenant).digest('hex').slice(0, 32)}`;
}

/** The line as relayed: unchanged when it fits, else cut to the identifying fields (null: not relayed). */
export function relayPayload(text: string): string | null {
  let line: Record<string, unknown>;
  try {
    line = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof line !== 'object' || line === null) return null;
  if (typeof line.workflow_id !== 'string' && typeof line.principal_id !== 'string') return null;
  if (Buffer.byteLength(text) <= MAX_RELAY_BYTES) return text;
  const cut: Record<string, unknown> = { truncated: true };
  for (const k of KEPT_FIELDS) if (line[k] !== undefined) cut[k] = line[k];
  const msg = typeof line.msg === 'string' ? line.msg : '';
  // Identifying fields are short; the message takes what is left (by characters, checked in bytes).
  for (let keep = Math.min(msg.length, 2000); keep >= 0; keep = keep > 0 ? Math.floor(keep / 2) : -1) {
    const out = JSON.stringify({ ...cut, msg: msg.slice(0, keep) });
    if (Buffer.byteLength(out) <= MAX_RELAY_BYTES) return out;
  }
  return null;
}

export interface LogRelayPublisher {
  /** Sends what is queued, then ends the connection. */
  close(): Promise<void>;
  /** Lines dropped because the queue was full or a send failed. */
  dropped(): number;
  /** Whether a notification from this PostgreSQL backend was sent by this publisher (its own lines). */
  sentBy(backendPid: number): boolean;
}

/**
 * The worker's side (and, with replicas, each API's): relays this process's log lines (from `subscribe`,
 * by default every logger's lines) on the tenant's channel.
 */
export function startLogRelayPublisher(options: {
  databaseUrl: string;
  tenant: string;
  subscribe?: (listener: (line: string) => void) => () => void;
}): LogRelayPublisher {
  const channel = logChannel(options.tenant);
  const queue: string[] = [];
  let dropped = 0;
  let client: pg.Client | null = null;
  let sending: Promise<void> | null = null;
  let closed = false;
  /** The backends this publisher's connections had (a lost connection is replaced by a new one). */
  const backends = new Set<number>();

  async function connection(): Promise<pg.Client> {
    if (client) return client;
    const c = new pg.Client({ connectionString: options.databaseUrl });
    c.on('error', () => {
      if (client === c) client = null;
    });
    await c.connect();
    const [row] = (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows;
    if (row) backends.add(row.pid);
    client = c;
    return c;
  }

  async function drain(): Promise<void> {
    while (queue.length) {
      const payload = queue[0]!;
      try {
        await (await connection()).query('select pg_notify($1, $2)', [channel, payload]);
      } catch {
        dropped++;
        client?.end().catch(() => undefined);
        client = null;
      }
      queue.shift();
    }
  }

  const kick = () => {
    sending ??= drain().finally(() => {
      sending = null;
      if (queue.length && !closed) kick();
    });
  };

  const unsubscribe = (options.subscribe ?? tapLogLines)((text) => {
    if (closed) return;
    const payload = relayPayload(text);
    if (payload === null) return;
    queue.push(payload);
    if (queue.length > MAX_QUEUED_LINES) {
      queue.shift();
      dropped++;
    }
    kick();
  });

  return {
    async close() {
      unsubscribe();
      closed = true;
      while (sending) await sending;
      if (queue.length) await drain();
      await client?.end().catch(() => undefined);
      client = null;
    },
    dropped: () => dropped,
    sentBy: (backendPid) => backends.has(backendPid),
  };
}

/**
 * The API's side: one LISTEN connection, opened on the first subscription; a tenant's channel is
 * listened to while at least one of its sockets is subscribed. A lost connection is re-opened (and
 * every channel listened to again) on the next subscription. `ownLine` names the notifications this
 * process sent itself (its own publisher: its sockets have those lines already).
 */
export class LogRelaySubscriber {
  private client: Promise<pg.Client> | null = null;
  private readonly listeners = new Map<string, Set<(line: string) => void>>();

  constructor(
    private readonly databaseUrl: string,
    private readonly ownLine: (backendPid: number) => boolean = () => false,
  ) {}

  private connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    const c = new pg.Client({ connectionString: this.databaseUrl });
    const opened = (async () => {
      await c.connect();
      for (const channel of this.listeners.keys()) await c.query(`LISTEN ${channel}`);
      return c;
    })();
    this.client = opened;
    const drop = () => {
      if (this.client === opened) this.client = null;
    };
    c.on('error', drop);
    c.on('end', drop);
    c.on('notification', (n) => {
      if (n.payload === undefined || this.ownLine(n.processId)) return;
      for (const listener of this.listeners.get(n.channel) ?? []) listener(n.payload);
    });
    opened.catch(drop);
    return opened;
  }

  /** Hands the tenant's relayed lines (JSON text) to `listener` until the answered function is called. */
  async subscribe(tenant: string, listener: (line: string) => void): Promise<() => void> {
    const channel = logChannel(tenant);
    let set = this.listeners.get(channel);
    const first = !set;
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(listener);
    try {
      const c = await this.connection();
      if (first) await c.query(`LISTEN ${channel}`);
    } catch (err) {
      this.remove(channel, listener);
      throw err;
    }
    return () => this.remove(channel, listener);
  }

  private remove(channel: string, listener: (line: string) => void): void {
    const set = this.listeners.get(channel);
    if (!set) return;
    set.delete(listener);
    if (set.size) return;
    this.listeners.delete(channel);
    void this.client?.then((c) => c.query(`UNLISTEN ${channel}`)).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    const c = this.client;
    this.client = null;
    await c?.then((client) => client.end()).catch(() => undefined);
  }
}
