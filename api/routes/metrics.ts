import { defineRoute } from '../http/route.js';
import { createApiMetrics } from '../../shared/observability/metrics.js';

/**
 * `GET /metrics`: Prometheus text exposition (prom-client) for scrapers, behind the internal token:
 * `X-Platform-Internal-Token`, or the same token as `Authorization: Bearer` (what Prometheus'
 * `authorization.credentials_file` sends; older Prometheus releases have no `http_headers`). The domain figures are read
 * from PostgreSQL at scrape time; when that read fails the HTTP figures are still served and
 * `platform_domain_metrics_up` is 0.
 */
export const metricsRoutes = [
  defineRoute({
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    summary: 'Prometheus metrics of this API process and the domain (text exposition format)',
    tags: ['operations'],
    access: { kind: 'internal', bearer: true },
    description:
      'The internal token (`PLATFORM_INTERNAL_TOKEN`) as `X-Platform-Internal-Token` or as `Authorization: Bearer <token>`; 401 without it (`internal_token_absent`) or with another (`internal_token_unrecognised`).',
    ownShape: 'Prometheus text exposition format 0.0.4 (not a spec resource; README, Operating)',
    responses: { 200: { description: 'Prometheus text exposition format (`text/plain; version=0.0.4`)' } },
    handler: async ({ deps, koa }) => {
      const metrics = (deps.metrics ??= createApiMetrics());
      await metrics.refreshDomain(deps.orm);
      koa.type = metrics.registry.contentType;
      koa.body = await metrics.registry.metrics();
    },
  }),
];
