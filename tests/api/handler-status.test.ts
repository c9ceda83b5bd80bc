/**
 * A handler may choose its own success status (regression: `mountRoutes` replaced a handler's 202
 * with the route's default 200, so a still-running echo job answered 200).
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app.js';
import { defineRoute, successEnvelope } from '../../api/http/route.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let server: Server;
let base: string;

const routes = [
  defineRoute({
    method: 'post',
    path: '/t/chosen',
    operationId: 'chosen',
    summary: 'answers the status its body names',
    tags: ['test'],
    access: { kind: 'public' },
    body: z.object({ pending: z.boolean() }),
    responses: {
      200: { description: 'done', schema: successEnvelope(z.object({ pending: z.boolean() })) },
      202: { description: 'pending', schema: successEnvelope(z.object({ pending: z.boolean() })) },
    },
    handler: async ({ body, koa }) => {
      if (body.pending) koa.status = 202;
      return { success: true, data: { pending: body.pending } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/t/created',
    operationId: 'created',
    summary: 'declares 201',
    tags: ['test'],
    access: { kind: 'public' },
    successStatus: 201,
    responses: { 201: { description: 'created', schema: successEnvelope(z.object({})) } },
    handler: async () => ({ success: true, data: {} }),
  }),
];

beforeAll(async () => {
  stack = await startStack({ worker: false });
  server = createApp(stack.api.deps, routes).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await stack?.close();
});

describe('success status', () => {
  it("keeps the status a handler set, and otherwise answers the route's declared one", async () => {
    expect((await http(base, 'POST', '/t/chosen', { body: { pending: true } })).status).toBe(202);
    expect((await http(base, 'POST', '/t/chosen', { body: { pending: false } })).status).toBe(200);
    expect((await http(base, 'POST', '/t/created', { body: {} })).status).toBe(201);
  });
});
