/**
 * The local embedding provider, the default when no embedding provider is configured: it needs no
 * network and is deterministic. It is NOT a semantic model. A text becomes a bag of stemmed word
 * tokens (lower-cased Unicode letters and digits, English stop words dropped, a light suffix-stripping
 * stemmer) plus the pairs of adjacent tokens; each feature is hashed (FNV-1a, 32 bit) into one of
 * `LOCAL_EMBEDDING_DIMENSIONS` buckets with a hashed sign, weighted 1 + ln(tf), and the vector is
 * L2-normalised. Cosine similarity between two such vectors measures shared (stemmed) vocabulary, so
 * "indexing documents" matches "index the document", but synonyms and paraphrases do not match.
 */
export const LOCAL_EMBEDDING_DIMENSIONS = 384;
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

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function localEmbed(text: string): number[] {
  const tf = new Map<string, number>();
  const toks = tokens(text);
  toks.forEach((t, i) => {
    tf.set(t, (tf.get(t) ?? 0) + 1);
    if (i > 0) {
      const pair = `${toks[i - 1]}_${t}`;
      tf.set(pair, (tf.get(pair) ?? 0) + 0.5);
    }
  });
  const v = new Array<number>(LOCAL_EMBEDDING_DIMENSIONS).fill(0);
  for (const [feature, n] of tf) {
    const h = fnv1a(feature);
    v[h % LOCAL_EMBEDDING_DIMENSIONS]! += (h & 0x80000000 ? -1 : 1) * (1 + Math.log(n));
  }
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return norm > 0 ? v.map((x) => x / norm) : v;
}
