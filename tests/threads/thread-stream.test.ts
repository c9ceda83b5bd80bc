/**
 * Streaming turns (issue 31 item 6): `GET /api/threads/{thread_id}/events` follows a thread as its turn
 * runs in the worker: the model's output as the provider streams it, then the turn's end (or its
 * `llm_failure`); a client that reconnects with Last-Event-ID, to another API process, gets exactly the rest.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type RunningApi } from '../../api/server.js';
import { LlmFailureError } from '../../shared/errors.js';
import { openThread, postMessage } from '../../shared/threads/service.js';
import { personPrincipal as person } from '../helpers/principals.js';
import { startFakeLlm, type FakeLlm } from '../helpers/fake-llm.js';
import { openSse, type SseClient, type SseMessage } from '../helpers/sse.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let llm: FakeLlm;
let stack: Stack;
/** A second API process on the same database: events written once are served by either. */
let second: RunningApi;
const clients: SseClient[] = [];

const owner = person('local-admin');
const em = () => stack.api.deps.orm.em.fork();

beforeAll(async () => {
  llm = await startFakeLlm();
  stack = await startStack({
    env: { PLATFORM_LLM_BASE_URL: llm.baseUrl, PLATFORM_LLM_MODEL: 'fake-model', PLATFORM_LLM_API_KEY: 'sk-test' },
  });
  second = await startApi(stack.config, stack.log);
});
afterAll(async () => {
  for (const c of clients) c.close();
  await second?.close();
  await stack?.close();
  await llm?.close();
});

async function follow(threadId: string, base = stack.url, headers: Record<string, string> = {}) {
  const client = await openSse(`${base}/api/threads/${threadId}/events`, headers);
  clients.push(client);
  return client;
}

/** The model answers in `chunks`, holding the rest after the first until the answered `open()` is called. */
function answerHeldAfterFirst(chunks: string[]) {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  llm.respond = () => ({ chunks, before: (i) => (i === 1 ? opened : Promise.resolve()) });
  return { open };
}

/** The events of a turn whose answer came in three pieces, without tool calls. */
const THREE_PIECE_TURN = ['user_message', 'delta', 'delta', 'delta', 'assistant_message', 'turn_completed'];

const isEnd = (turnId: string) => (e: SseMessage) =>
  e.data.turn_id === turnId && (e.event === 'turn_completed' || e.event === 'llm_failure');

