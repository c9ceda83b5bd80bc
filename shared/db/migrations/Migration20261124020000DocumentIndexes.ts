import { Migration } from '@mikro-orm/migrations';

/**
 * Document indexes (issue 13). An index holds documents; a document holds its full text and its
 * chunks; a chunk's vectors live in `doc_embeddings` under the collection of the embedding identity
 * that made them (`{provider}_{sanitized_model}_index`), so vectors of two identities never mix and an
 * index whose chunks lack vectors in the current collection is stranded (`needs_reindex`). Lexical
 * search uses the stored `tsvector` of each chunk through a GIN index. `state` `building` marks the
 * temporary index of a rechunk, invisible to every action until the swap. `managed_source_id` marks
 * Git-backed knowledge-base documents (written only by managed-source hydration).
 */
export class Migration20261124020000DocumentIndexes extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table doc_indexes (
      id uuid primary key,
      tenant text not null,
      name text not null,
      state text not null default 'active' check (state in ('active', 'building')),
      chunk_size integer null,
      chunk_overlap integer null,
      chunk_strategy text null check (chunk_strategy in ('sentence', 'one_chunk_per_doc')),
      managed_source_id text null,
      created_at timestamptz not null default now(),
      unique (tenant, name)
    )`);
    this.addSql(`create table doc_documents (
      id uuid primary key,
      tenant text not null,
      index_id uuid not null references doc_indexes (id) on delete cascade,
      path text not null,
      kind text not null check (kind in ('file', 'text')),
      content text not null,
      content_hash text not null,
      metadata jsonb not null default '{}',
      chunk_count integer not null default 0,
      managed_source_id text null,
      created_at timestamptz not null default now(),
      unique (index_id, path)
    )`);
    this.addSql(`create table doc_chunks (
      id uuid primary key,
      tenant text not null,
      index_id uuid not null references doc_indexes (id) on delete cascade,
      document_id uuid not null references doc_documents (id) on delete cascade,
      seq integer not null,
      text text not null,
      tsv tsvector generated always as (to_tsvector('english', text)) stored,
      unique (document_id, seq)
    )`);
    this.addSql('create index doc_chunks_tsv on doc_chunks using gin (tsv)');
    this.addSql('create index doc_chunks_index on doc_chunks (index_id, id)');
    this.addSql('create index doc_chunks_tenant on doc_chunks (tenant, id)');
    this.addSql(`create table doc_embeddings (
      collection text not null,
      chunk_id uuid not null references doc_chunks (id) on delete cascade,
      tenant text not null,
      index_id uuid not null,
      vector real[] not null,
      primary key (collection, chunk_id)
    )`);
    this.addSql('create index doc_embeddings_index on doc_embeddings (collection, index_id)');
    this.addSql('create index doc_embeddings_chunk on doc_embeddings (chunk_id)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists doc_embeddings');
    this.addSql('drop table if exists doc_chunks');
    this.addSql('drop table if exists doc_documents');
    this.addSql('drop table if exists doc_indexes');
  }
}
