/**
 * The local embedding provider, the default when no embedding provider is configured: it needs no
 * network and is deterministic. It is NOT a semantic model. A text becomes a bag of stemmed word
 * tokens (lower-cased Unicode letters and digits, English stop words dropped, a light suffix-stripping
 * stemmer) plus the pairs of adjacent tokens; each feature is hashed (FNV-1a, 32 bit) into one of
 * `LOCAL_EMBEDDING_DIMENSIONS` buckets with a hashed sign, weighted 1 + ln(tf), and the vector is
 * L2-normalised. Cosine similarity between two such vectors measures shared (stemmed) vocabulary, so
 * "indexing documents" matches "index the document", but synonyms and paraphrases do not match.
 *
 * 1,536 buckets (issue 32; `hashing-384-v1` before, converted by `Migration20261130010000LocalHashing1536`):
 * a chunk of a few dozen words fills about 4% of them, so a query word's posting list in the exact scan
 * holds a quarter of the chunks it held at 384, and fewer unrelated features share a bucket (the vector
 * ranking's recall@10 / MRR on the benchmark's labelled corpus: 0.90 / 0.749 at 384, 1.00 / 1.000 here).
 * Stored sparse (`encodeVector`): about 70 entries of 6 bytes, smaller than 384 dense floats were.
 */
export const LOCAL_EMBEDDING_DIMENSIONS = 1536;
export const LOCAL_EMBEDDING_IDENTITY = {
  provider_kind: 'local',
  sub_provider: '',
  model_name: `hashing-${LOCAL_EMBEDDING_DIMENSIONS}-v1`,
};

const STOP = new Set(
  (
    'a an and are as at be been but by for from has have he her his i if in into is it its me my no not of on or ' +
    'our she so than that the their them then there these they this those to was we were what when where which ' +
    'who why will with you your do does did can could should would shall may might must'
  ).split(' '),
);

/** A small suffix-stripping stemmer (a subset of Porter's steps): enough to fold plurals and verb forms. */
export function stem(word: string): string {
  let w = word;
  if (w.length <= 3) return w;
  if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('ies')) w = w.slice(0, -3) + 'y';
  else if (w.endsWith('s') && !w.endsWith('ss') && !w.endsWith('us')) w = w.slice(0, -1);
  for (const [suffix, repl] of [
    ['ational', 'ate'],
    ['ization', 'ize'],
    ['fulness', 'ful'],
    ['iveness', 'ive'],
    ['ation', 'ate'],
    ['ement', ''],
    ['ments', ''],
    ['ment', ''],
    ['ness', ''],
    ['ing', ''],
    ['edly', ''],
    ['ed', ''],
    ['ly', ''],
  ] as const) {
    if (w.endsWith(suffix) && w.length - suffix.length >= 3) {
      w = w.slice(0, -suffix.length) + repl;
      break;
    }
  }
  if (/([^aeiouslz])\1$/.test(w)) w = w.slice(0, -1);
  if (w.length > 3 && w.endsWith('e')) w = w.slice(0, -1);
  return w;
}

export function tokens(text: string): string[] {
  const out: string[] = [];
  for (const m of text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) {
    const t = m[0];
    if (STOP.has(t)) continue;
    out.push(stem(t));
  }
  return out;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a (32 bit) of `s`, continuing from state `h` (the offset basis for a fresh hash). */
function fnv1a(s: string, h = FNV_OFFSET): number {
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h >>> 0;
}

/** A word as the embedding sees it: a stop word, or its stem, the stem's hash and an id naming the stem. */
interface Word {
  stop: boolean;
  stem: string;
  hash: number;
  id: number;
}

/** Words seen so far (lower-cased), so a corpus's recurring words are stemmed and hashed once; bounded. */
const words = new Map<string, Word>();
const stems = new Map<string, number>();
const WORD_CACHE_LIMIT = 200_000;
/** A stem's id is below 2^26, so a pair of them is one number in [2^52, 2^53) (a feature key without a string). */
const PAIR_KEY = 2 ** 26;

function wordOf(lower: string): Word {
  let w = words.get(lower);
  if (w) return w;
  if (STOP.has(lower)) w = { stop: true, stem: lower, hash: 0, id: -1 };
  else {
    const st = stem(lower);
    let id = stems.get(st);
    if (id === undefined) stems.set(st, (id = stems.size));
    w = { stop: false, stem: st, hash: fnv1a(st), id };
  }
  words.set(lower, w);
  return w;
}

/** The text's non-stop words in order: ASCII text scanned by character codes, other text as `tokens` does. */
function wordsOf(text: string): Word[] {
  const out: Word[] = [];
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 32;
    if (c >= 128) return slowWordsOf(text);
    const inWord = (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || (c >= 65 && c <= 90);
    if (inWord) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      const w = wordOf(text.slice(start, i).toLowerCase());
      if (!w.stop) out.push(w);
      start = -1;
    }
  }
  return out;
}

function slowWordsOf(text: string): Word[] {
  const out: Word[] = [];
  for (const m of text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)) {
    const w = wordOf(m[0]);
    if (!w.stop) out.push(w);
  }
  return out;
}

/**
 * The embedding of one text. Features are the stemmed tokens and the pairs of adjacent ones (`a_b`, weight
 * 0.5 each occurrence), added into the buckets in the order each feature first occurs (so the float sums
 * are the same as summing over a map of feature strings); keys are numbers made from stem ids and a pair's
 * hash continues the first stem's FNV state, so no feature string is built.
 */
export function localEmbed(text: string): number[] {
  return localEmbedAt(text, LOCAL_EMBEDDING_DIMENSIONS);
}

/** `localEmbed` into `dimensions` buckets (the migration between widths embeds at both). */
export function localEmbedAt(text: string, dimensions: number): number[] {
  // Emptied between texts only: the ids of one text's words must come from one cache.
  if (words.size >= WORD_CACHE_LIMIT || stems.size >= PAIR_KEY / 2) {
    words.clear();
    stems.clear();
  }
  const toks = wordsOf(text);
  const slot = new Map<number, number>();
  const hashes: number[] = [];
  const counts: number[] = [];
  const add = (key: number, weight: number, hash: () => number) => {
    const k = slot.get(key);
    if (k !== undefined) counts[k]! += weight;
    else {
      slot.set(key, hashes.length);
      hashes.push(hash());
      counts.push(weight);
    }
  };
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    add(t.id, 1, () => t.hash);
    if (i > 0) {
      const p = toks[i - 1]!;
      // fnv1a(`${p.stem}_${t.stem}`): the state after p's stem, then '_' (95), then t's stem.
      add(PAIR_KEY * (PAIR_KEY + p.id) + t.id, 0.5, () => fnv1a(t.stem, Math.imul(p.hash ^ 95, FNV_PRIME)));
    }
  }
  const v = new Array<number>(dimensions).fill(0);
  for (let k = 0; k < hashes.length; k++) {
    const h = hashes[k]!;
    v[h % dimensions]! += (h & 0x80000000 ? -1 : 1) * (1 + Math.log(counts[k]!));
  }
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] = v[i]! / norm;
  return v;
}
