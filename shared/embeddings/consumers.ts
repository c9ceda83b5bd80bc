import type { EntityManager } from '@mikro-orm/postgresql';

/** Which provider and model produced a vector. Vectors of two identities are not comparable. */
export interface EmbeddingIdentity {
  provider_kind: string;
  /** The vendor behind the multi-vendor `other` kind; '' otherwise. */
  sub_provider: string;
  model_name: string;
}

/** One stored text whose vector must be (re)computed. `key` orders items and is the batch cursor. */
export interface EmbeddingItem {
  key: string;
  text: string;
}

/**
 * Something that stores vectors (a document index, later the twin or harvester collections) and so
 * must be re-embedded when the embedding identity changes. The re-embedding workflow walks every
 * registered consumer in batches: `pending` answers items whose stored vector is not of `identity`,
 * in ascending `key` order after `afterKey`; `store` writes the new vectors (the full text stays as it
 * is: re-embedding never truncates a stored chunk). Both must be idempotent, since a batch may run
 * again after a worker dies.
 */
export interface EmbeddingConsumer {
  /** Stable name, shown in the progress (`consumers`). */
  name: string;
  count(em: EntityManager, tenant: string, identity: EmbeddingIdentity): Promise<number>;
  pending(
    em: EntityManager,
    tenant: string,
    identity: EmbeddingIdentity,
    page: { afterKey: string | null; limit: number },
  ): Promise<EmbeddingItem[]>;
  store(
    em: EntityManager,
    tenant: string,
    identity: EmbeddingIdentity,
    vectors: Array<{ key: string; vector: number[] }>,
  ): Promise<void>;
}

/** An explicit, ordered list of consumers; a name listed twice is a programming error. */
export class EmbeddingConsumerRegistry {
  private readonly byName = new Map<string, EmbeddingConsumer>();

  constructor(consumers: readonly EmbeddingConsumer[]) {
    for (const c of consumers) {
      if (this.byName.has(c.name)) throw new Error(`embedding consumer ${c.name} is listed twice`);
      this.byName.set(c.name, c);
    }
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  get(name: string): EmbeddingConsumer | undefined {
    return this.byName.get(name);
  }
}

export const sameIdentity = (a: EmbeddingIdentity, b: EmbeddingIdentity) =>
  a.provider_kind === b.provider_kind && a.sub_provider === b.sub_provider && a.model_name === b.model_name;
