import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake tracker on loopback in the Jira Cloud REST style: `GET /rest/api/3/search` (JQL
 * `updated >= "<yyyy-MM-dd HH:mm>"`, pages by `startAt`/`maxResults`) and `GET /rest/servicedeskapi/request`
 * (pages by `start`/`limit`), both behind `Authorization: Bearer <token>`. Tests edit `issues` and
 * `requests`; every query string is kept in `searches`. For the ticket-RCA vignette it also answers
 * `GET /rest/api/3/issue/createmeta/{projectKey}/issuetypes` (from `projects`; an unknown project 404),
 * `POST /rest/api/3/issue` (filed issues join `issues` and `created`), `PUT /rest/api/3/issue/{key}`
 * (`update.labels` adds) and `POST /rest/api/3/issue/{key}/comment` (kept in `comments`).
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
  /** Issue types offered per project key (create metadata). */
  projects: Record<string, string[]>;
  /** Every filed issue's request body `fields`, in order. */
  created: Array<Record<string, unknown>>;
  /** Comments by issue key (the text of their paragraphs). */
  comments: Record<string, string[]>;
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
    projects: {},
    created: [],
    comments: {},
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  const paragraphs = (doc: unknown): string =>
    ((doc as { content?: Array<{ content?: Array<{ text?: string }> }> })?.content ?? [])
      .map((p) => (p.content ?? []).map((t) => t.text ?? '').join(''))
      .join('\n\n');
  const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${token}`) return send(401, { errorMessages: ['unauthorized'] });
    if (fake.failWith) return send(fake.failWith, { errorMessages: ['unavailable'] });
    const url = new URL(req.url ?? '/', 'http://fake');
    const body = (raw ? JSON.parse(raw) : {}) as Record<string, any>;
    const meta = /^\/rest\/api\/3\/issue\/createmeta\/([^/]+)\/issuetypes$/.exec(url.pathname);
    if (meta && req.method === 'GET') {
      const types = fake.projects[decodeURIComponent(meta[1]!)];
      if (!types) return send(404, { errorMessages: ['No project could be found'] });
      return send(200, {
        startAt: 0,
        maxResults: 50,
        total: types.length,
        issueTypes: types.map((name, i) => ({ id: String(10000 + i), name })),
      });
    }
    if (url.pathname === '/rest/api/3/issue' && req.method === 'POST') {
      const fields = body.fields as Record<string, any>;
      const project = fields?.project?.key as string;
      const type = fields?.issuetype?.name as string;
      if (!fake.projects[project]?.includes(type)) return send(400, { errors: { issuetype: 'invalid' } });
      fake.created.push(fields);
      const key = `${project}-${100 + fake.created.length}`;
      fake.issues.push({
        key,
        summary: fields.summary,
        status: 'To Do',
        updated: new Date().toISOString(),
        labels: fields.labels ?? [],
        issuetype: type,
      });
      return send(201, { id: String(20000 + fake.created.length), key, self: `${fake.url}/rest/api/3/issue/${key}` });
    }
    const one = /^\/rest\/api\/3\/issue\/([^/]+)(\/comment)?$/.exec(url.pathname);
    if (one) {
      const key = decodeURIComponent(one[1]!);
      const issue = fake.issues.find((i) => i.key === key);
      if (!issue) return send(404, { errorMessages: ['Issue does not exist'] });
      if (one[2] && req.method === 'POST') {
        (fake.comments[key] ??= []).push(paragraphs(body.body));
        return send(201, { id: String(Date.now()) });
      }
      if (!one[2] && req.method === 'PUT') {
        for (const op of (body.update?.labels ?? []) as Array<{ add?: string }>)
          if (op.add && !(issue.labels ?? []).includes(op.add)) issue.labels = [...(issue.labels ?? []), op.add];
        issue.updated = new Date().toISOString();
        res.writeHead(204);
        return res.end();
      }
    }
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
  };
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
