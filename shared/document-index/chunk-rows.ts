/**
 * What SEARCH answers about a chunk besides its ranks (its position in the document, its text, its
 * document's id and path), kept beside an index's cached vectors (`VectorSet.chunks`) so the exact path's
 * search needs no statement after the vector scan: its one statement (the lexical ranking and the changes
 * since the cached generation) is sent before the scan and runs while the scan does.
 *
 * A chunk's position, text and document never change (a re-ingested document gets new chunks); its
 * document's path does (RENAME_DOCUMENT), and a rename marks the document's chunks changed in the vector
 * log, so the path arrives with the other changes. Paths are kept once per document.
 */
export interface ChunkRow {
  seq: number;
  text: string;
  documentId: string;
}

/** A changed or loaded chunk's row as the statements read it. */
export interface ChunkRowInput extends ChunkRow {
  path: string;
}

/** A document's path and the number of the set's chunks in it, shared by those chunks' rows. */
interface DocumentEntry {
  path: string;
  chunks: number;
}

/** A stored row: its document's entry held directly, so reading a row is one map lookup. */
export interface StoredChunkRow extends ChunkRow {
  readonly document: { readonly path: string };
}

/** Bytes a row costs besides its text: the row object, its map entry and its id (an estimate). */
const ROW_OVERHEAD = 168;

export class ChunkRows {
  private readonly rows = new Map<string, ChunkRow & { document: DocumentEntry }>();
  /** Document id to its path and the number of this set's chunks in it. */
  private readonly documents = new Map<string, DocumentEntry>();
  private textBytes = 0;

  get size(): number {
    return this.rows.size;
  }

  /** An estimate of the memory held: the texts (one byte a character for Latin-1, two otherwise) and per row and document. */
  get bytes(): number {
    return this.textBytes + this.rows.size * ROW_OVERHEAD + this.documents.size * ROW_OVERHEAD;
  }

  /**
   * The stored row itself (read only; its document's current path in `document.path`), not a copy: a random
   * read of a large set's maps costs about a microsecond in cache misses, so SEARCH makes one lookup a row
   * and builds the one object it needs from it.
   */
  get(chunkId: string): StoredChunkRow | undefined {
    return this.rows.get(chunkId);
  }

  set(chunkId: string, input: ChunkRowInput): void {
    this.delete(chunkId);
    let document = this.documents.get(input.documentId);
    if (document) {
      document.path = input.path; // a rename arrives as a change of each of the document's chunks
      document.chunks++;
    } else this.documents.set(input.documentId, (document = { path: input.path, chunks: 1 }));
    this.rows.set(chunkId, { seq: input.seq, text: input.text, documentId: input.documentId, document });
    this.textBytes += textBytes(input.text);
  }

  delete(chunkId: string): void {
    const row = this.rows.get(chunkId);
    if (!row) return;
    this.rows.delete(chunkId);
    this.textBytes -= textBytes(row.text);
    if (--row.document.chunks === 0) this.documents.delete(row.documentId);
  }
}

/** V8 keeps a string of Latin-1 characters at one byte each, others at two. */
function textBytes(text: string): number {
  // eslint-disable-next-line no-control-regex
  return /^[\u0000-\u00ff]*$/.test(text) ? text.length : text.length * 2;
}
