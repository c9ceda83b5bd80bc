import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { AuthenticationError } from '../../shared/errors.js';
import { codeAgentDispatcher, ledgerRules, trackerTenant, type TrackerDeps } from '../../shared/tracker/automation.js';
import { ticketFromIssue } from '../../shared/tracker/client.js';
import { observeTicket } from '../../shared/tracker/ledger.js';
import { trackerAutomationStatus, trackerPollNow } from '../../shared/tracker/automation-panel.js';
import { TRACKER_POLLERS } from '../../shared/tracker/policy.js';
import type { AppDeps } from '../../shared/app-deps.js';
import { defineRoute, successEnvelope } from '../http/route.js';

const Poller = z.enum(TRACKER_POLLERS);
const ISO = z.string().nullable();

const PollStateView = z.object({
  poller: Poller,
  schedule_id: z.string().describe('Temporal Schedule of this poller (paused while automation is disabled)'),
  last_poll_started_at: ISO.describe('State: when the last poll (scheduled or poll-now) started'),
  last_successful_poll_at: ISO.describe(
    'State: start of the last poll that read the tracker; the next window starts 600 s before it',
  ),
  poller_last_run_at: ISO.describe('State: when the last poll finished, successful or not'),
  last_window_start: ISO,
  last_error: z.string().nullable(),
  last_summary: z.unknown(),
});

const PollResultView = z.object({
  poller: Poller,
  ok: z.boolean(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  window_start: z.string(),
  started_at: z.string(),
  seen: z.number().int(),
  events: z.record(z.string(), z.number().int()),
  dispatched: z.number().int(),
});

const EventView = z.object({
  source: z.string(),
  issue_key: z.string(),
  kind: z.string().describe('recorded, metadata_changed, provider_status_observed, dispatched, dispatch_refused'),
  provider_updated_at: z.string(),
  detail: z.record(z.string(), z.unknown()),
  created_at: z.string(),
});

const StatusView = z.object({
  settings: z.object({
    enabled: z.boolean(),
    poll_interval_seconds: z.number().int(),
    poll_lookback_minutes: z.number().int(),
    connection_name: z.string(),
    eligible_labels: z.array(z.string()),
    eligible_issue_types: z.array(z.string()),
    status_map: z.object({
      done: z.array(z.string()),
      needs_info: z.array(z.string()),
      working: z.array(z.string()),
    }),
    webhook_secret_configured: z.boolean(),
  }),
  pollers: z.array(PollStateView),
  recent_events: z.array(EventView),
});

const trackerDeps = (deps: AppDeps): TrackerDeps => ({
  orm: deps.orm,
  settings: deps.settings,
  config: deps.config,
  temporal: deps.temporal,
});

/** `sha256=<hex>` of HMAC-SHA256(secret, raw body), compared in constant time. */
export function webhookSignatureValid(secret: string, rawBody: string, header: string | undefined): boolean {
  const m = /^sha256=([0-9a-f]{64})$/i.exec((header ?? '').trim());
  if (!m) return false;
  const want = createHmac('sha256', secret).update(rawBody, 'utf8').digest();
  return timingSafeEqual(want, Buffer.from(m[1]!, 'hex'));
}

const WebhookIssue = z.object({
  key: z.string().min(1).max(200),
  fields: z
    .object({
      summary: z.string().max(2000).optional(),
      status: z.object({ name: z.string().max(200) }).optional(),
      updated: z.string().max(100).optional(),
      labels: z.array(z.string().max(255)).max(100).optional(),
      issuetype: z.object({ name: z.string().max(200) }).optional(),
    })
    .optional(),
});

export const trackerAutomationRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/config/tracker-automation',
    operationId: 'getTrackerAutomation',
    summary: 'Tracker automation: its settings, each poller’s state and schedule, and the latest ledger events',
    tags: ['config'],
    access: { kind: 'authenticated', permission: 'access_config_panel' },
    responses: { 200: { description: 'Status', schema: successEnvelope(StatusView) } },
    handler: async ({ deps, em }) => ({
      success: true,
      data: (await trackerAutomationStatus(deps, em)) satisfies z.infer<typeof StatusView>,
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/config/tracker-automation/poll-now',
    operationId: 'trackerPollNow',
    summary: 'Run one poll now (waits for it); without lookback_minutes it skips when the last poll is too recent',
    description:
      'Without `lookback_minutes` the poll runs only when the time since the last poll started is at least ' +
      '`poll_interval_seconds` − 2 s; otherwise it answers `skipped: true` with `next_poll_seconds` (seconds until ' +
      'the next scheduled poll). With `lookback_minutes` it always runs, searching that far back. A tracker ' +
      'failure is the poll’s outcome (`result.ok` false, `result.error.code`, e.g. TICKETING_SETUP_REQUIRED).',
    tags: ['config'],
    access: { kind: 'authenticated', permission: 'access_config_panel' },
    body: z
      .object({
        poller: Poller,
        lookback_minutes: z.number().int().min(1).max(10_080).optional(),
      })
      .strict(),
    bodyKind: 'config',
    responses: {
      200: {
        description: 'The poll ran (its result) or was skipped',
        schema: successEnvelope(
          z.object({
            skipped: z.boolean(),
            next_poll_seconds: z.number().int().nullable(),
            result: PollResultView.nullable(),
          }),
        ),
      },
    },
    handler: async ({ deps, em, body, requestId }) => ({
      success: true,
      data: await trackerPollNow(deps, em, body, requestId),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/config/tracker-automation/service-desk/webhook',
    operationId: 'trackerServiceDeskWebhook',
    summary: 'Service-desk webhook: a signed issue event fed into the tracker ledger (idempotent)',
    description:
      'No user authentication: the caller proves itself with `X-Webhook-Signature: sha256=<hex>`, the ' +
      'HMAC-SHA256 of the exact request body under the shared secret ' +
      '(`enhancements.tracker_automation.service_desk_webhook_secret`). A missing or wrong signature, or no ' +
      'secret configured, answers 401 and writes nothing. The same payload twice records its events once.',
    tags: ['config'],
    access: { kind: 'public' },
    body: z.object({
      webhookEvent: z.string().max(200).optional(),
      timestamp: z.number().optional(),
      issue: WebhookIssue,
    }),
    responses: {
      200: {
        description: 'Fed into the ledger',
        schema: successEnvelope(
          z.object({ issue_key: z.string(), events: z.array(z.string()), dispatched: z.boolean() }),
        ),
      },
      401: { description: 'Missing or wrong signature, or no webhook secret configured' },
    },
    handler: async ({ deps, em, body, koa }) => {
      const secret = await deps.settings.get('enhancements.tracker_automation.service_desk_webhook_secret');
      const raw = (koa.request as { rawBody?: string }).rawBody ?? '';
      if (!secret)
        throw new AuthenticationError('The service-desk webhook is not configured (no shared secret).', {
          reason: 'webhook_secret_not_configured',
        });
      if (!webhookSignatureValid(secret, raw, koa.get('x-webhook-signature') || undefined))
        throw new AuthenticationError('The webhook signature is missing or wrong.', { reason: 'bad_signature' });
      const ticket = ticketFromIssue(body.issue)!;
      const tenant = trackerTenant(deps.config);
      const d = trackerDeps(deps);
      const outcome = await observeTicket(
        em.fork(),
        tenant,
        'service_desk',
        ticket,
        await ledgerRules(deps.settings),
        codeAgentDispatcher(d, tenant),
      );
      return { success: true, data: { issue_key: ticket.key, events: outcome.events, dispatched: outcome.dispatched } };
    },
  }),
];
