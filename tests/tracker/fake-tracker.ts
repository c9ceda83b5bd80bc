import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake tracker on loopback in the Jira Cloud REST style: `GET /rest/api/3/search` (JQL
 * `updated >= "<yyyy-MM-dd HH:mm>"`, pages by `startAt`/`maxResults`) and `GET /rest/servicedeskapi/request`
 * (pages by `start`/`limit`), both behind `Authorization: Bearer <token>`. Tests edit `issues` and
 * `requests`; every query string is kept in `searches`.
 */
export interface FakeIssue {
  key: string;
  summary: string;
  status: string;
  updated: string;
  labels?: string[];
  issuetype?: string;
}

export interface FakeTracker {
  url: string;
  issues: FakeIssue[];
  requests: FakeIssue[];
  /** Every search's JQL, in order. */
  searches: string[];
  /** Answer every request with this status instead (e.g. 503). */
  failWith: number | null;
  close(): Promise<void>;
}

/** `yyyy-MM-dd HH:mm` (UTC) as an instant. */
const jqlInstant = (s: string) => Date.parse(`${s.replace(' ', 'T')}:00Z`);

export async function startFakeTracker(token = 'tracker-token'): Promise<FakeTracker> {
  const fake: FakeTracker = {
    url: '',
    issues: [],
    requests: [],
    searches: [],
    failWith: null,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${token}`) return send(401, { errorMessages: ['unauthorized'] });
    if (fake.failWith) return send(fake.failWith, { errorMessages: ['unavailable'] });
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname === '/rest/api/3/search') {
      const jql = url.searchParams.get('jql') ?? '';
      fake.searches.push(jql);
      const since = /updated >= "([^"]+)"/.exec(jql)?.[1];
      const from = since ? jqlInstant(since) : -Infinity;
      const all = fake.issues.filter((i) => Date.parse(i.updated) >= from);
      const startAt = Number(url.searchParams.get('startAt') ?? 0);
      const max = Number(url.searchParams.get('maxResults') ?? 50);
      return send(200, {
        startAt,
        maxResults: max,
        total: all.length,
        issues: all.slice(startAt, startAt + max).map((i) => ({
          key: i.key,
          fields: {
            summary: i.summary,
            status: { name: i.status },
            updated: i.updated,
            labels: i.labels ?? [],
            issuetype: { name: i.issuetype ?? 'Task' },
          },
        })),
      });
    }
    if (url.pathname === '/rest/servicedeskapi/request') {
      const start = Number(url.searchParams.get('start') ?? 0);
      const limit = Number(url.searchParams.get('limit') ?? 50);
      const page = fake.requests.slice(start, start + limit);
      return send(200, {
        start,
        limit,
        isLastPage: start + limit >= fake.requests.length,
        values: page.map((r) => ({
          issueKey: r.key,
          requestFieldValues: [{ fieldId: 'summary', value: r.summary }],
          currentStatus: { status: r.status, statusDate: { iso8601: r.updated } },
          requestType: { name: r.issuetype ?? 'Get IT help' },
        })),
      });
    }
    send(404, { errorMessages: ['not found'] });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
