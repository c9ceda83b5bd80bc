// What every activity factory is built from, apart from index.ts (which imports every factory) so a
// factory can name it without an import cycle.
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { AppConfig } from '../shared/config.js';
import type { EmbeddingConsumerRegistry } from '../shared/embeddings/consumers.js';
import type { ActiveProviderResolver } from '../shared/llm/active-provider.js';
import type { Logger } from '../shared/log.js';
import type { Settings } from '../shared/settings/store.js';
import type { AgentToolbox } from '../shared/threads/toolbox.js';

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
