import type { EmbeddingConsumer } from '../embeddings/consumers.js';
import { collectionOf } from './embedder.js';
import { sql } from './store.js';
import { encodeVector } from './vectors.js';

/**
 * Document indexes as an embedding consumer: after an embedding identity change, every chunk without a
 * vector in the new identity's collection is pending (its index shows `needs_reindex` until all are
 * done); the re-embedding workflow embeds the chunk's full text and stores the vector in that collection.
 * Vectors of the previous collection stay until the index is deleted or rechunked.
 */
export const documentIndexConsumer: EmbeddingConsumer = {
  name: 'document_indexes',
  async count(em, tenant, identity) {
    const rows = await sql<{ n: string }>(
      em,
      `select count(*) as n from doc_chunks c where c.tenant = ?
         and not exists (select 1 from doc_embeddings e where e.collection = ? and e.chunk_id = c.id)`,
      [tenant, collectionOf(identity)],
    );
    return Number(rows[0]!.n);
  },
  async pending(em, tenant, identity, page) {
    return sql<{ key: string; text: string }>(
      em,
      `select c.id::text as key, c.text from doc_chunks c where c.tenant = ?
         and not exists (select 1 from doc_embeddings e where e.collection = ? and e.chunk_id = c.id)
         and (?::uuid is null or c.id > ?::uuid) order by c.id limit ?`,
      [tenant, collectionOf(identity), page.afterKey, page.afterKey, page.limit],
    );
  },
  async store(em, tenant, identity, vectors) {
    const collection = collectionOf(identity);
    for (const v of vectors)
      await sql(
        em,
        `insert into doc_embeddings (collection, chunk_id, tenant, index_id, vec)
           select ?, c.id, c.tenant, c.index_id, ? from doc_chunks c where c.id = ?::uuid and c.tenant = ?
           on conflict (collection, chunk_id) do update set vec = excluded.vec`,
        [collection, encodeVector(v.vector), v.key, tenant],
      );
  },
};
