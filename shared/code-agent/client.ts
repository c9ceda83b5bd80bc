import type { AppConfig } from '../config.js';
import { egressFetch } from '../http/egress.js';
import type { CodeAgentCredential } from './connection.js';

/** A provider answer other than success: status and the provider's error code when it gave one (text to logs only). */
export class CodeAgentApiError extends Error {
  override name = 'CodeAgentApiError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null,
  ) {
    super(message);
  }
  /** 5xx and 429 are worth another try; other refusals are not. */
  get retryable(): boolean {
    return this.status >= 500 || this.status === 429;
  }
}

export interface RemoteRun {
  agentId: string;
  runId: string;
  status: string;
  prUrl: string | null;
  branch: string | null;
  summary: string | null;
}

export interface LaunchRequest {
  prompt: string;
  repoUrl: string;
  startingRef: string;
  autoCreatePr: boolean;
  model?: string;
}

const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);

/** The cloud code-agent API (docs PROTOCOLS.md, "Cloud code agent"), every call through the egress client. */
export class CodeAgentClient {
  constructor(
    private readonly cred: CodeAgentCredential,
    private readonly config: AppConfig,
  ) {}

  private async call(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
  ) {
    const res = await egressFetch(`${this.cred.apiBaseUrl}${path}`, {
      policy: this.config.egress,
      method,
      headers: {
        authorization: `Bearer ${this.cred.apiKey}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal ? { signal } : {}),
      timeoutMs: 30_000,
      maxResponseBytes: 2 * 1024 * 1024,
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (!res.ok) {
      const e = obj(json);
      const code = str(e.code) ?? str(obj(e.error).code) ?? str(e.error);
      throw new CodeAgentApiError(`${method} ${path} answered ${res.status}`, res.status, code);
    }
    return obj(json);
  }

  /** The connection test: `GET /v1/models`; answers the model ids. */
  async models(signal?: AbortSignal): Promise<string[]> {
    const body = await this.call('GET', '/v1/models', undefined, {}, signal);
    const items = Array.isArray(body.items) ? body.items : Array.isArray(body.models) ? body.models : [];
    return items.map((m) => (typeof m === 'string' ? m : str(obj(m).id))).filter((m): m is string => !!m);
  }

  /** `POST /v1/agents`; the idempotency key makes a repeated create answer the first run, never a second one. */
  async launch(req: LaunchRequest, idempotencyKey: string, signal?: AbortSignal): Promise<RemoteRun> {
    const body = await this.call(
      'POST',
      '/v1/agents',
      {
        prompt: { text: req.prompt },
        ...(req.model ? { model: { id: req.model } } : {}),
        repos: [{ url: req.repoUrl, startingRef: req.startingRef }],
        autoCreatePR: req.autoCreatePr,
      },
      { 'idempotency-key': idempotencyKey },
      signal,
    );
    const agent = obj(body.agent);
    const run = obj(body.run);
    const agentId = str(agent.id) ?? str(run.agentId);
    const runId = str(run.id) ?? str(agent.latestRunId);
    if (!agentId || !runId) throw new CodeAgentApiError('POST /v1/agents answered no agent or run id', 502, null);
    return { agentId, runId, status: str(run.status) ?? 'CREATING', prUrl: null, branch: null, summary: null };
  }

  /** `POST /v1/agents/{id}/runs/{runId}/cancel`; a run that cannot be cancelled answers 409 `run_not_cancellable`. */
  async cancel(agentId: string, runId: string, signal?: AbortSignal): Promise<void> {
    await this.call(
      'POST',
      `/v1/agents/${encodeURIComponent(agentId)}/runs/${encodeURIComponent(runId)}/cancel`,
      {},
      {},
      signal,
    );
  }

  /** `GET /v1/agents/{id}/runs/{runId}`: status (unknown values passed through), PR URL, branch. */
  async run(agentId: string, runId: string, signal?: AbortSignal): Promise<RemoteRun> {
    const body = await this.call(
      'GET',
      `/v1/agents/${encodeURIComponent(agentId)}/runs/${encodeURIComponent(runId)}`,
      undefined,
      {},
      signal,
    );
    const branches = Array.isArray(obj(body.git).branches) ? (obj(body.git).branches as unknown[]) : [];
    const first = obj(branches.find((b) => str(obj(b).prUrl)) ?? branches[0]);
    const result = body.result;
    return {
      agentId,
      runId,
      status: str(body.status) ?? 'UNKNOWN',
      prUrl: str(first.prUrl),
      branch: str(first.branch),
      summary: typeof result === 'string' ? result.slice(0, 4000) : (str(obj(result).summary)?.slice(0, 4000) ?? null),
    };
  }
}
