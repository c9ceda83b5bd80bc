import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Principal } from '../../shared/auth/principal.js';
import { createLogger } from '../../shared/log.js';
import { defineMcpAction, McpActionCatalog, type GatewayContext } from '../../api/mcp/actions/registry.js';
import { dispatchPlatformCall, type DispatchContext } from '../../api/mcp/dispatch.js';
import { platformInputSchema } from '../../api/mcp/schema.js';

// The dispatcher over a catalog of this file's own actions (not the gateway's list in actions/index.ts).
const gateway = (version: 'v1' | 'v2'): GatewayContext => ({
  version,
  publicOrigin: 'https://p.example',
  endpoint: `https://p.example/mcp/${version}/`,
});
const principal = {
  kind: 'person',
  id: 'u1',
  tenant: 't',
  displayName: 'U',
  roles: [],
  permissions: new Set(),
  credential: 'pat',
} as Principal;
const ctx = (version: 'v1' | 'v2') =>
  ({
    principal,
    gateway: gateway(version),
    catalog,
    requestId: 'req-1',
    log: createLogger({ sink: () => {} }),
  }) as unknown as DispatchContext;
const text = (r: { content: Array<{ type: string; text?: string }> }) => JSON.parse(r.content[0]!.text!);

const echoTest = defineMcpAction({
  name: 'echo_test',
  versions: ['v2'],
  description: 'Echoes its message.',
  params: z.object({ message: z.string().min(1).describe('What to echo'), times: z.number().int().optional() }),
  handler: async ({ params, principal: p, version }) => ({ echoed: params.message, by: p.id, version }),
});
const countTest = defineMcpAction({
  name: 'count_test',
  versions: ['v1', 'v2'],
  description: 'Takes a numeric message.',
  params: z.object({ message: z.number() }),
  handler: async () => {
    throw new Error('database exploded with secret detail');
  },
});
const catalog = new McpActionCatalog([echoTest, countTest]);

describe('MCP action registry and dispatch', () => {
  it('a spec action nobody registered is a clear not_available_here tool error', async () => {
    const result = await dispatchPlatformCall({ action: 'ask' }, ctx('v1'));
    expect(result.isError).toBe(true);
    expect(text(result)).toEqual({
      error: 'The "ask" action is not available on this deployment yet.',
      error_type: 'not_available_here',
      request_id: 'req-1',
      payload: { reason: 'action_not_available', action: 'ask' },
    });
  });

  it('registered actions run with validated parameters and their version', async () => {
    const ok = await dispatchPlatformCall({ action: 'echo_test', message: 'hi', times: undefined }, ctx('v2'));
    expect(ok.isError).toBeUndefined();
    expect(ok.structuredContent).toEqual({ echoed: 'hi', by: 'u1', version: 'v2' });
    const bad = await dispatchPlatformCall({ action: 'echo_test', message: '' }, ctx('v2'));
    expect(text(bad)).toMatchObject({
      error_type: 'bad_request',
      payload: { action: 'echo_test', fields: [expect.objectContaining({ field: 'message' })] },
    });
  });

  it('an extra action exists only on its versions; the other version names where it lives', async () => {
    expect(catalog.names('v2')).toContain('echo_test');
    expect(catalog.names('v1')).not.toContain('echo_test');
    const elsewhere = await dispatchPlatformCall({ action: 'echo_test', message: 'x' }, ctx('v1'));
    expect(text(elsewhere).payload).toMatchObject({ reason: 'action_not_in_version', available_on: '/mcp/v2/' });
  });

  it('unexpected handler errors become a generic internal tool error without their text', async () => {
    const result = await dispatchPlatformCall({ action: 'count_test', message: 1 }, ctx('v2'));
    expect(text(result)).toMatchObject({ error_type: 'internal' });
    expect(JSON.stringify(result)).not.toContain('secret detail');
  });

  it('refuses an action listed twice for a version, and an "action" parameter', () => {
    const again = () =>
      new McpActionCatalog([
        echoTest,
        countTest,
        defineMcpAction({
          name: 'echo_test',
          versions: ['v2'],
          description: '',
          params: z.object({}),
          handler: async () => null,
        }),
      ]);
    expect(again).toThrow(/listed twice for v2/);
    expect(new McpActionCatalog([echoTest, { ...echoTest, versions: ['v1'] }]).names('v1')).toContain('echo_test');
    const clash = () =>
      defineMcpAction({
        name: 'x_test',
        versions: ['v1'],
        description: '',
        params: z.object({ action: z.string() }),
        handler: async () => null,
      });
    expect(clash).toThrow(/dispatch field/);
  });

  it('the flat schema advertises every parameter as optional and leaves conflicting types untyped', () => {
    const json = z.toJSONSchema(platformInputSchema(catalog, 'v2')) as {
      properties: Record<string, any>;
      required: string[];
    };
    expect(json.required).toEqual(['action']);
    expect(json.properties.action.enum).toEqual(expect.arrayContaining(['status', 'echo_test', 'count_test']));
    expect(json.properties.times).toMatchObject({ type: 'integer', description: '(used by: echo_test)' });
    expect(json.properties.message.type).toBeUndefined();
    expect(json.properties.message.description).toContain('used by: echo_test, count_test');
  });
});
