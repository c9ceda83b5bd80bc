import { Migration } from '@mikro-orm/migrations';

/**
 * Search at scale (issue 32): the chunks changed in an index since a cached generation, as SEARCH's statement
 * reads them for an API process whose cached vectors are behind (`lexicalAndChanges` in
 * `shared/document-index/search.ts`), in a function the statement calls only when the index's generation
 * moved. Written inline, that read was a subplan of every SEARCH (three joined tables and the log's index),
 * which PostgreSQL sets up at each execution even when it does not run it: about 40 µs of a 100k-chunk
 * index's 481 µs statement. `stable`, so it reads the calling statement's snapshot (the generation it is
 * given and the log rows up to it are the same snapshot's); `parallel restricted`, so a statement calling it
 * may still have a parallel plan (the function itself runs in the leader).
 *
 * Each changed chunk: [chunk id, [base64 vector, position, text, document id, document path] or null when
 * its vector is gone], at most `p_limit` chunks (the caller asks one more than it takes).
 */
export const DOC_VECTOR_CHANGES = `create or replace function doc_vector_changes(
    p_index uuid, p_collection text, p_from bigint, p_to bigint, p_limit int)
  returns json language plpgsql stable parallel restricted as $$
  begin
    return (select json_agg(json_build_array(l.chunk_id,
        (select json_build_array(encode(e.vec, 'base64'), c.seq, c.text, c.document_id, d.path)
           from doc_embeddings e join doc_chunks c on c.id = e.chunk_id join doc_documents d on d.id = c.document_id
           where e.collection = p_collection and e.chunk_id = l.chunk_id)))
      from (select distinct chunk_id from doc_vector_log
            where index_id = p_index and collection = p_collection and gen > p_from and gen <= p_to
            limit p_limit) l);
  end $$`;

export class Migration20261130020000DocVectorChanges extends Migration {
  override async up(): Promise<void> {
    this.addSql(DOC_VECTOR_CHANGES);
  }

  override async down(): Promise<void> {
    this.addSql('drop function if exists doc_vector_changes(uuid, text, bigint, bigint, int)');
  }
}
