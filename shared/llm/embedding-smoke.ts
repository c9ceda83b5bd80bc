import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { LlmError } from './client.js';
import { embeddingModelOf } from './provider-kinds.js';
import { findProvider, openFields } from './provider-store.js';
import { meteredClient } from './metered.js';
import { describeError, type Logger } from '../log.js';
import { secretBox } from '../secrets/secret-box.js';
import { sql } from '../db/sql.js';

/** Spec Limits: the startup embedding smoke test waits 5 seconds for proxy-routed providers. */
export const EMBEDDING_SMOKE_TIMEOUT_MS = 5_000;

export interface EmbeddingSmokeResult {
  provider: string;
  model: string;
  status: 'pending' | 'ok' | 'failed';
  /** The classified failure (provider text only in the log), or what happened. */
  message: string;
  started_at: string;
  finished_at: string | null;
}

/**
 * The startup embedding smoke test: once per API process, one embedding call to every saved
 * proxy-routed provider that names an embedding model, each bounded by 5 seconds. It runs after the
 * server listens and is never awaited by the start (fire-and-forget; its own errors are logged), so a
 * hanging or unreachable provider never delays boot. Results are this process's, per tenant, shown by
 * `GET /api/config/ai-providers/embedding-health`.
 */
export class EmbeddingSmokeTests {
  private readonly results = new Map<string, EmbeddingSmokeResult[]>();
  /** Settles when every test of the run has an answer (for tests and shutdown; boot never waits on it). */
  finished: Promise<void> = Promise.resolve();

  forTenant(tenant: string): EmbeddingSmokeResult[] {
    return (this.results.get(tenant) ?? []).map((r) => ({ ...r }));
  }

  start(deps: { orm: MikroORM; config: AppConfig; log: Logger }): void {
    this.finished = this.run(deps).catch((err: unknown) =>
      deps.log.warn('embedding smoke test could not run', describeError(err)),
    );
  }

  private async run(deps: { orm: MikroORM; config: AppConfig; log: Logger }): Promise<void> {
    const em = deps.orm.em.fork();
    const rows: Array<{ tenant: string }> = await sql(
      em,
      `select distinct tenant from llm_providers where provider_kind = 'proxy' and admission = 'auto'`,
    );
    await Promise.all(
      rows.map(async ({ tenant }) => {
        const stored = await findProvider(em.fork(), tenant, 'proxy', '');
        if (!stored) return;
        const fields = openFields(stored, secretBox(deps.config));
        const model = embeddingModelOf('proxy', fields);
        if (!model) return;
        const result: EmbeddingSmokeResult = {
          provider: 'proxy',
          model,
          status: 'pending',
          message: 'The startup embedding smoke test is running.',
          started_at: new Date().toISOString(),
          finished_at: null,
        };
        this.results.set(tenant, [result]);
        const client = meteredClient(
          { kind: 'proxy', fields, egress: deps.config.egress, timeoutMs: EMBEDDING_SMOKE_TIMEOUT_MS },
          'proxy',
        );
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), EMBEDDING_SMOKE_TIMEOUT_MS)));
        try {
          const answer = await Promise.race([
            client.embed({ em: em.fork(), tenant, purpose: 'connection_test' }, ['embedding smoke test'], model),
            late,
          ]);
          if (answer === 'late') {
            result.status = 'failed';
            result.message = 'The embedding provider did not answer within 5 seconds.';
          } else {
            result.status = 'ok';
            result.message = 'The embedding provider answered.';
          }
        } catch (err) {
          result.status = 'failed';
          result.message =
            err instanceof LlmError ? err.failure.message : 'The embedding smoke test failed (see the log).';
          deps.log.warn('embedding smoke test failed', { tenant, model, ...describeError(err) });
        } finally {
          clearTimeout(timer);
          result.finished_at = new Date().toISOString();
        }
        if (result.status === 'failed' && result.message.includes('5 seconds'))
          deps.log.warn('embedding smoke test failed', { tenant, model, message: result.message });
      }),
    );
  }
}
