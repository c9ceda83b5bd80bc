import { z } from 'zod';
import { ServiceUnavailableError } from '../../shared/errors.js';
import { checkDependencies } from '../health.js';
import { buildOpenApi } from '../http/openapi.js';
import { renderReferencePage } from '../http/reference-page.js';
import { defineRoute, type AnyRoute } from '../http/route.js';

const HealthSchema = z.object({ status: z.literal('ok'), uptime_seconds: z.number() });
const ReadySchema = z.object({
  status: z.literal('ready'),
  checks: z.object({ database: z.literal('ok'), temporal: z.literal('ok') }),
});

export const API_TITLE = 'Data-Agent Platform API';
export const API_VERSION = '0.1.0';

/** The document `/openapi.json` serves (and `/docs` renders) for these routes. */
export function platformOpenApi(routes: AnyRoute[]): Record<string, unknown> {
  return buildOpenApi(routes, {
    title: API_TITLE,
    version: API_VERSION,
    description:
      'Durable backend of the data-agent platform. One response rule: a success is {success: true, data} (one object as data, a list as data.<plural>) unless the operation names the spec section stating its own shape; a refusal is a 4xx/5xx with the envelope {error, error_type, request_id, payload?}, never a 2xx, except on operations marked x-success-false-at-2xx, where the spec puts a failure in the body. Tool results (POST /api/tool_call, data.result) are objects with snake_case keys but for the names the spec gives the document-index tool (Success, TotalCount, …). Every response carries X-Request-Id.',
  });
}

/** Every meta route: public, tagged `operations`. */
const OPERATIONS = { tags: ['operations'], access: { kind: 'public' as const } };
const PROBE_SHAPE = 'Operator probe, not a spec resource: `{status, checks}` as liveness and readiness probes expect';

const healthRoute = defineRoute({
  method: 'get',
  path: '/healthz',
  operationId: 'getHealth',
  ownShape: PROBE_SHAPE,
  summary: 'Liveness: the process is up',
  ...OPERATIONS,
  responses: { 200: { description: 'Alive', schema: HealthSchema } },
  handler: async () => ({ status: 'ok', uptime_seconds: Math.round(process.uptime()) }),
});

const readinessRoute = defineRoute({
  method: 'get',
  path: '/readyz',
  operationId: 'getReadiness',
  ownShape: PROBE_SHAPE,
  summary: 'Readiness: PostgreSQL and Temporal both answer',
  description: '503 `service_unavailable` names the failing dependencies in `payload.failed`.',
  ...OPERATIONS,
  responses: { 200: { description: 'Ready', schema: ReadySchema } },
  handler: async ({ deps }) => {
    const checks = await checkDependencies(deps);
    const failed = Object.entries(checks)
      .filter(([, v]) => v !== 'ok')
      .map(([k]) => k);
    if (failed.length > 0) {
      const error = new ServiceUnavailableError(failed.join(','), `Not ready: ${failed.join(' and ')} unavailable.`);
      Object.assign(error.payload!, { checks, failed });
      throw error;
    }
    return { status: 'ready', checks };
  },
});

const openApiRoute = (openApi: () => Record<string, unknown>) =>
  defineRoute({
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApi',
    summary: 'This OpenAPI 3.1 document',
    ...OPERATIONS,
    responses: { 200: { description: 'OpenAPI document' } },
    handler: async () => openApi(),
  });

const referencePageRoute = (openApi: () => Record<string, unknown>) =>
  defineRoute({
    method: 'get',
    path: '/docs',
    operationId: 'getApiReference',
    summary: 'Browsable API reference (HTML)',
    ...OPERATIONS,
    responses: { 200: { description: 'HTML page' } },
    handler: async ({ koa }) => {
      koa.type = 'text/html; charset=utf-8';
      koa.body = renderReferencePage(openApi());
    },
  });

/** Liveness, readiness and the API's own description. `allRoutes` is read lazily so the document covers every route. */
export function metaRoutes(allRoutes: () => AnyRoute[]): AnyRoute[] {
  let cachedDoc: Record<string, unknown> | undefined;
  const openApi = () => (cachedDoc ??= platformOpenApi(allRoutes()));
  return [healthRoute, readinessRoute, openApiRoute(openApi), referencePageRoute(openApi)];
}
