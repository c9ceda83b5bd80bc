import type { AppConfig } from '../config.js';
import { EgressError, egressFetch } from '../http/egress.js';
import { jqlDate, type TrackerPoller } from './policy.js';
import { EgressCodes } from '../http/egress-policy.js';
import { TrackerCodes, type TrackerCode } from './error-codes.js';

/**
 * Reads tickets from the tracker in the Jira Cloud REST style (docs/architecture.md, "Tracker
 * automation"): the issue tracker with `GET /rest/api/3/search` (JQL `updated >= "<yyyy-MM-dd HH:mm>"`,
 * fields summary, status, updated, labels, issuetype; pages by `startAt`), the service desk with
 * `GET /rest/servicedeskapi/request` (pages by `start`, kept when the current status date is in the
 * window). Every request goes through the egress client with the connection's credential.
 */

/** One ticket as the ledger sees it, from a poll or a webhook. */
export interface TrackerTicket {
  key: string;
  summary: string;
  status: string | null;
  /** The provider's last-update stamp as it sent it (the ledger's idempotency key). */
  updated: string;
  labels: string[];
  issueType: string | null;
}

export class TrackerReadError extends Error {
  constructor(
    readonly code: TrackerCode | typeof EgressCodes.egress_refused,
    message: string,
  ) {
    super(message);
  }
}

export interface TrackerCredential {
  baseUrl: string;
  apiKey: string;
}

const PAGE_SIZE = 50;
const MAX_PAGES = 20;

/** `email:token` is sent as basic auth (Jira Cloud API tokens), anything else as a bearer token. */
export function authorizationHeader(apiKey: string): string {
  return apiKey.includes(':') ? `Basic ${Buffer.from(apiKey).toString('base64')}` : `Bearer ${apiKey}`;
}

/**
 * One request to the tracker through the egress client: the parsed JSON answer, or null for an empty
 * body. Transport failures, refusals and non-JSON answers become `TrackerReadError`s.
 */
export async function trackerRequest(
  config: AppConfig,
  cred: TrackerCredential,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  options: { body?: unknown; maxResponseBytes?: number } = {},
): Promise<unknown> {
  const base = cred.baseUrl.endsWith('/') ? cred.baseUrl : `${cred.baseUrl}/`;
  const { body } = options;
  let res: Response;
  try {
    res = await egressFetch(new URL(path.replace(/^\//, ''), base), {
      policy: config.egress,
      method,
      headers: {
        accept: 'application/json',
        authorization: authorizationHeader(cred.apiKey),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      timeoutMs: 30_000,
      maxResponseBytes: options.maxResponseBytes ?? 2 * 1024 * 1024,
    });
  } catch (err) {
    if (!(err instanceof EgressError)) throw err;
    if (err.code === EgressCodes.egress_refused)
      throw new TrackerReadError(EgressCodes.egress_refused, `The tracker's address is not allowed: ${err.message}`);
    throw new TrackerReadError(TrackerCodes.tracker_unreachable, `The tracker could not be reached: ${err.message}`);
  }
  const text = await res.text();
  if (!res.ok) throw new TrackerReadError(TrackerCodes.tracker_refused, `The tracker answered HTTP ${res.status}.`);
  if (!text.trim()) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new TrackerReadError(TrackerCodes.tracker_bad_answer, 'The tracker answered something that is not JSON.');
  }
}

async function getJson(config: AppConfig, cred: TrackerCredential, path: string): Promise<unknown> {
  const answer = await trackerRequest(config, cred, 'GET', path, { maxResponseBytes: 8 * 1024 * 1024 });
  if (answer === null)
    throw new TrackerReadError(TrackerCodes.tracker_bad_answer, 'The tracker answered an empty body.');
  return answer;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** A Jira issue (`{key, fields: {summary, status: {name}, updated, labels, issuetype: {name}}}`), or null when it lacks a key. */
export function ticketFromIssue(issue: unknown): TrackerTicket | null {
  const i = obj(issue);
  const f = obj(i.fields);
  const key = str(i.key);
  if (!key) return null;
  return {
    key,
    summary: str(f.summary) ?? '',
    status: str(obj(f.status).name),
    updated: str(f.updated) ?? '',
    labels: Array.isArray(f.labels) ? f.labels.filter((l): l is string => typeof l === 'string') : [],
    issueType: str(obj(f.issuetype).name),
  };
}

/** A service-desk request (`{issueKey, requestFieldValues: [{fieldId: summary, value}], currentStatus: {status, statusDate: {iso8601}}}`). */
export function ticketFromRequest(request: unknown): TrackerTicket | null {
  const r = obj(request);
  const key = str(r.issueKey);
  if (!key) return null;
  const fields = Array.isArray(r.requestFieldValues) ? r.requestFieldValues.map(obj) : [];
  const summary = str(fields.find((f) => f.fieldId === 'summary')?.value) ?? '';
  const current = obj(r.currentStatus);
  return {
    key,
    summary,
    status: str(current.status),
    updated: str(obj(current.statusDate).iso8601) ?? '',
    labels: [],
    issueType: str(obj(r.requestType).name),
  };
}

/** Every ticket the poller's window holds (at most 20 pages of 50). */
export async function readTickets(
  config: AppConfig,
  cred: TrackerCredential,
  poller: TrackerPoller,
  windowStart: Date,
  jqlFilter = '',
): Promise<TrackerTicket[]> {
  const out: TrackerTicket[] = [];
  if (poller === 'issue_tracker') {
    const extra = jqlFilter.trim() ? ` AND (${jqlFilter.trim()})` : '';
    const jql = `updated >= "${jqlDate(windowStart)}"${extra} ORDER BY updated ASC`;
    for (let page = 0, startAt = 0; page < MAX_PAGES; page++) {
      const q = new URLSearchParams({
        jql,
        fields: 'summary,status,updated,labels,issuetype',
        startAt: String(startAt),
        maxResults: String(PAGE_SIZE),
      });
      const body = obj(await getJson(config, cred, `/rest/api/3/search?${q}`));
      if (!Array.isArray(body.issues))
        throw new TrackerReadError(TrackerCodes.tracker_bad_answer, 'The search answer has no issues.');
      for (const issue of body.issues) {
        const t = ticketFromIssue(issue);
        if (t) out.push(t);
      }
      startAt += body.issues.length;
      const total = typeof body.total === 'number' ? body.total : 0;
      if (!body.issues.length || startAt >= total) break;
    }
    return out;
  }
  for (let page = 0, start = 0; page < MAX_PAGES; page++) {
    const q = new URLSearchParams({ requestStatus: 'ALL_REQUESTS', start: String(start), limit: String(PAGE_SIZE) });
    const body = obj(await getJson(config, cred, `/rest/servicedeskapi/request?${q}`));
    if (!Array.isArray(body.values))
      throw new TrackerReadError(TrackerCodes.tracker_bad_answer, 'The request list has no values.');
    for (const request of body.values) {
      const t = ticketFromRequest(request);
      const at = t ? Date.parse(t.updated) : NaN;
      if (t && (Number.isNaN(at) || at >= windowStart.getTime())) out.push(t);
    }
    start += body.values.length;
    if (body.isLastPage !== false || !body.values.length) break;
  }
  return out;
}
