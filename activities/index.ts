import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../shared/config.js';
import type { Logger } from '../shared/log.js';
import { createEchoActivities } from './echo.js';

export interface ActivityDeps {
  orm: MikroORM;
  config: AppConfig;
  log: Logger;
}

/** Every activity the worker registers, built from its dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createEchoActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
