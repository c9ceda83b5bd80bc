import type { AppConfig } from '../config.js';
import { trackerRequest, TrackerReadError, type TrackerCredential } from './client.js';
import { TrackerCodes } from './error-codes.js';

/**
 * Writes and project metadata in the Jira Cloud REST style (the ticket-RCA vignette): the issue types
 * a project offers (`GET /rest/api/3/issue/createmeta/{projectKey}/issuetypes`), filing an issue
 * (`POST /rest/api/3/issue`), labelling it (`PUT /rest/api/3/issue/{key}` with an `update.labels`
 * add) and commenting (`POST /rest/api/3/issue/{key}/comment`). Through the egress client only; the
 * errors are the read client's (`tracker_unreachable`, `tracker_refused`, `tracker_bad_answer`, `egress_refused`).
 */
const call = (
  config: AppConfig,
  cred: TrackerCredential,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  body?: unknown,
) => trackerRequest(config, cred, method, path, { body });

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

/** The names of the issue types a project offers (`issueTypes`, or `values` in the paged form). */
export async function projectIssueTypes(config: AppConfig, cred: TrackerCredential, projectKey: string) {
  const body = obj(
    await call(config, cred, 'GET', `/rest/api/3/issue/createmeta/${encodeURIComponent(projectKey)}/issuetypes`),
  );
  const list = Array.isArray(body.issueTypes) ? body.issueTypes : Array.isArray(body.values) ? body.values : null;
  if (!list) throw new TrackerReadError(TrackerCodes.tracker_bad_answer, 'The create metadata has no issue types.');
  return list.map((t) => obj(t).name).filter((n): n is string => typeof n === 'string');
}

/** Atlassian document format of plain paragraphs. */
const adf = (text: string) => ({
  type: 'doc',
  version: 1,
  content: text
    .split(/\n{2,}/)
    .filter(Boolean)
    .map((p) => ({ type: 'paragraph', content: [{ type: 'text', text: p }] })),
});

/** Files an issue; answers its key. */
export async function createIssue(
  config: AppConfig,
  cred: TrackerCredential,
  input: { projectKey: string; issueType: string; summary: string; description: string; labels: string[] },
): Promise<string> {
  const body = obj(
    await call(config, cred, 'POST', '/rest/api/3/issue', {
      fields: {
        project: { key: input.projectKey },
        issuetype: { name: input.issueType },
        summary: input.summary,
        description: adf(input.description),
        labels: input.labels,
      },
    }),
  );
  if (typeof body.key !== 'string' || !body.key)
    throw new TrackerReadError(TrackerCodes.tracker_bad_answer, 'The created issue has no key.');
  return body.key;
}

/** Adds a label to an issue (idempotent on the tracker's side). */
export async function addIssueLabel(config: AppConfig, cred: TrackerCredential, key: string, label: string) {
  await call(config, cred, 'PUT', `/rest/api/3/issue/${encodeURIComponent(key)}`, {
    update: { labels: [{ add: label }] },
  });
}

/** Adds a comment to an issue. */
export async function addIssueComment(config: AppConfig, cred: TrackerCredential, key: string, text: string) {
  await call(config, cred, 'POST', `/rest/api/3/issue/${encodeURIComponent(key)}/comment`, { body: adf(text) });
}
