import { defineRoute } from '../http/route.js';
import { createApiMetrics } from '../../shared/observability/metrics.js';

/**
 * `GET /metrics`: Prometheus text exposition (prom-client) for scrapers, behind the internal token
 * (`X-Platform-Internal-Token`, as Prometheus sends with `http_headers`). The domain figures are read
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
    access: { kind: 'internal' },
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
