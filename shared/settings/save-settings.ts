import type { EntityManager } from '@mikro-orm/postgresql';
import { handbackSweepSchedule } from '../action-review/sweep-schedule.js';
import { ensureIntervalSchedule } from '../temporal/interval-schedule.js';
import type { Principal } from '../auth/principal.js';
import { applyConfiguration, type ApplyMode, type ApplyOutcome } from './apply.js';
import type { SettingPath } from './definitions.js';
import { readTrackerScheduleSettings, syncTrackerSchedules } from '../tracker/schedules.js';
import type { AppDeps } from '../app-deps.js';

/**
 * The one way a route saves settings: the configuration apply (one transaction, version bump, apply
 * record with who and when, per-path permissions), with the side effects a change carries (the
 * hand-back sweep schedule follows its interval inside the transaction: if Temporal refuses, nothing is saved).
 */
export function applySettings(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  mode: ApplyMode,
  content: string,
  dryRun: boolean,
): Promise<ApplyOutcome> {
  return applyConfiguration(em, deps.config, deps.settings, {
    mode,
    content,
    dryRun,
    appliedBy: principal.id,
    permissions: principal.permissions,
    beforeCommit: async (changed) => {
      const every = changed.get('action_review.sweep_interval_seconds');
      if (typeof every === 'number')
        await ensureIntervalSchedule(deps.temporal, deps.config, handbackSweepSchedule(every));
      // Tracker automation: the pollers' Schedules follow `enabled` (paused when off) and the interval.
      const enabled = changed.get('enhancements.tracker_automation.enabled');
      const pollEvery = changed.get('enhancements.tracker_automation.poll_interval_seconds');
      if (enabled !== undefined || pollEvery !== undefined) {
        const current = await readTrackerScheduleSettings(deps.settings);
        await syncTrackerSchedules(deps.temporal, deps.config, {
          enabled: typeof enabled === 'boolean' ? enabled : current.enabled,
          everySeconds: typeof pollEvery === 'number' ? pollEvery : current.everySeconds,
        });
      }
    },
  });
}

/**
 * Saves the given paths (`null` unsets) as a partial apply, for routes that own a slice of the
 * settings (branding, the mesh egress list and tags). The route validated the values with the same
 * schemas the settings use; a refusal is the apply's own (400 naming `payload.refused`, 403 for a permission).
 */
export function saveSettingValues(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  values: Partial<Record<SettingPath, unknown>>,
): Promise<ApplyOutcome> {
  return applySettings(deps, em, principal, 'partial', JSON.stringify(values), false);
}
