import type { MikroORM } from '@mikro-orm/postgresql';
import { Client, Connection } from '@temporalio/client';
import { createAgentToolbox } from '../shared/tools/toolbox.js';
import type { AppConfig } from '../shared/config.js';
import type { Logger } from '../shared/log.js';
import { Settings } from '../shared/settings/store.js';
import type { AgentToolbox } from '../shared/threads/toolbox.js';

/**
 * The agents' toolbox inside the worker. Tools start and update workflows (e.g. an Action Review
 * proposal), so the worker holds a Temporal client of its own for them.
 */
export function createWorkerToolbox(deps: { orm: MikroORM; config: AppConfig; log: Logger; settings?: Settings }): {
  toolbox: AgentToolbox;
  /** The worker's client, also handed to activities that start workflows. */
  temporal: Client;
  close(): Promise<void>;
} {
  const temporalConnection = Connection.lazy({ address: deps.config.temporal.address });
  const temporal = new Client({ connection: temporalConnection, namespace: deps.config.temporal.namespace });
  const settings = deps.settings ?? new Settings(deps.orm, deps.config);
  const toolbox = createAgentToolbox({ ...deps, settings, temporal, temporalConnection, verifier: undefined });
  return { toolbox, temporal, close: () => temporalConnection.close() };
}
