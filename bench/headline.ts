/**
 * Issue 32's snippet benchmark: `headline()` (SEARCH's snippet written in the API process) on chunks of the
 * repository's docs, with its memos cold (cleared, the code already compiled), on new chunks of known words (the
 * texts' memo cleared, the words' kept) and on chunks seen before, beside PostgreSQL's own `ts_headline` for the
 * same chunks and queries (one statement over all of them, so its time is the server's work, not round trips).
 * Chunks of 40 words (the search benchmark's size) and of 600 words (about 4,000 characters: an index created
 * without chunk parameters), each for a query of common words and one of rarer words, whose first match lies
 * further in. Knobs: `BENCH_HEADLINE_CHUNKS` (default 500), `BENCH_HEADLINE_ROUNDS` (default 20, warm passes),
 * `BENCH_HEADLINE_WORDS` (default `40,600`). Goal: a search's 10 snippets well under 0.1 ms on known words.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { headline, resetHeadlineMemos, tsqueryLexemes } from '../shared/document-index/headline.js';

const CHUNKS = Number(process.env.BENCH_HEADLINE_CHUNKS ?? 500);
const ROUNDS = Number(process.env.BENCH_HEADLINE_ROUNDS ?? 20);
const WORDS = (process.env.BENCH_HEADLINE_WORDS ?? '40,600').split(',').map(Number);
/** Words in most chunks, and words in about one 600-word chunk in two (the docs hold about 50 of each). */
const QUERIES = ['index | search | snippet', 'oauth | ticket'];

/** `size`-word pieces of the docs as written, `count` of them (cycling when the docs are shorter). */
function chunks(count: number, size: number): string[] {
  const root = path.resolve(import.meta.dirname, '..');
  const files = ['README.md', ...readdirSync(path.join(root, 'docs')).map((f) => path.join('docs', f))];
  const text = files
    .filter((f) => f.endsWith('.md'))
    .map((f) => readFileSync(path.join(root, f), 'utf8'))
    .join('\n\n');
  const bounds = [...text.matchAll(/\S+/g)].map((m) => [m.index, m.index + m[0].length] as const);
  const out: string[] = [];
  for (let w = 0; out.length < count; w = (w + size) % Math.max(1, bounds.length - size))
    out.push(text.slice(bounds[w]![0], bounds[w + size - 1]![1]));
  return out;
}

/** Microseconds per headline over `texts`, `rounds` passes (`fresh`: the texts' memo emptied before each). */
function perHeadline(texts: readonly string[], lexemes: ReadonlySet<string>, rounds: number, fresh = false): number {
  let total = 0;
  for (let r = 0; r < rounds; r++) {
    if (fresh) resetHeadlineMemos('texts');
    const start = performance.now();
    for (const t of texts) headline(t, lexemes);
    total += performance.now() - start;
  }
  return (total * 1000) / (texts.length * rounds);
}

export async function benchHeadline(databaseUrl: string): Promise<string> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const out: string[] = [];
    for (const size of WORDS) for (const query of QUERIES) out.push(await snippets(db, size, query));
    return out.join('\n');
  } finally {
    await db.end();
  }
}

/** The figures for chunks of `size` words and one query. */
async function snippets(db: pg.Client, size: number, query: string): Promise<string> {
  const texts = chunks(CHUNKS, size);
  const { rows } = await db.query<{ q: string }>(`select to_tsquery('english', $1)::text as q`, [query]);
  const lexemes = tsqueryLexemes(rows[0]!.q);
  // Compile first (other text), then clear the memos: "cold" is new vocabulary, not a cold JIT.
  perHeadline(chunks(CHUNKS * 2, size).slice(CHUNKS), lexemes, 3);
  resetHeadlineMemos();
  const cold = perHeadline(texts, lexemes, 1);
  const known = perHeadline(texts, lexemes, ROUNDS, true);
  const again = perHeadline(texts, lexemes, ROUNDS);
  const started = performance.now();
  await db.query(
    `select sum(length(ts_headline('english', t, to_tsquery('english', $2), 'MaxWords=40, MinWords=15, MaxFragments=1')))
       from unnest($1::text[]) as t`,
    [texts, query],
  );
  const postgres = ((performance.now() - started) * 1000) / texts.length;
  const us = (x: number) => `${x.toFixed(1)} µs`;
  const chars = Math.round(texts.reduce((n, t) => n + t.length, 0) / texts.length);
  return [
    `## Search snippets (headline, ${texts.length} chunks of ${size} words, ${chars} characters on average, query '${query}')`,
    '',
    "| | per snippet | a search's 10 snippets |",
    '|-|-|-|',
    `| headline(), memos cold (new words, new chunks) | ${us(cold)} | ${us(cold * 10)} |`,
    `| headline(), new chunks of known words | ${us(known)} | ${us(known * 10)} (goal: well under 100 µs) |`,
    `| headline(), chunks seen before | ${us(again)} | ${us(again * 10)} |`,
    `| PostgreSQL ts_headline (one statement) | ${us(postgres)} | ${us(postgres * 10)} |`,
    '',
    `New chunks of known words / ts_headline: ${(known / postgres).toFixed(2)}x; chunks seen before / ts_headline: ${(
      again / postgres
    ).toFixed(2)}x; cold / known words: ${(cold / known).toFixed(1)}x.`,
    '',
  ].join('\n');
}
