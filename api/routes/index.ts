import type { AnyRoute } from '../http/route.js';
import { actionReviewRoutes } from './action-review.js';
import { agentRoutes } from './agents.js';
import { aiModelRoutes } from './ai-models.js';
import { authRoutes } from './auth.js';
import { brandingRoutes } from './branding.js';
import { configMiscRoutes } from './config-misc.js';
import { configSetupRoutes } from './config-setup.js';
import { configViewRoutes } from './config-views.js';
import { connectionRoutes } from './connections.js';
import { crmMergeRoutes } from './crm-merge.js';
import { docsSessionRoutes } from './docs-session.js';
import { downloadRoutes } from './downloads.js';
import { gatewaySettingsRoutes } from './gateway-settings.js';
import { indexRoutes } from './indexes.js';
import { internalDemoRoutes } from './internal-demo.js';
import { jobRoutes } from './jobs.js';
import { llmProviderRoutes } from './llm-providers.js';
import { licenseRoutes } from './license.js';
import { managedSourceTypeRoutes } from './managed-source-types.js';
import { managedSourceRoutes } from './managed-sources.js';
import { mcpRoutes } from './mcp.js';
import { metaRoutes } from './meta.js';
import { metricsRoutes } from './metrics.js';
import { oauthProxyRoutes } from './oauth-proxy.js';
import { secretsRoutes } from './secrets.js';
import { toolCallRoutes } from './tool-call.js';
import { wellKnownRoutes } from './well-known.js';
import { wikiRoutes } from './wiki.js';

/** Every route of the API, in one list: the router mounts it and the OpenAPI document describes it. */
export function allRoutes(): AnyRoute[] {
  const routes: AnyRoute[] = [];
  routes.push(...metaRoutes(() => routes), ...metricsRoutes, ...authRoutes, ...internalDemoRoutes, ...jobRoutes);
  routes.push(...actionReviewRoutes, ...toolCallRoutes);
  routes.push(...agentRoutes, ...gatewaySettingsRoutes);
  routes.push(...configSetupRoutes, ...configViewRoutes);
  routes.push(...mcpRoutes, ...wellKnownRoutes, ...downloadRoutes, ...oauthProxyRoutes);
  routes.push(...connectionRoutes, ...crmMergeRoutes);
  routes.push(...llmProviderRoutes, ...aiModelRoutes);
  routes.push(...secretsRoutes);
  routes.push(...managedSourceRoutes);
  routes.push(...wikiRoutes);
  routes.push(...managedSourceTypeRoutes);
  routes.push(...indexRoutes);
  routes.push(...brandingRoutes, ...licenseRoutes, ...docsSessionRoutes, ...configMiscRoutes);
  return routes;
}
