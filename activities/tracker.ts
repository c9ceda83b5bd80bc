import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { AppConfig } from '../shared/config.js';
import type { Settings } from '../shared/settings/store.js';
import { runTrackerPoll } from '../shared/tracker/automation.js';
import type { TrackerPollInput, TrackerPollResult } from '../workflows/tracker-poll-definitions.js';

/** Tracker automation: one poll of a tracker into the ledger (shared/tracker/automation.ts). */
export function createTrackerActivities(deps: {
  orm: MikroORM;
  config: AppConfig;
  settings: Settings;
  temporal?: Client | undefined;
}) {
  return {
    async trackerPoll(input: TrackerPollInput): Promise<TrackerPollResult> {
      return runTrackerPoll(deps, input);
    },
  };
}

export type TrackerActivities = ReturnType<typeof createTrackerActivities>;
