/**
 * Prometheus metrics of the API process (prom-client): HTTP requests by route template and status,
 * process metrics, and the domain figures people ask about, read from PostgreSQL at scrape time so
 * they hold across processes, replicas and restarts (workers write the rows; any API replica reports
 * them). Labels are bounded: route templates, methods, statuses and the fixed vocabularies below,
 * never ids.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { EVENT_TYPES, PROPOSAL_STATUSES } from '../action-review/types.js';
import { sql } from '../db/sql.js';
import { LLM_PURPOSES } from '../llm/purposes.js';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const MERGE_APPROVAL_STATUSES = ['open', 'expired'] as const;
/** An open merge approval counts as expiring when its deadline is this close. */
export const EXPIRING_WINDOW_SECONDS = 3600;

/** One round trip: every domain figure as (metric, label, value). */
const DOMAIN_SQL = `
select 'proposals' as m, status as l, count(*)::float8 as v from action_review_proposals group by status
union all select 'events', type, count(*)::float8 from action_review_events group by type
union all select 'merge_approvals', status, count(*)::float8 from crm_merge_approvals group by status
union all select 'merge_expiring', '', count(*)::float8 from crm_merge_approvals
  where status = 'open' and expires_at > now() and expires_at <= now() + interval '${EXPIRING_WINDOW_SECONDS} seconds'
union all select 'thread_turns', '', count(*)::float8 from conversation_messages where role = 'assistant'
union all select 'llm_calls', case when thread_id is null then 'other' else 'thread' end || ':' || purpose, count(*)::float8
  from llm_usage group by 2
union all select 'llm_spend', case when thread_id is null then 'other' else 'thread' end || ':' || purpose,
  coalesce(sum(cost_usd), 0)::float8 from llm_usage group by 2
union all select 'echo_jobs', '', count(*)::float8 from echo_jobs`;

/** `scope:purpose` as the domain query reads it, each bounded to its vocabulary. */
function llmLabels(l: string | null) {
  const [scope, purpose] = (l ?? '').split(':');
  return {
    scope: scope === 'thread' ? 'thread' : 'other',
    purpose: (LLM_PURPOSES as readonly string[]).includes(purpose ?? '') ? purpose! : 'other',
  };
}

export interface ApiMetrics {
  registry: Registry;
  /** Records one answered request (route template, never the raw path). */
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  /** Reads the domain figures from PostgreSQL (called at scrape time); false when the read failed. */
  refreshDomain(orm: MikroORM): Promise<boolean>;
}

/**
 * prom-client's process metrics include three gauges named `…_total` (`nodejs_active_handles_total`,
 * `…_requests_total`, `…_resources_total`), a suffix Prometheus keeps for counters (`promtool check
 * metrics` flags them). Each is the sum of its by-`type` gauge (`sum(nodejs_active_handles)`), so it goes.
 */
function dropTotalGauges(registry: Registry): void {
  for (const metric of registry.getMetricsAsArray())
    if (metric instanceof Gauge && metric.name.endsWith('_total')) registry.removeSingleMetric(metric.name);
}

export function createApiMetrics(): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  dropTotalGauges(registry);
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration, by method, route template and status',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const domainUp = new Gauge({
    name: 'platform_domain_metrics_up',
    help: '1 when the last scrape read the domain figures from PostgreSQL, 0 when it failed',
    registers: [registry],
  });
  const proposals = new Gauge({
    name: 'platform_action_review_proposals',
    help: 'Action Review proposals by current status (requested = waiting for a decision)',
    labelNames: ['status'],
    registers: [registry],
  });
  const events = new Counter({
    name: 'platform_action_review_events_total',
    help: 'Action Review events recorded, by type: approved/rejected are decisions, executed are effects executed, reconciliation_required raised',
    labelNames: ['type'],
    registers: [registry],
  });
  const mergeApprovals = new Gauge({
    name: 'platform_crm_merge_approvals',
    help: 'CRM merge approvals by status',
    labelNames: ['status'],
    registers: [registry],
  });
  const mergeExpiring = new Gauge({
    name: 'platform_crm_merge_approvals_expiring',
    help: `Open CRM merge approvals whose deadline falls within the next ${EXPIRING_WINDOW_SECONDS} seconds`,
    registers: [registry],
  });
  const threadTurns = new Counter({
    name: 'platform_thread_turns_total',
    help: 'Agent thread turns (assistant messages written)',
    registers: [registry],
  });
  const llmCalls = new Counter({
    name: 'platform_llm_calls_total',
    help: `Language-model calls answered, by scope (thread: made for a thread; other) and purpose (${LLM_PURPOSES.join(', ')}, other)`,
    labelNames: ['scope', 'purpose'],
    registers: [registry],
  });
  const llmSpend = new Counter({
    name: 'platform_llm_spend_usd_total',
    help: 'Language-model spend in US dollars, by scope and purpose (as platform_llm_calls_total)',
    labelNames: ['scope', 'purpose'],
    registers: [registry],
  });
  const echoJobs = new Counter({
    name: 'platform_echo_jobs_total',
    help: 'Echo jobs recorded by the worker',
    registers: [registry],
  });

  const setCounter = (counter: Counter<string>, value: number, labels?: Record<string, string>) => {
    if (labels) counter.inc(labels, value);
    else counter.inc(value);
  };

  return {
    registry,
    observeRequest(method, route, status, seconds) {
      const labels = { method: METHODS.has(method) ? method : 'OTHER', route, status: String(status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
    },
    async refreshDomain(orm) {
      let rows: Array<{ m: string; l: string | null; v: number }>;
      try {
        rows = await sql(orm.em.fork(), DOMAIN_SQL);
      } catch {
        domainUp.set(0);
        return false;
      }
      // The database holds the totals: every scrape restates them (the counters never go down while rows are kept).
      for (const metric of [
        proposals,
        events,
        mergeApprovals,
        mergeExpiring,
        threadTurns,
        llmCalls,
        llmSpend,
        echoJobs,
      ])
        metric.reset();
      for (const status of PROPOSAL_STATUSES) proposals.set({ status }, 0);
      for (const type of EVENT_TYPES) events.inc({ type }, 0);
      for (const status of MERGE_APPROVAL_STATUSES) mergeApprovals.set({ status }, 0);
      for (const purpose of LLM_PURPOSES) {
        const labels = { scope: purpose === 'thread_turn' ? 'thread' : 'other', purpose };
        llmCalls.inc(labels, 0);
        llmSpend.inc(labels, 0);
      }
      mergeExpiring.set(0);
      const known = (list: readonly string[], value: string | null) =>
        value && list.includes(value) ? value : 'other';
      for (const { m, l, v } of rows) {
        const value = Number(v);
        if (m === 'proposals') proposals.inc({ status: known(PROPOSAL_STATUSES, l) }, value);
        else if (m === 'events') setCounter(events, value, { type: known(EVENT_TYPES, l) });
        else if (m === 'merge_approvals') mergeApprovals.inc({ status: known(MERGE_APPROVAL_STATUSES, l) }, value);
        else if (m === 'merge_expiring') mergeExpiring.set(value);
        else if (m === 'thread_turns') setCounter(threadTurns, value);
        else if (m === 'llm_calls') setCounter(llmCalls, value, llmLabels(l));
        else if (m === 'llm_spend') setCounter(llmSpend, value, llmLabels(l));
        else if (m === 'echo_jobs') setCounter(echoJobs, value);
      }
      domainUp.set(1);
      return true;
    },
  };
}
