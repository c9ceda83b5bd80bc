/**
 * A thread's turn events (issue 31 item 6): what `GET /api/threads/{thread_id}/events` streams. The
 * worker writes them as a turn runs (activities/thread.ts); any API process reads them. Each event has an
 * id (`seq`) that only grows within a thread; a writer takes it from the thread's counter row, which stays
 * locked until the event commits, so events become visible in id order and "every event after id N" never
 * misses one. A write names a `key`: a retried activity writes nothing twice. Writers NOTIFY
 * `thread_events` with the thread id so listening API processes wake (ThreadEventHub); readers also
 * re-read on a short poll, so a lost notification delays an event and never loses it.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { ListenConnection } from '../db/listen.js';
import { sql, sqlOne } from '../db/sql.js';
import type { LlmFailure } from '../llm/client.js';

/** The NOTIFY channel: the payload is the thread id. */
export const THREAD_EVENTS_CHANNEL = 'thread_events';

/** What a turn reports, in order: the message, the model's output as it arrives, tools, and one end. */
export type ThreadEventData =
  | { kind: 'user_message'; content: string }
  | { kind: 'delta'; round: number; attempt: number; text: string }
  | { kind: 'round_restarted'; round: number; attempt: number }
  | {
      kind: 'assistant_message';
      round: number;
      message_id: string;
      content: string;
      tool_calls: Array<{ id: string; name: string }>;
    }
  | { kind: 'tool_result'; tool_call_id: string; tool: string; ok: boolean }
  | { kind: 'turn_completed'; message_id: string; reply: string }
  | { kind: 'llm_failure'; llm_failure: LlmFailure };

export type ThreadEventKind = ThreadEventData['kind'];

export interface ThreadEvent {
  id: number;
  turn_id: string;
  kind: ThreadEventKind;
  data: Record<string, unknown>;
  created_at: string;
}

/**
 * Appends one event unless `key` was written already; answers its id (null when it existed, or the thread
 * is gone). The counter row's lock orders the commit; the NOTIFY is delivered when the transaction commits.
 */
export async function appendThreadEvent(
  em: EntityManager,
  threadId: string,
  turnId: string,
  key: string,
  event: ThreadEventData,
): Promise<number | null> {
  return em
    .fork()
    .transactional(async (tx) => {
      const thread = await sqlOne(tx, 'select id from conversation_threads where id = ? for share', [threadId]);
      if (!thread) return null;
      const counter = await sqlOne<{ last_seq: string }>(
        tx,
        `insert into thread_event_counters (thread_id, last_seq) values (?, 1)
       on conflict (thread_id) do update set last_seq = thread_event_counters.last_seq + 1
       returning last_seq`,
        [threadId],
      );
      // A fresh statement after the lock sees every committed write with this key.
      if (await sqlOne(tx, 'select 1 from thread_events where thread_id = ? and key = ?', [threadId, key])) {
        // Leaves the counter as it was: the rollback undoes the increment.
        throw new AlreadyWritten();
      }
      const { kind, ...data } = event;
      const seq = Number(counter!.last_seq);
      await sql(
        tx,
        `insert into thread_events (thread_id, seq, key, turn_id, kind, data, created_at)
       values (?, ?, ?, ?, ?, ?::jsonb, clock_timestamp())`,
        [threadId, seq, key, turnId, kind, JSON.stringify(data)],
      );
      await sql(tx, 'select pg_notify(?, ?)', [THREAD_EVENTS_CHANNEL, threadId]);
      return seq;
    })
    .catch((err: unknown) => {
      if (err instanceof AlreadyWritten) return null;
      throw err;
    });
}

class AlreadyWritten extends Error {}

/** Events of a thread after id `after`, oldest first, at most `limit`. */
export async function threadEventsAfter(
  em: EntityManager,
  threadId: string,
  after: number,
  limit = 500,
): Promise<ThreadEvent[]> {
  const rows = await sql<{
    seq: string;
    turn_id: string;
    kind: ThreadEventKind;
    data: Record<string, unknown>;
    created_at: Date;
  }>(
    em,
    `select seq, turn_id, kind, data, created_at from thread_events
     where thread_id = ? and seq > ? order by seq limit ?`,
    [threadId, after, limit],
  );
  return rows.map((r) => ({
    id: Number(r.seq),
    turn_id: r.turn_id,
    kind: r.kind,
    data: r.data,
    created_at: new Date(r.created_at).toISOString(),
  }));
}

/**
 * The API's side: one LISTEN connection per process, opened on the first follower; a follower of a thread
 * is woken when a worker writes one of its events. A lost connection is re-opened on the next follow.
 */
export class ThreadEventHub {
  private readonly followers = new Map<string, Set<() => void>>();
  private readonly listen: ListenConnection;

  constructor(databaseUrl: string) {
    this.listen = new ListenConnection(
      databaseUrl,
      () => [THREAD_EVENTS_CHANNEL],
      (_channel, threadId) => {
        for (const wake of this.followers.get(threadId) ?? []) wake();
      },
      // Followers re-read at once, then keep polling until a new connection wakes them.
      () => {
        for (const set of this.followers.values()) for (const wake of set) wake();
      },
    );
  }

  /** Calls `wake` whenever an event of the thread may have been written, until the answered function is called. */
  async follow(threadId: string, wake: () => void): Promise<() => void> {
    let set = this.followers.get(threadId);
    if (!set) this.followers.set(threadId, (set = new Set()));
    set.add(wake);
    try {
      await this.listen.connection();
    } catch (err) {
      this.unfollow(threadId, wake);
      throw err;
    }
    return () => this.unfollow(threadId, wake);
  }

  private unfollow(threadId: string, wake: () => void): void {
    const set = this.followers.get(threadId);
    set?.delete(wake);
    if (set && !set.size) this.followers.delete(threadId);
  }

  async close(): Promise<void> {
    this.followers.clear();
    await this.listen.close();
  }
}

const READ_BATCH = 500;

/** How long a follower waits for a notification before it reads again anyway. */
export const FOLLOW_POLL_MS = 2_000;

/**
 * Every event of the thread after id `after`, then each new one as it is written, until `signal` aborts:
 * woken by the hub's notifications, and reading again every FOLLOW_POLL_MS whatever happens.
 */
export async function* followThreadEvents(
  em: EntityManager,
  hub: ThreadEventHub,
  threadId: string,
  after: number,
  signal: AbortSignal,
): AsyncGenerator<ThreadEvent> {
  let last = after;
  let woken = true;
  let wakeUp: (() => void) | null = null;
  const wake = () => {
    woken = true;
    wakeUp?.();
  };
  const stop = await hub.follow(threadId, wake).catch(() => () => undefined);
  signal.addEventListener('abort', wake);
  try {
    while (!signal.aborted) {
      if (!woken) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, FOLLOW_POLL_MS);
          wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wakeUp = null;
      }
      woken = false;
      if (signal.aborted) break;
      const batch = await threadEventsAfter(em.fork(), threadId, last, READ_BATCH);
      // A full batch may have more behind it: read on without waiting.
      if (batch.length === READ_BATCH) woken = true;
      for (const event of batch) {
        last = event.id;
        yield event;
      }
    }
  } finally {
    signal.removeEventListener('abort', wake);
    stop();
  }
}
