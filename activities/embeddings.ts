import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../shared/config.js';
import type { EmbeddingConsumerRegistry, EmbeddingIdentity } from '../shared/embeddings/consumers.js';
import {
  beginReindex,
  finishReindex,
  reindexBatch,
  reindexConsumerDone,
  type ReindexBatchResult,
} from '../shared/embeddings/reindex.js';
import { withHeartbeat } from './heartbeat.js';

/** The re-embedding workflow's steps (shared/embeddings/reindex.ts); each is idempotent. */
export function createEmbeddingActivities(deps: {
  orm: MikroORM;
  config: AppConfig;
  embeddingConsumers: EmbeddingConsumerRegistry;
}) {
  return {
    beginEmbeddingReindex(input: {
      tenant: string;
      runId: string;
      identity: EmbeddingIdentity;
      previous: EmbeddingIdentity | null;
    }): Promise<{ status: 'running' | 'superseded'; consumers: string[] }> {
      return beginReindex(deps.orm.em.fork(), deps.embeddingConsumers, input);
    },
    /** One batch: the embedding call can be slow, so it heartbeats (a dead worker is noticed within the heartbeat timeout). */
    reembedBatch(input: {
      tenant: string;
      runId: string;
      identity: EmbeddingIdentity;
      consumer: string;
      afterKey: string | null;
      batchSize: number;
    }): Promise<ReindexBatchResult> {
      return withHeartbeat(2_000, () => reindexBatch(deps.orm.em.fork(), deps.config, deps.embeddingConsumers, input));
    },
    embeddingConsumerDone(input: { tenant: string; runId: string; consumersDone: number }): Promise<void> {
      return reindexConsumerDone(deps.orm.em.fork(), input);
    },
    finishEmbeddingReindex(input: {
      tenant: string;
      runId: string;
      status: 'completed' | 'failed' | 'superseded';
      error?: string;
    }): Promise<void> {
      return finishReindex(deps.orm.em.fork(), input);
    },
  };
}

export type EmbeddingActivities = ReturnType<typeof createEmbeddingActivities>;
