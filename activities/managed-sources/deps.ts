import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { AppConfig } from '../../shared/config.js';

/** What the managed-source activities need: the database, the configuration, and (on the worker) Temporal. */
export interface ManagedSourceDeps {
  orm: MikroORM;
  config: AppConfig;
  temporal?: Client;
}
