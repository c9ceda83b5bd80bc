import { PassThrough } from 'node:stream';
import type Koa from 'koa';

/** One Server-Sent Event: its id (what a reconnecting client sends back as `Last-Event-ID`), type and JSON data. */
export interface SseEvent {
  id: number;
  event: string;
  data: unknown;
}

/** A comment line every so often keeps proxies from closing a quiet stream. */
const KEEP_ALIVE_MS = 15_000;

/** The id a reconnecting client resumes after: `Last-Event-ID`, else the query's `last_event_id`, else 0. */
export function lastEventId(koa: Koa.Context, fromQuery: number | undefined): number {
  const header = koa.get('last-event-id').trim();
  if (/^\d{1,15}$/.test(header)) return Number(header);
  return fromQuery ?? 0;
}

/**
 * Answers `text/event-stream` from `events` (started with the signal that ends when the client goes away):
 * `id`, `event` and one `data` line of JSON per event, a keep-alive comment while quiet.
 */
export function serveEventStream(koa: Koa.Context, events: (signal: AbortSignal) => AsyncIterable<SseEvent>): void {
  const out = new PassThrough();
  const gone = new AbortController();
  const stop = () => gone.abort();
  koa.req.on('close', stop);
  out.on('close', stop);
  koa.status = 200;
  koa.type = 'text/event-stream';
  koa.set('Cache-Control', 'no-cache, no-transform');
  koa.set('X-Accel-Buffering', 'no');
  koa.body = out;
  // The retry hint first, so the client reconnects promptly after a drop.
  out.write('retry: 2000\n\n');
  const keepAlive = setInterval(() => out.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  void (async () => {
    try {
      for await (const e of events(gone.signal))
        out.write(`id: ${e.id}\nevent: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
    } catch {
      // No driver text leaves: the client reconnects with its last id and loses nothing.
      out.write(
        `event: stream_error\ndata: ${JSON.stringify({ error: 'The events could not be read; reconnect.' })}\n\n`,
      );
    } finally {
      clearInterval(keepAlive);
      koa.req.off('close', stop);
      out.end();
    }
  })();
}
