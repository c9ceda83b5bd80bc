import type { Client } from '@temporalio/client';
import type { AppConfig } from '../config.js';
import type { Logger } from '../log.js';
import type { Settings } from '../settings/store.js';
import { ensureIntervalSchedule, withClientAtStart, type IntervalSchedule } from '../temporal/interval-schedule.js';
import { trackerPollScheduleId, type TrackerPollInput } from '../../workflows/tracker-poll-definitions.js';
import { TRACKER_POLLERS, type TrackerPoller } from './policy.js';

/**
 * The pollers' Schedules (`tracker-poll-issue-tracker`, `tracker-poll-service-desk`): every
 * `poll_interval_seconds`, paused while `enhancements.tracker_automation.enabled` is off. They follow
 * the settings when they are saved (the configuration apply's `beforeCommit`, shared/settings/save-settings.ts:
 * if Temporal refuses, nothing is saved) and at every worker start.
 */
function pollSchedule(
  poller: TrackerPoller,
  scheduleId: string,
  everySeconds: number,
): IntervalSchedule<'trackerPollWorkflow'> {
  const input: TrackerPollInput = { poller, trigger: 'schedule' };
  return {
    scheduleId,
    workflow: 'trackerPollWorkflow',
    args: [input],
    everySeconds,
    purpose: `Polls the ${poller === 'issue_tracker' ? 'issue tracker' : 'service desk'} into the tracker ledger`,
  };
}

export interface TrackerScheduleSettings {
  enabled: boolean;
  everySeconds: number;
}

export async function readTrackerScheduleSettings(settings: Settings): Promise<TrackerScheduleSettings> {
  const [enabled, every] = await Promise.all([
    settings.get('enhancements.tracker_automation.enabled'),
    settings.get('enhancements.tracker_automation.poll_interval_seconds'),
  ]);
  return { enabled: !!enabled, everySeconds: every ?? 300 };
}

/** Creates or updates both Schedules, then pauses or unpauses them to match `enabled`. Idempotent. */
export async function syncTrackerSchedules(
  client: Client,
  config: AppConfig,
  wanted: TrackerScheduleSettings,
  ids: Record<TrackerPoller, string> = {
    issue_tracker: trackerPollScheduleId('issue_tracker', config.temporal.taskQueue),
    service_desk: trackerPollScheduleId('service_desk', config.temporal.taskQueue),
  },
): Promise<Record<TrackerPoller, 'created' | 'updated'>> {
  const out = {} as Record<TrackerPoller, 'created' | 'updated'>;
  for (const poller of TRACKER_POLLERS) {
    out[poller] = await ensureIntervalSchedule(client, config, pollSchedule(poller, ids[poller], wanted.everySeconds));
    const handle = client.schedule.getHandle(ids[poller]);
    const paused = (await handle.describe()).state.paused;
    if (wanted.enabled && paused) await handle.unpause('tracker automation enabled');
    if (!wanted.enabled && !paused) await handle.pause('tracker automation disabled');
  }
  return out;
}

/** For the worker's start, with the effective settings; a failure is logged, not fatal (the next start retries). */
export function syncTrackerSchedulesAtStart(config: AppConfig, log: Logger, settings: Settings): Promise<void> {
  return withClientAtStart(config, log, 'could not ensure the tracker poll schedules', async (client) => {
    const wanted = await readTrackerScheduleSettings(settings);
    const outcome = await syncTrackerSchedules(client, config, wanted);
    log.info('tracker poll schedules ensured', {
      ...outcome,
      enabled: wanted.enabled,
      every_seconds: wanted.everySeconds,
    });
  });
}
