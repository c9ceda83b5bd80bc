import { defineRoute } from '../http/route.js';
import { exportContentStream, exportMicroappsStream, exportStateStream } from '../../shared/demo/exports.js';
import type { RouteContext } from '../http/route.js';

/**
 * Hosted demo state exports (spec, internal and hosted-demo routes): streamed, never buffered whole,
 * with no-store headers; what each holds is described in shared/demo/exports.ts.
 */
function noStore(koa: RouteContext<unknown, unknown, unknown>['koa'], type: string, filename: string) {
  koa.set('Cache-Control', 'no-store');
  koa.set('Pragma', 'no-cache');
  koa.set('X-Content-Type-Options', 'nosniff');
  koa.set('Content-Disposition', `attachment; filename="${filename}"`);
  koa.type = type;
}

export const demoStateRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/internal/demo-state/export-state',
    operationId: 'exportDemoState',
    summary: "A tar stream of the demo's records: state/<table>/<page>.json per page of rows, then manifest.json",
    description:
      'Tables: users, agents, blueprints, blueprint_grants, conversation_threads, conversation_messages, managed_flows (rows of the deployment tenant). Each file is one JSON array of at most 200 rows. Secrets, tokens and settings are not exported. `Cache-Control: no-store`, `Pragma: no-cache`.',
    tags: ['internal'],
    access: { kind: 'internal' },
    responses: { 200: { description: 'The archive (application/x-tar), streamed' } },
    handler: async ({ deps, koa }) => {
      noStore(koa, 'application/x-tar', 'demo-state.tar');
      koa.body = exportStateStream(deps.orm, deps.config.auth.deploymentTenant);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/internal/demo-state/export-content',
    operationId: 'exportDemoContent',
    summary: 'A human-readable Markdown stream: agents, threads with their messages, blueprints',
    tags: ['internal'],
    access: { kind: 'internal' },
    responses: { 200: { description: 'Markdown (text/markdown), streamed' } },
    handler: async ({ deps, koa }) => {
      noStore(koa, 'text/markdown; charset=utf-8', 'demo-content.md');
      koa.body = exportContentStream(deps.orm, deps.config.auth.deploymentTenant);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/internal/demo-state/export-microapps',
    operationId: 'exportDemoMicroapps',
    summary: "A gzip of a tar of the demo's app artifacts: managed flows and blueprints",
    description:
      '"Microapps" are the app artifacts of this platform: promoted managed flows (`flows/<source_id>/<flow_name>.json`) and blueprints with their grants (`blueprints/<name>.json`), then `manifest.json`. `Cache-Control: no-store`, `Pragma: no-cache`.',
    tags: ['internal'],
    access: { kind: 'internal' },
    responses: { 200: { description: 'The archive (application/gzip), streamed' } },
    handler: async ({ deps, koa }) => {
      noStore(koa, 'application/gzip', 'demo-microapps.tar.gz');
      koa.body = exportMicroappsStream(deps.orm, deps.config.auth.deploymentTenant);
    },
  }),
];
