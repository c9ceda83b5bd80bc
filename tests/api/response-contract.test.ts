/**
 * One response contract: unless the spec states a route's own shape, a success answers
 * `{success, data}` (spec, common conventions: "Unless stated, success bodies use the envelope with
 * `success` and `data`"). Walks every route in the route table and checks each declared 2xx schema,
 * or that the route names the spec section stating its shape (`ownShape`).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allRoutes } from '../../api/routes/index.js';

type Json = { type?: string; properties?: Record<string, Json>; required?: string[]; const?: unknown; anyOf?: Json[] };

function isEnvelope(schema: z.ZodType): boolean {
  const json = z.toJSONSchema(schema, { unrepresentable: 'any', io: 'output' }) as Json;
  return (
    json.type === 'object' &&
    !!json.properties?.success &&
    !!json.properties?.data &&
    (json.required ?? []).includes('success') &&
    (json.required ?? []).includes('data')
  );
}

describe('response contract', () => {
  const routes = allRoutes();

  it('every route answers {success, data} or names the spec section that states its own shape', () => {
    const offenders: string[] = [];
    for (const route of routes) {
      if (route.ownShape) continue;
      for (const [status, spec] of Object.entries(route.responses)) {
        if (Number(status) < 200 || Number(status) > 299 || !spec.schema) continue;
        if (!isEnvelope(spec.schema)) offenders.push(`${route.method.toUpperCase()} ${route.path} ${status}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('an own shape names where the spec states it', () => {
    for (const route of routes.filter((r) => r.ownShape))
      expect(route.ownShape!.length, `${route.method} ${route.path}`).toBeGreaterThan(10);
  });
});
