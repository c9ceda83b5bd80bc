import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { AppConfig } from '../shared/config.js';
import type { Logger } from '../shared/log.js';
import { attachMeshEgress } from '../shared/secrets/mesh.js';
import { Settings } from '../shared/settings/store.js';
import type { AgentToolbox } from '../shared/threads/toolbox.js';
import type { ActiveProviderResolver } from '../shared/llm/active-provider.js';
import { createActionReviewActivities } from './action-review.js';
import { createCrmMergeActivities } from './crm-merge.js';
import { createDesktopActivities } from './desktop.js';
import { createDocumentIndexActivities } from './document-index.js';
import { createEchoActivities } from './echo.js';
import { createEmbeddingActivities } from './embeddings.js';
import { createEtlActivities } from './etl.js';
import { createDemoActivities } from './demo.js';
import { platformEmbeddingConsumers, type EmbeddingConsumerRegistry } from '../shared/embeddings/consumers.js';
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

export interface ActivityDeps {
  orm: MikroORM;
  config: AppConfig;
  log: Logger;
  /** Run-time settings (saved, env, default); built from `orm` and `config` when not given. */
  settings: Settings;
  /** Tools agents may call during thread turns; without it agents answer without tools. */
  toolbox?: AgentToolbox;
  /** What the re-embedding workflow walks; the platform's registry unless a test gives its own. */
  embeddingConsumers?: EmbeddingConsumerRegistry;
  /** How a model call finds its provider; the per-tenant store resolution unless given (the benchmark's fixed client). */
  llmProviders?: Pick<ActiveProviderResolver, 'resolve'>;
  /** A Temporal client for activities that start workflows (the code-agent Action Review executor). */
  temporal?: Client;
}

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
