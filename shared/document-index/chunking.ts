// @workflow-safe: pure text splitting, no I/O.
/**
 * Chunking of document indexes (spec, "Document index"): sizes are in tokens of about 4 characters.
 *
 * - `sentence`: the sentence splitter. The text is cut into paragraphs (blank lines), then sentences
 *   (after `.`, `!`, `?` and their full-width forms, followed by white space or the end); a sentence
 *   longer than a chunk is cut at word boundaries, and a word longer than a chunk at characters.
 *   These units are packed greedily into chunks of at most `chunk_size` tokens; when a chunk closes,
 *   the next one starts with the trailing units of the previous one that fit in `chunk_overlap`
 *   tokens (whole units only, as the sentence splitters of retrieval libraries do), dropping overlap
 *   units from the front when the overlap plus the next unit would not fit.
 * - `one_chunk_per_doc`: the whole text is one chunk (`chunk_size` ignored).
 * - no chunk parameter anywhere (`null` config): the prior behaviour, paragraphs packed up to 1024
 *   tokens without overlap and without an explicit sentence splitter (a paragraph longer than that is
 *   cut at word boundaries).
 */

export const CHARS_PER_TOKEN = 4;
export const DEFAULT_CHUNK_SIZE = 1024;
export const DEFAULT_CHUNK_OVERLAP = 200;

export type ChunkStrategy = 'sentence' | 'one_chunk_per_doc';

export interface ChunkParams {
  chunk_size?: number | null;
  chunk_overlap?: number | null;
  chunk_strategy?: ChunkStrategy | null;
}

/** What an index or a call resolves to; all null = the prior behaviour. */
export interface ChunkConfig {
  chunk_size: number | null;
  chunk_overlap: number | null;
  chunk_strategy: ChunkStrategy | null;
}

export const NO_CHUNK_CONFIG: ChunkConfig = { chunk_size: null, chunk_overlap: null, chunk_strategy: null };

const given = (p: ChunkParams | null | undefined) =>
  !!p && (p.chunk_size != null || p.chunk_overlap != null || p.chunk_strategy != null);

/**
 * The effective configuration of a call: per-call values override the index's stored defaults; when
 * any parameter is given the strategy defaults to `sentence` with size 1024 and overlap 200. Returns
 * an error sentence when the overlap is negative or not below the size.
 */
export function resolveChunkConfig(
  indexDefaults: ChunkConfig | null,
  call: ChunkParams | null | undefined,
): { config: ChunkConfig } | { error: string } {
  if (!given(call) && !given(indexDefaults)) return { config: NO_CHUNK_CONFIG };
  const pick = <K extends keyof ChunkParams>(k: K) => (call?.[k] != null ? call[k] : (indexDefaults?.[k] ?? null));
  const strategy = (pick('chunk_strategy') as ChunkStrategy | null) ?? 'sentence';
  const size = (pick('chunk_size') as number | null) ?? DEFAULT_CHUNK_SIZE;
  const overlap = (pick('chunk_overlap') as number | null) ?? DEFAULT_CHUNK_OVERLAP;
  if (!Number.isInteger(size) || size < 1) return { error: `chunk_size must be a positive integer (got ${size}).` };
  if (!Number.isInteger(overlap) || overlap < 0)
    return { error: `chunk_overlap must be an integer >= 0 (got ${overlap}).` };
  if (strategy === 'sentence' && overlap >= size)
    return { error: `chunk_overlap (${overlap}) must be less than chunk_size (${size}).` };
  return { config: { chunk_size: size, chunk_overlap: overlap, chunk_strategy: strategy } };
}

/** Paragraphs, then sentences, each trimmed and non-empty. */
export function sentencesOf(text: string): string[] {
  const out: string[] = [];
  for (const para of text.split(/\n\s*\n/)) {
    const p = para.replace(/\s+/g, ' ').trim();
    if (!p) continue;
    for (const s of p.split(/(?<=[.!?\u3002\uFF01\uFF1F]["'\u201D\u2019)\]]*)\s+|(?<=[\u3002\uFF01\uFF1F])/u)) {
      const t = s.trim();
      if (t) out.push(t);
    }
  }
  return out;
}

/** Cuts a unit longer than `maxChars` at word boundaries (a longer word at characters). */
function cutLong(unit: string, maxChars: number): string[] {
  if (unit.length <= maxChars) return [unit];
  const pieces: string[] = [];
  let cur = '';
  for (const word of unit.split(' ')) {
    const chars = Array.from(word);
    if (chars.length > maxChars) {
      if (cur) pieces.push(cur);
      for (let i = 0; i < chars.length; i += maxChars) pieces.push(chars.slice(i, i + maxChars).join(''));
      // The last character slice may take following words.
      cur = pieces.pop()!;
      continue;
    }
    const next = cur ? `${cur} ${word}` : word;
    if (next.length > maxChars) {
      pieces.push(cur);
      cur = word;
    } else cur = next;
  }
  if (cur) pieces.push(cur);
  return pieces;
}

/** Greedy packing of units into chunks of at most `maxChars`, carrying up to `overlapChars` of whole trailing units. */
function pack(units: string[], maxChars: number, overlapChars: number): string[] {
  const chunks: string[] = [];
  let cur: string[] = [];
  let len = 0;
  const joined = (n: number, add: string) => (n === 0 ? add.length : n + 1 + add.length);
  for (const unit of units) {
    if (cur.length && joined(len, unit) > maxChars) {
      chunks.push(cur.join(' '));
      const keep: string[] = [];
      let kept = 0;
      for (let i = cur.length - 1; i >= 0; i--) {
        const l = joined(kept, cur[i]!);
        if (l > overlapChars) break;
        keep.unshift(cur[i]!);
        kept = l;
      }
      cur = keep;
      len = kept;
      while (cur.length && joined(len, unit) > maxChars) {
        cur.shift();
        len = cur.join(' ').length;
      }
    }
    cur.push(unit);
    len = joined(len, unit);
  }
  if (cur.length) chunks.push(cur.join(' '));
  return chunks;
}

/** The chunks of a text under a resolved configuration (an empty or blank text has none). */
export function chunkText(text: string, config: ChunkConfig): string[] {
  if (!text.trim()) return [];
  if (config.chunk_strategy === 'one_chunk_per_doc') return [text];
  if (config.chunk_strategy === 'sentence') {
    const maxChars = config.chunk_size! * CHARS_PER_TOKEN;
    const units = sentencesOf(text).flatMap((s) => cutLong(s, maxChars));
    return pack(units, maxChars, config.chunk_overlap! * CHARS_PER_TOKEN);
  }
  const maxChars = DEFAULT_CHUNK_SIZE * CHARS_PER_TOKEN;
  const paragraphs = text
    .split(/\n\s*\n/)
    .map((p) => p.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .flatMap((p) => cutLong(p, maxChars));
  return pack(paragraphs, maxChars, 0);
}
