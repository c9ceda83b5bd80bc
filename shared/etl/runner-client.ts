import type { AppConfig } from '../config.js';
import { NotFoundError, PlatformError, ServiceUnavailableError } from '../errors.js';
import { EgressError, egressFetch } from '../http/egress.js';
import type { BuiltJob } from './built-jobs.js';
import type { EtlRunView } from './runs.js';

/** What `POST /run` takes, on the runner and from the platform alike. */
export interface RemoteRunRequest {
  job_name: string;
  context?: string | undefined;
  context_params: Record<string, string>;
  timeout_seconds: number;
}

/**
 * The remote runner's API (`etl-runner/`) through the one outbound client, so the egress policy
 * applies. A refusal or an unreachable runner is a 503 naming the runner; its body text is not relayed.
 */
export class EtlRunnerClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string | null,
    private readonly config: AppConfig,
  ) {}

  private async call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    let res: Response;
    try {
      res = await egressFetch(`${this.baseUrl}${path}`, {
        policy: this.config.egress,
        method,
        headers: {
          accept: 'application/json',
          ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        timeoutMs: 30_000,
        signal,
      });
    } catch (err) {
      if (err instanceof EgressError)
        throw new ServiceUnavailableError('etl_runner', `The ETL runner could not be reached: ${err.message}.`);
      throw err;
    }
    const json = (await res.json().catch(() => null)) as T | null;
    if (res.status === 404 && method === 'GET' && path.startsWith('/run/'))
      throw new NotFoundError('The ETL runner does not know this run.', { reason: 'etl_remote_run_not_found' });
    if (res.status === 404 && method === 'POST')
      throw new NotFoundError('The ETL runner has no built job of that name.', { reason: 'etl_built_job_not_found' });
    if (res.status === 401)
      throw new ServiceUnavailableError('etl_runner', 'The ETL runner refused the token (set etl.runner_token).');
    if (!res.ok || json === null)
      throw new ServiceUnavailableError('etl_runner', `The ETL runner answered HTTP ${res.status}.`);
    return json;
  }

  async jobs(): Promise<BuiltJob[]> {
    return (await this.call<{ jobs: BuiltJob[] }>('GET', '/jobs')).jobs;
  }

  async run(request: RemoteRunRequest, signal?: AbortSignal): Promise<EtlRunView> {
    return await this.call<EtlRunView>('POST', '/run', request, signal);
  }

  async get(runId: string, offset: number, limit: number, signal?: AbortSignal): Promise<EtlRunView> {
    const q = `offset=${offset}&limit=${limit}`;
    return await this.call<EtlRunView>('GET', `/run/${encodeURIComponent(runId)}?${q}`, undefined, signal);
  }
}

/** Thrown when neither a project nor a source of built jobs is configured. */
export class EtlNotConfiguredError extends PlatformError {
  override name = 'EtlNotConfiguredError';
  constructor(message: string, missing: string[]) {
    super('bad_request', message, { reason: 'etl_not_configured', missing_settings: missing });
  }
}
