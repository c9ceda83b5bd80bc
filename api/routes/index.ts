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
import { desktopRoutes } from './desktop.js';
import { docsSessionRoutes } from './docs-session.js';
import { downloadRoutes } from './downloads.js';
import { gatewaySettingsRoutes } from './gateway-settings.js';
import { indexRoutes } from './indexes.js';
import { internalDemoRoutes } from './internal-demo.js';
import { jobRoutes } from './jobs.js';
import { llmProviderRoutes } from './llm-providers.js';
import { licenseRoutes } from './license.js';
import { flowRunRoutes } from './flow-runs.js';
import { managedSourceTypeRoutes } from './managed-source-types.js';
import { managedSourceRoutes } from './managed-sources.js';
import { skillRoutes } from './skills.js';
import { mcpRoutes } from './mcp.js';
import { metaRoutes } from './meta.js';
import { metricsRoutes } from './metrics.js';
import { oauthProxyRoutes } from './oauth-proxy.js';
import { egressRegistrationRoutes, secretsRoutes } from './secrets.js';
import { toolCallRoutes } from './tool-call.js';
import { knowledgeBaseRoutes } from './knowledge-bases.js';
import { proverRoutes } from './prover.js';
import { wellKnownRoutes } from './well-known.js';
import { projectRoutes } from './projects.js';
import { wikiRoutes } from './wiki.js';
import { hostedIdentityRoutes } from './hosted-identities.js';
import { blueprintRoutes } from './blueprints.js';
import { organizationalProjectRoutes } from './organizational-projects.js';
import { blueprintWizardRoutes } from './blueprint-wizard.js';
import { trackerAutomationRoutes } from './tracker-automation.js';
import { demoStateRoutes } from './demo-state.js';
import { hostedAiRoutes } from './hosted-ai.js';
import { projectRecordRoutes } from './project-records.js';
import { demoVersionRoutes } from './demo-versions.js';
import { demoVignetteRoutes } from './demo-vignettes.js';
import { desktopLaptopRoutes } from './desktop-laptop.js';
import { demoTicketRcaRoutes } from './demo-ticket-rca.js';
import { blueprintWipRoutes } from './blueprint-wip.js';
import { threadRoutes } from './threads.js';

/** The route lists of the areas, in the order the router mounts them (after the meta routes). */
const AREA_ROUTES: readonly AnyRoute[][] = [
  metricsRoutes,
  authRoutes,
  internalDemoRoutes,
  jobRoutes,
  actionReviewRoutes,
  toolCallRoutes,
  proverRoutes,
  agentRoutes,
  threadRoutes,
  gatewaySettingsRoutes,
  configSetupRoutes,
  configViewRoutes,
  mcpRoutes,
  wellKnownRoutes,
  downloadRoutes,
  oauthProxyRoutes,
  connectionRoutes,
  crmMergeRoutes,
  llmProviderRoutes,
  aiModelRoutes,
  secretsRoutes,
  egressRegistrationRoutes,
  managedSourceRoutes,
  wikiRoutes,
  managedSourceTypeRoutes,
  flowRunRoutes,
  indexRoutes,
  knowledgeBaseRoutes,
  brandingRoutes,
  licenseRoutes,
  docsSessionRoutes,
  configMiscRoutes,
  hostedIdentityRoutes,
  skillRoutes,
  desktopRoutes,
  blueprintRoutes,
  organizationalProjectRoutes,
  blueprintWizardRoutes,
  projectRoutes,
  trackerAutomationRoutes,
  demoStateRoutes,
  hostedAiRoutes,
  projectRecordRoutes,
  demoVersionRoutes,
  demoVignetteRoutes,
  desktopLaptopRoutes,
  demoTicketRcaRoutes,
  blueprintWipRoutes,
];

/** Every route of the API, in one list: the router mounts it and the OpenAPI document describes it. */
export function allRoutes(): AnyRoute[] {
  const routes: AnyRoute[] = [];
  routes.push(...metaRoutes(() => routes));
  for (const area of AREA_ROUTES) routes.push(...area);
  return routes;
}
