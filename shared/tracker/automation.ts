import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { openApiKeyConnection } from '../code-agent/connection.js';
import { codeAgentRunIdFor, startCodeAgentRun } from '../code-agent/start.js';
import type { AppConfig } from '../config.js';
import { findConnectionRow } from '../crm/store.js';
import type { Settings } from '../settings/store.js';
import type { TrackerPollInput, TrackerPollResult } from '../../workflows/tracker-poll-definitions.js';
import { readTickets, TrackerReadError, type TrackerCredential, type TrackerTicket } from './client.js';
import {
  markPollFinished,
  markPollStarted,
  observeTicket,
  readPollState,
  type Dispatcher,
  type LedgerRules,
} from './ledger.js';
import { searchWindowStart, type TrackerPoller } from './policy.js';
import { DemoCodes } from '../demo/error-codes.js';

/** Who starts a code-agent run for an eligible ticket (a system principal acting for the admin who enabled automation). */
export const TRACKER_AUTOMATION_PRINCIPAL = 'system:tracker-automation';
export const TICKETING_SETUP_REQUIRED = DemoCodes.TICKETING_SETUP_REQUIRED;

export interface TrackerDeps {
  orm: MikroORM;
  settings: Settings;
  config: AppConfig;
  /** Starts code-agent runs for eligible tickets; without it nothing is dispatched. */
  temporal?: Client | undefined;
}

/** The tenant tracker automation acts for: settings are deployment-wide, so is the ledger. */
export const trackerTenant = (config: AppConfig) => config.auth.deploymentTenant;

export async function ledgerRules(settings: Settings): Promise<LedgerRules> {
  const [enabled, codeAgent, labels, types, done, needsInfo, working] = await Promise.all([
    settings.get('enhancements.tracker_automation.enabled'),
    settings.get('enhancements.code_agent.enabled'),
    settings.get('enhancements.tracker_automation.eligible_labels'),
    settings.get('enhancements.tracker_automation.eligible_issue_types'),
    settings.get('enhancements.tracker_automation.done_statuses'),
    settings.get('enhancements.tracker_automation.needs_info_statuses'),
    settings.get('enhancements.tracker_automation.working_statuses'),
  ]);
  return {
    dispatchEnabled: !!enabled && !!codeAgent,
    eligibleLabels: labels ?? [],
    eligibleIssueTypes: types ?? [],
    statusMap: { done: done ?? [], needs_info: needsInfo ?? [], working: working ?? [] },
  };
}

/** Starts one run per ticket through the code-agent start path: the run id derives from the ticket, so a retry finds it. */
export function codeAgentDispatcher(deps: TrackerDeps, tenant: string): Dispatcher | undefined {
  const temporal = deps.temporal;
  if (!temporal) return undefined;
  return async (ticket: TrackerTicket, source: TrackerPoller) => {
    const started = await startCodeAgentRun(
      { em: deps.orm.em.fork(), settings: deps.settings, temporal, config: deps.config },
      {
        runId: codeAgentRunIdFor(`tracker:${tenant}:${source}:${ticket.key}`),
        tenant,
        requestedBy: TRACKER_AUTOMATION_PRINCIPAL,
      },
      { prompt: `Resolve ${ticket.key}: ${ticket.summary}`, ticket_key: ticket.key },
    );
    if ('unsupported' in started)
      return { refused: { code: started.unsupported.code, message: started.unsupported.message } };
    return { runId: started.row.runId };
  };
}

/** The tracker connection (`api_key`: `api_base_url` the tracker site, `api_key` its token), or TICKETING_SETUP_REQUIRED. */
export async function trackerCredential(
  em: EntityManager,
  deps: TrackerDeps,
  tenant: string,
): Promise<TrackerCredential | { code: string; message: string }> {
  const name = ((await deps.settings.get('enhancements.tracker_automation.connection_name')) ?? '').trim();
  if (!name)
    return {
      code: TICKETING_SETUP_REQUIRED,
      message: 'No tracker connection is configured (enhancements.tracker_automation.connection_name).',
    };
  try {
    const cred = openApiKeyConnection(deps.config, await findConnectionRow(em, tenant, name, 'api_key'));
    return { baseUrl: cred.apiBaseUrl, apiKey: cred.apiKey };
  } catch (err) {
    return {
      code: TICKETING_SETUP_REQUIRED,
      message: `The tracker connection "${name}" is not usable: ${(err as Error).message}`,
    };
  }
}

/**
 * One poll (the poll workflow's activity): records `last_poll_started_at` and the window, reads the
 * tickets, feeds each into the ledger, then records `poller_last_run_at` and, on success,
 * `last_successful_poll_at`. Tracker failures are the poll's outcome; database failures throw (retried).
 */
export async function runTrackerPoll(
  deps: TrackerDeps,
  input: TrackerPollInput,
  now: () => Date = () => new Date(),
): Promise<TrackerPollResult> {
  const em = deps.orm.em.fork();
  const tenant = trackerTenant(deps.config);
  const startedAt = now();
  // A poll (often `poll-now` right after a settings save in the API process) reads the settings as saved
  // now, not as this worker cached them up to a second ago: one version-row read per poll.
  deps.settings.invalidate();
  const [state, lookback, jqlFilter] = await Promise.all([
    readPollState(em, tenant, input.poller),
    deps.settings.get('enhancements.tracker_automation.poll_lookback_minutes'),
    deps.settings.get('enhancements.tracker_automation.jql_filter'),
  ]);
  const windowStart = searchWindowStart({
    now: startedAt,
    lastSuccessfulPollAt: state.last_successful_poll_at ? new Date(state.last_successful_poll_at) : null,
    lookbackMinutes: lookback ?? 60,
    overrideLookbackMinutes: input.lookbackMinutes,
  });
  await markPollStarted(em, tenant, input.poller, startedAt, windowStart);
  const result: TrackerPollResult = {
    poller: input.poller,
    ok: true,
    error: null,
    window_start: windowStart.toISOString(),
    started_at: startedAt.toISOString(),
    seen: 0,
    events: {},
    dispatched: 0,
  };
  const cred = await trackerCredential(em, deps, tenant);
  let tickets: TrackerTicket[] = [];
  if ('code' in cred) result.error = cred;
  else {
    try {
      tickets = await readTickets(deps.config, cred, input.poller, windowStart, jqlFilter ?? '');
    } catch (err) {
      if (!(err instanceof TrackerReadError)) throw err;
      result.error = { code: err.code, message: err.message };
    }
  }
  if (!result.error) {
    const rules = await ledgerRules(deps.settings);
    const dispatch = codeAgentDispatcher(deps, tenant);
    for (const t of tickets) {
      const outcome = await observeTicket(em, tenant, input.poller, t, rules, dispatch);
      result.seen++;
      for (const e of outcome.events) result.events[e] = (result.events[e] ?? 0) + 1;
      if (outcome.dispatched) result.dispatched++;
    }
  }
  result.ok = !result.error;
  await markPollFinished(em, tenant, input.poller, {
    startedAt,
    finishedAt: now(),
    error: result.error ? `${result.error.code}: ${result.error.message}` : null,
    summary: { seen: result.seen, events: result.events, dispatched: result.dispatched, trigger: input.trigger },
  });
  return result;
}
