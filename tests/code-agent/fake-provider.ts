import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake cloud code-agent provider on loopback (PROTOCOLS.md, "Cloud code agent"): models, launch
 * with `Idempotency-Key` (a repeated key answers the first run), and run status following a script
 * chosen by the prompt: `finish` (CREATING, RUNNING, FINISHED with a PR), `fail` (RUNNING, ERROR),
 * `expire` (RUNNING, EXPIRED), `hold` (RUNNING until `release(runId)`, then FINISHED with a PR); cancel
 * (`POST …/cancel`) makes a run CANCELLED, or answers 409 `run_not_cancellable` (`refuseCancel`, or a run
 * already released or cancelled).
 */
export interface FakeRun {
  agentId: string;
  runId: string;
  key: string | null;
  prompt: string;
  body: Record<string, unknown>;
  polls: number;
  released: boolean;
  /** Accepted `POST …/cancel`: the run reports CANCELLED from then on. */
  cancelled: boolean;
}

export interface FakeProvider {
  url: string;
  runs: FakeRun[];
  /** Every POST /v1/agents, with its idempotency key. */
  creates: Array<string | null>;
  /** When set, the first create with a new key records its run but never answers (the caller must retry). */
  swallowFirstCreate: boolean;
  /** Every `POST /v1/agents/{id}/runs/{runId}/cancel`, by remote run id. */
  cancels: string[];
  /** When set, cancels answer 409 `run_not_cancellable`. */
  refuseCancel: boolean;
  release(runId: string): void;
  close(): Promise<void>;
}

const SCRIPTS: Record<string, string[]> = {
  finish: ['CREATING', 'RUNNING', 'FINISHED'],
  fail: ['RUNNING', 'ERROR'],
  expire: ['RUNNING', 'EXPIRED'],
};

export async function startFakeProvider(apiKey = 'good-key'): Promise<FakeProvider> {
  const fake: FakeProvider = {
    url: '',
    runs: [],
    creates: [],
    swallowFirstCreate: false,
    cancels: [],
    refuseCancel: false,
    release(runId) {
      const run = fake.runs.find((r) => r.runId === runId);
      if (run) run.released = true;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  const statusOf = (run: FakeRun): string => {
    if (run.cancelled) return 'CANCELLED';
    const kind = Object.keys(SCRIPTS).find((k) => run.prompt.includes(k));
    if (!kind) return run.released ? 'FINISHED' : 'RUNNING';
    const script = SCRIPTS[kind]!;
    return script[Math.min(run.polls - 1, script.length - 1)]!;
  };
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.headers.authorization !== `Bearer ${apiKey}`) {
        res.statusCode = 401;
        return void res.end(JSON.stringify({ error: { code: 'unauthorized' } }));
      }
      if (req.method === 'GET' && req.url === '/v1/models')
        return void res.end(JSON.stringify({ items: [{ id: 'model-a', displayName: 'A' }] }));
      if (req.method === 'POST' && req.url === '/v1/agents') {
        const key = (req.headers['idempotency-key'] as string | undefined) ?? null;
        fake.creates.push(key);
        const body = JSON.parse(raw) as { prompt: { text: string } };
        let run = key ? fake.runs.find((r) => r.key === key) : undefined;
        const fresh = !run;
        if (!run) {
          const n = fake.runs.length + 1;
          run = {
            agentId: `bc-${n}`,
            runId: `run-${n}`,
            key,
            prompt: body.prompt.text,
            body,
            polls: 0,
            released: false,
            cancelled: false,
          };
          fake.runs.push(run);
        }
        if (fresh && fake.swallowFirstCreate) return; // created, but the answer never comes
        return void res.end(
          JSON.stringify({
            agent: { id: run.agentId, status: 'ACTIVE', latestRunId: run.runId },
            run: { id: run.runId, agentId: run.agentId, status: 'CREATING', createdAt: new Date().toISOString() },
          }),
        );
      }
      const c = /^\/v1\/agents\/([^/]+)\/runs\/([^/]+)\/cancel$/.exec(req.url ?? '');
      const toCancel = c && fake.runs.find((r) => r.agentId === c[1] && r.runId === c[2]);
      if (req.method === 'POST' && toCancel) {
        fake.cancels.push(toCancel.runId);
        if (fake.refuseCancel || toCancel.cancelled || toCancel.released) {
          res.statusCode = 409;
          return void res.end(JSON.stringify({ error: { code: 'run_not_cancellable' } }));
        }
        toCancel.cancelled = true;
        return void res.end(JSON.stringify({ id: toCancel.runId, status: 'CANCELLED' }));
      }
      const m = /^\/v1\/agents\/([^/]+)\/runs\/([^/]+)$/.exec(req.url ?? '');
      const run = m && fake.runs.find((r) => r.agentId === m[1] && r.runId === m[2]);
      if (req.method === 'GET' && run) {
        run.polls++;
        const status = statusOf(run);
        const done = status === 'FINISHED';
        return void res.end(
          JSON.stringify({
            id: run.runId,
            status,
            durationMs: 1000 * run.polls,
            ...(done ? { result: { summary: 'Changed the export header.' } } : {}),
            git: {
              branches: done
                ? [
                    {
                      repoUrl: 'https://git.example/acme/app',
                      branch: `agent/${run.runId}`,
                      prUrl: `https://git.example/acme/app/pull/${run.runId.slice(4)}`,
                    },
                  ]
                : [],
            },
          }),
        );
      }
      res.statusCode = 404;
      res.end(JSON.stringify({ error: 'not_found' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
