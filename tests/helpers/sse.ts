/** A Server-Sent Events client for tests: opens the stream, parses events, waits for the ones asked for. */
export interface SseMessage {
  id: number | undefined;
  event: string;
  data: Record<string, any>;
}

export interface SseClient {
  status: number;
  contentType: string | null;
  /** Every event received so far, in order. */
  events: SseMessage[];
  /** Resolves with the first event (from the start) that `match` accepts, waiting for it to arrive. */
  waitFor(match: (e: SseMessage) => boolean): Promise<SseMessage>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const stop = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: stop.signal });
  const events: SseMessage[] = [];
  const waiters: Array<() => void> = [];
  let ended: Error | null = null;
  const client: SseClient = {
    status: res.status,
    contentType: res.headers.get('content-type'),
    events,
    async waitFor(match) {
      for (;;) {
        const found = events.find(match);
        if (found) return found;
        if (ended) throw new Error(`the stream ended before the event arrived: ${ended.message}`);
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
    close: () => stop.abort(),
  };
  const wake = () => {
    for (const w of waiters.splice(0)) w();
  };
  if (!res.body || res.status !== 200) return client;
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields: Record<string, string> = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            if (colon < 0) continue;
            fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
          }
          if (fields.data === undefined) continue;
          events.push({
            id: fields.id === undefined ? undefined : Number(fields.id),
            event: fields.event ?? 'message',
            data: JSON.parse(fields.data) as Record<string, any>,
          });
          wake();
        }
      }
      ended = new Error('closed by the server');
    } catch (err) {
      ended = err as Error;
    }
    wake();
  })();
  return client;
}
