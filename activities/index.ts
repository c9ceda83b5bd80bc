import { attachMeshEgress } from '../shared/secrets/mesh.js';
import { Settings } from '../shared/settings/store.js';
import type { ActivityDeps } from './deps.js';
import { createActionReviewActivities } from './action-review.js';
import { createCrmMergeActivities } from './crm-merge.js';
import { createDesktopActivities } from './desktop.js';
import { createDocumentIndexActivities } from './document-index.js';
import { createEchoActivities } from './echo.js';
import { createEmbeddingActivities } from './embeddings.js';
import { createEtlActivities } from './etl.js';
import { createFlowActivities } from './flows.js';
import { createDemoActivities } from './demo.js';
import { platformEmbeddingConsumers } from '../shared/embeddings/platform.js';
import { createHandbackActivities } from './handback.js';
import { createManagedSourceActivities } from './managed-sources.js';
import { createSecretActivities } from './secrets.js';
import { createThreadActivities } from './thread.js';
import { createCodeAgentActivities } from './code-agent.js';
import { createMissionActivities } from './missions.js';
import { createTrackerActivities } from './tracker.js';
import { createTicketRcaActivities } from './ticket-rca.js';
import { createBlueprintRenameActivities } from './blueprint-rename.js';
import { createBlueprintWipActivities } from './blueprint-wip.js';
import { createBlueprintPurgeActivities } from './blueprint-purge.js';

/** Every activity the worker registers, built from its dependencies. */
export function createActivities(input: Omit<ActivityDeps, 'settings'> & { settings?: Settings }) {
  const deps: ActivityDeps = { ...input, settings: input.settings ?? new Settings(input.orm, input.config) };
  // In container-service mode the mesh egress list (setting `mesh.egress`) is the outbound allow-list.
  attachMeshEgress(deps.config, deps.settings);
  return {
    ...createEchoActivities(deps),
    ...createActionReviewActivities(deps),
    ...createCrmMergeActivities(deps),
    ...createHandbackActivities(deps),
    ...createThreadActivities(deps),
    ...createSecretActivities(deps),
    ...createManagedSourceActivities(deps),
    ...createEtlActivities(deps),
    ...createFlowActivities(deps),
    ...createDocumentIndexActivities(deps),
    ...createCodeAgentActivities(deps),
    ...createEmbeddingActivities({
      ...deps,
      embeddingConsumers: deps.embeddingConsumers ?? platformEmbeddingConsumers(),
    }),
    ...createDesktopActivities(deps),
    ...createMissionActivities(deps),
    ...createTrackerActivities(deps),
    ...createDemoActivities(deps),
    ...createTicketRcaActivities(deps),
    ...createBlueprintRenameActivities(deps),
    ...createBlueprintWipActivities(deps),
    ...createBlueprintPurgeActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
