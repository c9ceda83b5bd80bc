import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import type { EmbeddingIdentity } from '../embeddings/consumers.js';
import { resolveEmbeddings } from '../llm/active-provider.js';
import { LOCAL_EMBEDDING_IDENTITY, localEmbed } from './local-embedding.js';

/** Spec Limits: vector inserts (and embedding calls) in batches of 64. */
export const VECTOR_BATCH = 64;

/** `{provider}_{sanitized_model}_index`: the provider kind (with its sub-provider) and the model, lower-case `[a-z0-9_]`. */
export function collectionOf(identity: EmbeddingIdentity): string {
  const clean = (s: string) =>
    s
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '');
  const provider = clean(
    identity.sub_provider ? `${identity.provider_kind}_${identity.sub_provider}` : identity.provider_kind,
  );
  return `${provider}_${clean(identity.model_name)}_index`;
}

export interface Embedder {
  identity: EmbeddingIdentity;
  collection: string;
  /** Embeds whole texts in batches of 64; warnings name texts beyond the provider's input window. */
  embed(texts: string[]): Promise<{ vectors: number[][]; warnings: string[] }>;
  /**
   * `embed` done in this thread at once, without I/O (the local hashing embedder only; a provider's embedder
   * has none). An ingestion runs it while PostgreSQL writes the chunks' rows (`ingestDocuments`), as it can
   * neither fail on a provider nor wait on one while the index is locked.
   */
  embedNow?(texts: string[]): { vectors: number[][]; warnings: string[] };
}

/** The local hashing embedder (no provider configured). */
const localEmbedder = (): Embedder => {
  const embedNow = (texts: string[]) => ({ vectors: texts.map(localEmbed), warnings: [] });
  return {
    identity: LOCAL_EMBEDDING_IDENTITY,
    collection: collectionOf(LOCAL_EMBEDDING_IDENTITY),
    embed: (texts) => Promise.resolve(embedNow(texts)),
    embedNow,
  };
};

/** The tenant's embedding identity: the configured provider (OpenAI-compatible `/v1/embeddings` and the others), else the local hashing provider. */
export async function currentEmbedder(em: EntityManager, config: AppConfig, tenant: string): Promise<Embedder> {
  const target = await resolveEmbeddings(em, config, tenant);
  if (!target) return localEmbedder();
  const identity = { provider_kind: target.kind, sub_provider: target.subProvider, model_name: target.model };
  return {
    identity,
    collection: collectionOf(identity),
    async embed(texts) {
      const vectors: number[][] = [];
      const warnings: string[] = [];
      for (let i = 0; i < texts.length; i += VECTOR_BATCH) {
        const r = await target.embed(texts.slice(i, i + VECTOR_BATCH));
        if (r.windowWarning) warnings.push(r.windowWarning.message);
        vectors.push(...r.vectors);
      }
      return { vectors, warnings };
    },
  };
}

export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}
