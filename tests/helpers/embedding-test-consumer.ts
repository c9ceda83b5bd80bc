/**
 * A test-only embedding consumer: a small table of texts with the vector and the identity that made it,
 * registered in the worker a test starts (in process, or `TEST_EMBEDDING_CONSUMER=1` for
 * tests/helpers/worker-process.ts), so the re-embedding workflow really re-embeds through the fake model.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  EmbeddingConsumerRegistry,
  type EmbeddingConsumer,
  type EmbeddingIdentity,
} from '../../shared/embeddings/consumers.js';

export const TEST_EMBEDDING_TABLE_SQL = `create table if not exists test_embedding_items (
  tenant text not null, key text not null, text text not null, vector jsonb null, identity jsonb null,
  embed_count integer not null default 0, primary key (tenant, key))`;

const differs = 'identity is distinct from ?::jsonb';

export const testEmbeddingConsumer: EmbeddingConsumer = {
  name: 'test_texts',
  async count(em: EntityManager, tenant: string, identity: EmbeddingIdentity) {
    const rows: Array<{ n: string }> = await em
      .getConnection()
      .execute(`select count(*) as n from test_embedding_items where tenant = ? and ${differs}`, [
        tenant,
        JSON.stringify(identity),
      ]);
    return Number(rows[0]!.n);
  },
  async pending(em, tenant, identity, page) {
    return em.getConnection().execute(
      `select key, text from test_embedding_items where tenant = ? and ${differs} and (?::text is null or key > ?)
         order by key limit ?`,
      [tenant, JSON.stringify(identity), page.afterKey, page.afterKey, page.limit],
    );
  },
  async store(em, tenant, identity, vectors) {
    for (const v of vectors)
      await em.getConnection().execute(
        `update test_embedding_items set vector = ?::jsonb, identity = ?::jsonb, embed_count = embed_count + 1
             where tenant = ? and key = ?`,
        [JSON.stringify(v.vector), JSON.stringify(identity), tenant, v.key],
      );
  },
};

export const testEmbeddingConsumers = () => new EmbeddingConsumerRegistry([testEmbeddingConsumer]);