describe('streaming turns over Server-Sent Events', () => {
  it('carries the model output as it arrives, in order, then the turn’s end', async () => {
    const { thread } = await openThread(stack.api.deps, em(), owner, { origin: 'test' });
    const secondPiece = answerHeldAfterFirst(['Hel', 'lo, ', 'world']);
    const sse = await follow(thread.id);
    expect(sse.status).toBe(200);
    expect(sse.contentType).toMatch(/^text\/event-stream/);
    let answered = false;
    const turn = postMessage(stack.api.deps, owner, thread, 'greet me').then((t) => ((answered = true), t));

    // The first piece reaches the follower while the provider still holds the rest of its answer.
    const first = await sse.waitFor((e) => e.event === 'delta');
    expect(first.data).toMatchObject({ text: 'Hel', round: 0, attempt: 1 });
    expect(answered).toBe(false);
    secondPiece.open();

    const reply = await turn;
    const end = await sse.waitFor(isEnd(reply.turnId));
    expect(end.event).toBe('turn_completed');
    expect(end.data).toMatchObject({ turn_id: reply.turnId, reply: 'Hello, world', message_id: reply.messageId });
    expect(reply.reply).toBe('Hello, world');
    const turnEvents = sse.events.filter((e) => e.data.turn_id === reply.turnId);
    expect(turnEvents.map((e) => e.event)).toEqual(THREE_PIECE_TURN);
    expect(turnEvents[0]!.data.content).toBe('greet me');
    expect(turnEvents.filter((e) => e.event === 'delta').map((e) => e.data.text)).toEqual(['Hel', 'lo, ', 'world']);
    expect(turnEvents[4]!.data).toMatchObject({ content: 'Hello, world', tool_calls: [] });
    const ids = sse.events.map((e) => e.id!);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(sse.events.every((e) => e.data.id === e.id && e.data.kind === e.event)).toBe(true);
    // The provider was asked to stream.
    expect((llm.requests.at(-1) as unknown as { stream?: boolean }).stream).toBe(true);
  });

  it('reports tool calls and their results within the turn', async () => {
    const { thread } = await openThread(stack.api.deps, em(), owner, { origin: 'test' });
    llm.respond = (req) =>
      req.messages.some((m) => m.role === 'tool')
        ? { chunks: ['done'] }
        : { toolCalls: [{ name: 'no_such_tool', arguments: {} }] };
    const sse = await follow(thread.id);
    const reply = await postMessage(stack.api.deps, owner, thread, 'use a tool');
    await sse.waitFor(isEnd(reply.turnId));
    const kinds = sse.events.filter((e) => e.data.turn_id === reply.turnId).map((e) => e.event);
    expect(kinds).toEqual([
      'user_message',
      'assistant_message',
      'tool_result',
      'delta',
      'assistant_message',
      'turn_completed',
    ]);
    const call = sse.events.find((e) => e.event === 'assistant_message')!.data.tool_calls[0];
    expect(call.name).toBe('no_such_tool');
    expect(sse.events.find((e) => e.event === 'tool_result')!.data).toMatchObject({
      tool_call_id: call.id,
      tool: 'no_such_tool',
      ok: false,
    });
  });

  it('ends a failed turn with a structured llm_failure event and no provider text', async () => {
    const { thread } = await openThread(stack.api.deps, em(), owner, { origin: 'test' });
    llm.respond = () => ({ status: 401, body: '{"error":{"message":"sk-secret-provider-detail is wrong"}}' });
    const sse = await follow(thread.id);
    const refused = await postMessage(stack.api.deps, owner, thread, 'fail please').then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(LlmFailureError);
    const failure = await sse.waitFor((e) => e.event === 'llm_failure');
    expect(failure.data.llm_failure).toEqual({
      kind: 'authentication',
      message: expect.any(String),
      action: expect.any(String),
      error_id: ((refused as LlmFailureError).payload as { llm_failure: { error_id: string } }).llm_failure.error_id,
    });
    expect(JSON.stringify(failure.data)).not.toContain('sk-secret-provider-detail');
    expect(sse.events.filter((e) => e.data.turn_id === failure.data.turn_id).map((e) => e.event)).toEqual([
      'user_message',
      'llm_failure',
    ]);
  });

  it('resumes after Last-Event-ID on another API process without losing or repeating an event', async () => {
    const { thread } = await openThread(stack.api.deps, em(), owner, { origin: 'test' });
    const rest = answerHeldAfterFirst(['one ', 'two ', 'three']);
    const before = await follow(thread.id);
    const turn = postMessage(stack.api.deps, owner, thread, 'count');
    const seen = await before.waitFor((e) => e.event === 'delta');
    before.close();
    const kept = before.events.filter((e) => e.id! <= seen.id!);

    // Reconnects to the other API with the last id it saw, while the turn still runs.
    const after = await follow(thread.id, second.url, { 'last-event-id': String(seen.id) });
    rest.open();
    const reply = await turn;
    await after.waitFor(isEnd(reply.turnId));
    const joined = [...kept, ...after.events];
    expect(joined.map((e) => e.event)).toEqual(THREE_PIECE_TURN);
    expect(joined.filter((e) => e.event === 'delta').map((e) => e.data.text)).toEqual(['one ', 'two ', 'three']);
    expect(after.events.every((e) => e.id! > seen.id!)).toBe(true);

    // The whole thread once more from the first API: exactly the same events, and the query form resumes too.
    const again = await follow(thread.id);
    await again.waitFor(isEnd(reply.turnId));
    expect(again.events).toEqual(joined);
    const fromQuery = await openSse(`${second.url}/api/threads/${thread.id}/events?last_event_id=${joined[3]!.id}`);
    clients.push(fromQuery);
    await fromQuery.waitFor(isEnd(reply.turnId));
    expect(fromQuery.events).toEqual(joined.slice(4));
  });

  it('answers 404 for another person’s thread and declares the stream in OpenAPI', async () => {
    const { thread } = await openThread(stack.api.deps, em(), person('someone-else'), { origin: 'test' });
    const res = await http(stack.url, 'GET', `/api/threads/${thread.id}/events`);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error_type: 'not_found', request_id: expect.any(String) });
    const doc = await http(stack.url, 'GET', '/openapi.json');
    const op = doc.body.paths['/api/threads/{thread_id}/events'].get;
    expect(Object.keys(op.responses['200'].content)).toEqual(['text/event-stream']);
  });
});
