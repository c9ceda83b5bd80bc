/**
 * `GET /metrics` (Prometheus text, internal token): HTTP counts and latency by route template and
 * status with bounded labels, and the domain figures moved by a real lifecycle (Action Review
 * proposal created, approved and applied; one echo job), read from PostgreSQL at scrape time.
 */
import { Counter, Gauge } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiMetrics } from '../../shared/observability/metrics.js';
import { http } from '../helpers/stack.js';
import {
  INTERNAL_TOKEN,
  learning,
  path,
  propose,
  startReviewStack,
  type ReviewStack,
} from '../action-review/support.js';

let r: ReviewStack;
const BODY_LIMIT = 64 * 1024;
beforeAll(async () => {
  r = await startReviewStack({ MAX_JSON_BODY_BYTES: String(BODY_LIMIT) });
});
afterAll(async () => {
  await r?.close();
});

const scrape = () => http(r.stack.url, 'GET', '/metrics', { headers: { 'x-platform-internal-token': INTERNAL_TOKEN } });

/** The value of one sample line (`name{labels} value`), or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{') && !line.startsWith(name + ' ')) continue;
    const m = /^([^{\s]+)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe('GET /metrics', () => {
  it('refuses without the internal token and with a wrong one (401), naming which', async () => {
    const absent = await http(r.stack.url, 'GET', '/metrics');
    expect(absent.status).toBe(401);
    expect(absent.body).toMatchObject({ error_type: 'authentication', payload: { reason: 'internal_token_absent' } });
    const wrong = await http(r.stack.url, 'GET', '/metrics', {
      headers: { 'x-platform-internal-token': 'not-it' },
      token: r.tokens.rita,
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body.payload.reason).toBe('internal_token_unrecognised');
  });

  it('moves the HTTP and domain counters after a lifecycle, with bounded labels (no ids)', async () => {
    const before = (await scrape()).text;
    const id = await propose(r.stack.url, r.tokens.rita, learning(42));
    const approved = await http(r.stack.url, 'POST', path(id, '/approve'), { token: r.tokens.ravi, body: {} });
    expect(approved.status).toBe(200);
    expect(approved.body.final_status).toBe('executed');
    const detail = await http(r.stack.url, 'GET', path(id), { token: r.tokens.rita });
    expect(detail.status).toBe(200);
    const echo = await http(r.stack.url, 'POST', '/api/jobs/echo', { token: r.tokens.rita, body: { message: 'hi' } });
    expect(echo.status).toBe(200);

    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.text;

    // HTTP metrics by route template and status.
    const created = { method: 'POST', route: '/api/action-review/proposals', status: '201' };
    expect(sample(text, 'http_requests_total', created)).toBe(
      (sample(before, 'http_requests_total', created) ?? 0) + 1,
    );
    expect(
      sample(text, 'http_requests_total', {
        method: 'GET',
        route: '/api/action-review/proposals/:proposal_id',
        status: '200',
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'http_request_duration_seconds_count', created)).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: '/metrics', status: '401' })).toBe(2);
    // Bounded labels: no proposal id, UUID or raw path anywhere in a label value.
    expect(text).not.toContain(id);
    expect(text).not.toMatch(/="[^"]*[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}[^"]*"/);

    // Domain figures.
    expect(sample(text, 'platform_domain_metrics_up')).toBe(1);
    expect(sample(text, 'platform_action_review_proposals', { status: 'executed' })).toBe(
      (sample(before, 'platform_action_review_proposals', { status: 'executed' }) ?? 0) + 1,
    );
    expect(sample(text, 'platform_action_review_proposals', { status: 'requested' })).toBe(0);
    expect(sample(text, 'platform_action_review_events_total', { type: 'approved' })).toBe(
      (sample(before, 'platform_action_review_events_total', { type: 'approved' }) ?? 0) + 1,
    );
    expect(sample(text, 'platform_action_review_events_total', { type: 'executed' })).toBe(
      (sample(before, 'platform_action_review_events_total', { type: 'executed' }) ?? 0) + 1,
    );
    expect(sample(text, 'platform_action_review_events_total', { type: 'reconciliation_required' })).toBe(0);
    expect(sample(text, 'platform_echo_jobs_total')).toBe((sample(before, 'platform_echo_jobs_total') ?? 0) + 1);
    for (const name of [
      'platform_crm_merge_approvals_expiring',
      'platform_thread_turns_total',
      'platform_llm_spend_usd_total',
      'process_cpu_seconds_total',
    ])
      expect(text).toContain(`# TYPE ${name}`);
  });

  it('labels a body the API refuses before any handler (400, 413, 415) with the route template', async () => {
    const route = '/api/action-review/proposals/:proposal_id/approve';
    const url = '/api/action-review/proposals/no-such-proposal/approve';
    const count = (text: string, status: string) =>
      sample(text, 'http_requests_total', { method: 'POST', route, status }) ?? 0;
    const before = (await scrape()).text;
    const json = { 'content-type': 'application/json', authorization: `Bearer ${r.tokens.ravi}` };
    const malformed = await http(r.stack.url, 'POST', url, { raw: '{"comment":', headers: json });
    expect(malformed.status).toBe(400);
    expect(malformed.body.payload.reason).toBe('malformed_json');
    const large = await http(r.stack.url, 'POST', url, {
      raw: JSON.stringify({ comment: 'x'.repeat(BODY_LIMIT) }),
      headers: json,
    });
    expect(large.status).toBe(413);
    const text = await http(r.stack.url, 'POST', url, {
      raw: 'approve',
      headers: { 'content-type': 'text/plain', authorization: `Bearer ${r.tokens.ravi}` },
    });
    expect(text.status).toBe(415);
    const after = (await scrape()).text;
    for (const status of ['400', '413', '415']) expect(count(after, status), status).toBe(count(before, status) + 1);
    for (const status of ['400', '413', '415'])
      expect(sample(after, 'http_requests_total', { method: 'POST', route: 'unmatched', status }) ?? 0, status).toBe(
        sample(before, 'http_requests_total', { method: 'POST', route: 'unmatched', status }) ?? 0,
      );
  });

  it('names counters, and only counters, `…_total` (Prometheus naming; promtool check metrics)', () => {
    const metrics = createApiMetrics().registry.getMetricsAsArray();
    const gauges = metrics.filter((m) => m instanceof Gauge).map((m) => m.name);
    expect(gauges).toContain('nodejs_active_handles');
    expect(gauges.filter((name) => name.endsWith('_total'))).toEqual([]);
    const counters = metrics.filter((m) => m instanceof Counter).map((m) => m.name);
    expect(counters).toContain('http_requests_total');
    expect(counters.filter((name) => !name.endsWith('_total'))).toEqual([]);
  });

  it('keeps unmatched paths under one label', async () => {
    const miss = await http(r.stack.url, 'GET', '/no/such/path-12345');
    expect(miss.status).toBe(404);
    const text = (await scrape()).text;
    expect(sample(text, 'http_requests_total', { route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain('path-12345');
  });

  it('takes the internal token as a bearer token too (what a Prometheus `authorization` block sends)', async () => {
    const ok = await http(r.stack.url, 'GET', '/metrics', { token: INTERNAL_TOKEN });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('# TYPE http_requests_total counter');
    const other = await http(r.stack.url, 'GET', '/metrics', { token: r.tokens.rita });
    expect(other.status).toBe(401);
    expect(other.body).toMatchObject({
      error_type: 'authentication',
      payload: { reason: 'internal_token_unrecognised' },
    });
    const notBearer = await http(r.stack.url, 'GET', '/metrics', {
      headers: { authorization: `Basic ${INTERNAL_TOKEN}` },
    });
    expect(notBearer.status).toBe(401);
    expect(notBearer.body.payload.reason).toBe('internal_token_absent');
    // Other internal routes still take only the header (spec, Authentication item 1).
    const internal = await http(r.stack.url, 'POST', '/api/internal/sandbox-tokens', {
      token: INTERNAL_TOKEN,
      body: {},
    });
    expect(internal.status).toBe(401);
    expect(internal.body.payload.reason).toBe('internal_token_absent');
  });
});
