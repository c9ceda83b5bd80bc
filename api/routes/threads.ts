import { z } from 'zod';
import { followOwnThread } from '../../shared/threads/service.js';
import { ThreadEventView } from '../../shared/threads/views.js';
import { defineRoute, routeArea } from '../http/route.js';
import { lastEventId, serveEventStream } from '../http/sse.js';

const { tags, authed } = routeArea('threads');

export const threadRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/threads/:thread_id/events',
    operationId: 'followThreadEvents',
    summary: 'Follow one of your threads as its turns run (Server-Sent Events)',
    description:
      'The spec names a chat stream whose events carry `llm_failure` and leaves its transport open; this is it. ' +
      'A `text/event-stream` of the thread’s turn events, oldest first, then each new one as the worker writes it: ' +
      '`user_message`, `delta` (model output as the provider streams it), `assistant_message` (one model call’s whole ' +
      'text and tool calls), `tool_result`, and one end per turn: `turn_completed` (the reply) or `llm_failure` (the ' +
      'classified failure, as in an `llm_error` refusal). A retried model call first sends `round_restarted`: drop ' +
      'that round’s earlier deltas. Every event has an `id` that grows within the thread; a client that reconnects ' +
      'with `Last-Event-ID` (or `?last_event_id=`) gets exactly the events after it. Events are kept in PostgreSQL, ' +
      'so any API process serves any thread. The stream stays open until the client closes it; send messages with ' +
      'the gateway’s `thread_continue`. Another person’s thread answers 404.',
    tags,
    access: authed,
    ownShape: 'Events, item 2: chat stream events carry structured LLM-failure metadata (`llm_failure`)',
    params: z.object({ thread_id: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/) }),
    query: z.object({
      last_event_id: z.coerce
        .number()
        .int()
        .min(0)
        .optional()
        .describe('Resume after this event id (the `Last-Event-ID` header wins when both are sent)'),
    }),
    responses: {
      200: {
        description: 'Server-Sent Events: `id` (event id), `event` (its kind) and one `data` line of JSON per event',
        mediaType: 'text/event-stream',
        schema: ThreadEventView,
      },
    },
    handler: async ({ deps, em, principal, params, query, koa }) => {
      const after = lastEventId(koa, query.last_event_id);
      const events = await followOwnThread(deps, em, principal, params.thread_id, after);
      serveEventStream(koa, async function* (signal) {
        for await (const e of events(signal)) yield { id: e.id, event: e.kind, data: sseData(e) };
      });
    },
  }),
];

/** An event's `data`: its id, turn, kind and time, then what the kind carries. */
const sseData = (e: { id: number; turn_id: string; kind: string; created_at: string; data: object }) => ({
  id: e.id,
  turn_id: e.turn_id,
  kind: e.kind,
  created_at: e.created_at,
  ...e.data,
});
