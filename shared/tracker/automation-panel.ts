/**
 * Tracker automation as the configuration panel reads and drives it (`/api/config/tracker-automation`):
 * its settings, each poller's state and schedule, the latest ledger events, and one poll run now.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppDeps } from '../app-deps.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import {
  TRACKER_POLL_SCHEDULE_IDS,
  trackerPollNowWorkflowId,
  trackerPollScheduleId,
} from '../../workflows/tracker-poll-definitions.js';
import { ledgerRules, trackerTenant } from './automation.js';
import { readPollState, recentLedgerEvents } from './ledger.js';
import { pollNowDecision, TRACKER_POLLERS, type TrackerPoller } from './policy.js';

/** Settings, pollers (state and schedule id) and the 50 latest ledger events of the deployment's tracker tenant. */
export async function trackerAutomationStatus(deps: AppDeps, em: EntityManager) {
  const s = deps.settings;
  const tenant = trackerTenant(deps.config);
  const rules = await ledgerRules(s);
  return {
    settings: {
      enabled: !!(await s.get('enhancements.tracker_automation.enabled')),
      poll_interval_seconds: (await s.get('enhancements.tracker_automation.poll_interval_seconds')) ?? 300,
      poll_lookback_minutes: (await s.get('enhancements.tracker_automation.poll_lookback_minutes')) ?? 60,
      connection_name: (await s.get('enhancements.tracker_automation.connection_name')) ?? '',
      eligible_labels: [...rules.eligibleLabels],
      eligible_issue_types: [...rules.eligibleIssueTypes],
      status_map: {
        done: [...rules.statusMap.done],
        needs_info: [...rules.statusMap.needs_info],
        working: [...rules.statusMap.working],
      },
      webhook_secret_configured: !!(await s.get('enhancements.tracker_automation.service_desk_webhook_secret')),
    },
    pollers: await Promise.all(
      TRACKER_POLLERS.map(async (p) => ({
        ...(await readPollState(em, tenant, p)),
        schedule_id: trackerPollScheduleId(p, deps.config.temporal.taskQueue),
      })),
    ),
    recent_events: await recentLedgerEvents(em, tenant, 50),
  };
}

/**
 * Runs one poll and waits for it; without `lookback_minutes` it is skipped (with the seconds to the next
 * scheduled poll) when the last poll started less than the poll interval − 2 s ago.
 */
export async function trackerPollNow(
  deps: AppDeps,
  em: EntityManager,
  body: { poller: TrackerPoller; lookback_minutes?: number },
  requestId: string,
) {
  const tenant = trackerTenant(deps.config);
  if (body.lookback_minutes === undefined) {
    const [state, interval] = await Promise.all([
      readPollState(em, tenant, body.poller),
      deps.settings.get('enhancements.tracker_automation.poll_interval_seconds'),
    ]);
    const decision = pollNowDecision({
      now: new Date(),
      lastPollStartedAt: state.last_poll_started_at ? new Date(state.last_poll_started_at) : null,
      intervalSeconds: interval ?? 300,
    });
    if (!decision.run) return { skipped: true, next_poll_seconds: decision.next_poll_seconds, result: null };
  }
  const result = await deps.temporal.workflow.execute(workflowRef('trackerPollWorkflow'), {
    taskQueue: deps.config.temporal.taskQueue,
    workflowId: trackerPollNowWorkflowId(body.poller, requestId),
    // A repeated X-Request-Id while that poll runs waits for the same poll.
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [{ poller: body.poller, trigger: 'poll_now', lookbackMinutes: body.lookback_minutes }],
    typedSearchAttributes: lifecycleSearchAttributes('trackerPollWorkflow', {
      tenant: tenant,
      resourceId: TRACKER_POLL_SCHEDULE_IDS[body.poller],
      status: 'running',
    }),
  });
  return { skipped: false, next_poll_seconds: null, result };
}
