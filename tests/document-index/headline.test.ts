/**
 * The search snippet writer against the real PostgreSQL the tests start: `englishStem` against
 * `ts_lexize('english_stem', w)`, `parseTokens` against `ts_parse('default', t)`, and `headline` against
 * `ts_headline('english', chunk, q, 'MaxWords=40, MinWords=15, MaxFragments=1')`, string for string,
 * over the repository's own README.md and docs (copied from nowhere else).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  ENGLISH_STOP_WORDS,
  englishStem,
  guessQueryLexemes,
  headline,
  headlineOfWholeText,
  parseTokens,
  QueryLexemes,
  readingStartOf,
  resetHeadlineMemos,
  sameLexemes,
  tsqueryLexemes,
} from '../../shared/document-index/headline.js';
import { TokenStream } from '../../shared/document-index/ts-parser.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DOCS = [
  path.join(ROOT, 'README.md'),
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join(ROOT, 'docs', f)),
];
const TEXT = DOCS.map((f) => readFileSync(f, 'utf8')).join('\n\n');
const OPTIONS = 'MaxWords=40, MinWords=15, MaxFragments=1';

/** Words the Porter2 description singles out (exceptional forms, R1 prefixes, Step 1 corner cases). */
const HARD_CASES = [
  ...['generously', 'generate', 'generation', 'general', 'communism', 'communication', 'arsenal', 'arsenic'],
  ...['skies', 'skis', 'sky', 'dying', 'lying', 'tying', 'news', 'innings', 'inning', 'outing', 'canning'],
  ...['herring', 'earring', 'proceed', 'exceed', 'succeed', 'proceeding', 'cried', 'cries', 'ties', 'tied'],
  ...['hopping', 'hoping', 'hop', 'hope', 'agreed', 'feed', 'feeds', 'luxuriating', 'idly', 'gently', 'ugly'],
  ...['early', 'only', 'singly', 'howe', 'atlas', 'cosmos', 'bias', 'andes', 'gas', 'gaps', 'kiwis', 'bus'],
  ...['classes', 'says', 'sayyid', 'youth', 'yelling', 'enjoying', 'eyes', 'adding', 'eggs', 'fizzed'],
  ...['controlling', 'happily', 'conditional', 'rational', 'digitizer', 'vietnamization', 'hopefulness'],
  ...['callousness', 'sensibiliti', 'triplicate', 'formative', 'electrical', 'goodness', 'allowance'],
  ...['replacement', 'adjustment', 'dependent', 'adoption', 'effective', 'bowdlerize', 'apologi', 'ogi'],
  ...['analogousli', 'fluently', 'naïve', 'café', 'résumé', 'ab', 'a1b2', 'xyz'],
];
/** Strings that walk the parser's rarer states: numbers, versions, hosts, URLs, paths, tags, entities. */
const PARSER_CASES = [
  '-1.2.3 x',
  '1.2.3.4',
  '3.5e4 -7e-2 +12',
  'a<script>x y</script>b <br/> <!-- c --> <?xml v?>',
  "<a href='x\\'y'>z</a>",
  'http://a.com:80/b?c=1 x https://example.org/p/q.html',
  'me@example.com user_1@host-2.org',
  'state-of-the-art re-index-2 foo--bar -x',
  '&#x41; &amp; &#65; &bad',
  '~/x/y.z ../a/b ./a /usr/bin v1.2.3 abc_def a.b.c 1_000',
  'café—naïve µs ⁶ x² — → … ≤',
];

let db: pg.Client;
beforeAll(async () => {
  db = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await db.connect();
});
afterAll(async () => {
  await db.end();
});

/** A seeded generator of numbers in [0, 1) (mulberry32, as the benchmark's corpus uses). */
function seeded(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The text's distinct words (letters and digits), lower-cased, as SEARCH splits a query. */
const wordsOf = (text: string) => [...new Set([...text.matchAll(/[\p{L}\p{N}]+/gu)].map((m) => m[0].toLowerCase()))];

/** Pieces of `size` whitespace-separated words, cut from the text as written (line breaks and markup kept). */
function chunks(size: number, step: number): string[] {
  const bounds = [...TEXT.matchAll(/\S+/g)].map((m) => [m.index, m.index + m[0].length] as const);
  const out: string[] = [];
  for (let w = 0; w + size <= bounds.length; w += step) out.push(TEXT.slice(bounds[w]![0], bounds[w + size - 1]![1]));
  return out;
}

describe('englishStem', () => {
  it('gives what english_stem gives for every word of the docs PostgreSQL stems, and the hard cases', async () => {
    const vocabulary = [...new Set([...wordsOf(TEXT), ...HARD_CASES])];
    const { rows } = await db.query<{ w: string; l: string[] | null }>(
      `select w, ts_lexize('english_stem', w) as l from unnest($1::text[]) as w`,
      [vocabulary],
    );
    const stemmed = rows.filter((r) => r.l && r.l.length > 0);
    const differ = stemmed
      .filter((r) => englishStem(r.w) !== r.l![0])
      .map((r) => `${r.w}: ${r.l![0]} != ${englishStem(r.w)}`);
    expect(differ).toEqual([]);
    // The snippet of a text seen once lexizes only the words whose first letter starts a query lexeme.
    expect(stemmed.filter((r) => r.l![0]!.codePointAt(0) !== r.w.toLowerCase().codePointAt(0))).toEqual([]);
    // Several thousand compared; the rest are the 127 stop words (no lexeme) the docs use.
    expect(stemmed.length).toBeGreaterThan(3000);
    expect(rows.filter((r) => r.l?.length === 0).every((r) => ENGLISH_STOP_WORDS.has(r.w))).toBe(true);
    console.info(
      `englishStem: ${stemmed.length} words compared with ts_lexize, ${rows.length - stemmed.length} stop words`,
    );
    expect(
      ['generously', 'communism', 'arsenal', 'skies', 'dying', 'news', 'innings', 'hoping', 'luxuriating'].map(
        englishStem,
      ),
    ).toEqual(['generous', 'communism', 'arsenal', 'sky', 'die', 'news', 'inning', 'hope', 'luxuri']);
  });
});

describe('parseTokens', () => {
  it('reads the docs and the rarer token kinds as ts_parse does', async () => {
    const texts = [...TEXT.split(/\n\n+/), ...PARSER_CASES];
    const { rows } = await db.query<{ ord: string; toks: [number, string][] | null }>(
      `select t.ord, (select json_agg(json_build_array(tokid, token)) from ts_parse('default', t.x)) as toks
         from unnest($1::text[]) with ordinality as t(x, ord)`,
      [texts],
    );
    const differ = rows.filter((r) => {
      const mine = parseTokens(texts[Number(r.ord) - 1]!).map((t) => [t.type, t.text]);
      return JSON.stringify(mine) !== JSON.stringify(r.toks ?? []);
    });
    expect(differ.map((r) => texts[Number(r.ord) - 1])).toEqual([]);
  });
});

describe('TokenStream', () => {
  // The two facts `headline` relies on to read a long text from shortly before its first possible match.
  const PIECES = [
    ...['abc', 'Xyz', 'e', 'de', '12', '3.14', '1,000', '1.2.3', '1e5', '-5', '+3', 'v1.2', '1.2abc', '2nd', 'a1b2'],
    ...['www.', '.com', '.org', '@', 'me@host.org', 'a.b.c', 'ex.com/run', 'foo-bar', 'e-mail', 'x_y', '_a', '-a'],
    ...['/usr/bin', './a', '../b', '~user', '?q=1', '#frag', '&amp;', '&#x41;', '&', '&a', '&#', 'http://a.com/b c'],
    ...['https://', 'ftp://', 'http:/', 'mailto:', ':/', '//', '.a', '/a', 'a.', '1a', '9.a', 'é', 'ß', 'Ω', '×', '—'],
    ...['ﬁ', 'naïve', '\u00a0', '٣', '\u212a', ' ', '  ', '\n', '\t', '-', '.', '/', ':', "'", '"', '(', ')', '|'],
  ];
  const TAGS = ['<b>', '</b>', '<a href="x y">', '<!-- c d -->', '<script>', '</script>', '<style>', '<p class=a b>'];
  const tokens = (text: string, start = 0) => {
    const stream = new TokenStream(text);
    if (start) stream.seek(start);
    const out: string[] = [];
    while (stream.next()) out.push(`${stream.type}@${stream.from}-${stream.to}`);
    return out;
  };
  const letter = (c: number) => /[A-Za-z]/.test(String.fromCharCode(c));

  it('never begins a token with a letter or digit right after an ASCII letter, tags and URLs included', () => {
    const next = seeded(11);
    let read = 0;
    for (let n = 0; n < 4000; n++) {
      const pieces = [...PIECES, ...TAGS];
      let text = '';
      for (let i = 5 + Math.floor(next() * 60); i > 0; i--) text += pieces[Math.floor(next() * pieces.length)];
      const stream = new TokenStream(text);
      while (stream.next()) {
        read++;
        const [c, before] = [text.charCodeAt(stream.from), stream.from ? text.charCodeAt(stream.from - 1) : 0];
        if (/[A-Za-z0-9]/.test(String.fromCharCode(c)) && letter(before))
          expect.fail(`token at ${stream.from} of ${JSON.stringify(text)} begins after a letter`);
      }
    }
    expect(read).toBeGreaterThan(100_000);
  });

  it('reads from an ASCII letter after a blank as from the start, when no tag comes before it', () => {
    const next = seeded(12);
    let compared = 0;
    for (let n = 0; n < 6000; n++) {
      let text = '';
      for (let i = 5 + Math.floor(next() * 60); i > 0; i--) text += PIECES[Math.floor(next() * PIECES.length)];
      if (next() < 0.3) text += TAGS[Math.floor(next() * TAGS.length)] + text; // a tag past the starts tried
      const whole = tokens(text);
      const firstTag = text.indexOf('<');
      for (let start = 1; start < text.length && (firstTag < 0 || start < firstTag); start++) {
        if (!/\s/.test(text[start - 1]!) || !letter(text.charCodeAt(start))) continue;
        const fromHere = whole.filter((t) => Number(t.split('@')[1]!.split('-')[0]) >= start);
        expect(tokens(text, start), `${JSON.stringify(text)} from ${start}`).toEqual(fromHere);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(6_000);
  });

  it('reads a tag spanning a blank as one token: a reading must not start inside it', () => {
    const text = 'x <a href="x y"> b';
    expect(tokens(text)).toEqual(['1@0-1', '12@1-2', '13@2-16', '12@16-17', '1@17-18']);
    expect(tokens(text, 14)).not.toEqual(['1@14-15', '12@16-17', '1@17-18']);
  });
});

describe('englishStem and the snippet reader', () => {
  it("keeps a word's first two letters in a stem of three or more, and all but its last, but for the exceptions the reader knows", () => {
    // The snippet reader lexizes only the tokens whose first two letters begin a query lexeme (or a word an
    // exception stems to it): every other word must stem to something else. Random words with the suffixes
    // the steps rewrite, and the hard cases.
    const next = seeded(7);
    const suffixes = ['', 's', 'es', 'ies', 'ied', 'ing', 'ed', 'eed', 'edly', 'ingly', 'ly', 'y', 'e', 'ational'];
    suffixes.push(...['izer', 'ization', 'ation', 'fulness', 'ousness', 'ical', 'ement', 'ment', 'ance', 'ence']);
    suffixes.push(...['able', 'ible', 'ism', 'ate', 'iti', 'ous', 'ive', 'ize', 'ion', 'al', 'er', 'll', "'s", 'sses']);
    suffixes.push(
      ...['biliti', 'bli', 'alli', 'entli', 'eli', 'ousli', 'ogi', 'li', 'iciti', 'ative', 'alize', 'icate'],
    );
    suffixes.push(
      ...['ful', 'ness', 'ant', 'ent', 'eedly', 'at', 'bl', 'iz', 'ying', 'ys', 'yed', 'us', 'ss', 'i', 'ie'],
    );
    const words = [...HARD_CASES, 'dying', 'lying', 'tying', 'aing', 'aed', 'ies', 'yes', 'yelling', 'using', 'cry'];
    for (let i = 0; i < 200_000; i++) {
      let w = '';
      for (let j = 1 + Math.floor(next() * 6); j > 0; j--)
        w += next() < 0.4 ? 'aeiouy'[Math.floor(next() * 6)] : 'abcdefghijklmnopqrstuvwxyz'[Math.floor(next() * 26)];
      words.push(w + suffixes[Math.floor(next() * suffixes.length)]);
    }
    const broken = words.filter((w) => {
      const stem = englishStem(w.toLowerCase());
      return stem.length >= 3 && !w.toLowerCase().startsWith(stem.slice(0, 2));
    });
    expect([...new Set(broken)].sort()).toEqual(['dying', 'lying', 'tying']);
    // Nor more than the stem's last letter, and never a stem's only letter (`Candidates.wordBegins`): happy, happi;
    // using, use.
    const rewritten = words.filter((w) => {
      const stem = englishStem(w.toLowerCase());
      return !w.toLowerCase().startsWith(stem.length > 1 ? stem.slice(0, -1) : stem);
    });
    expect([...new Set(rewritten)].sort()).toEqual(['dying', 'lying', 'tying']);
  });
});

describe('tsqueryLexemes', () => {
  it("reads a tsquery's text form: quotes doubled, operators and marks skipped, operands counted", () => {
    const q = tsqueryLexemes("'run' | 'run' & !'it''s' <-> 'a\\\\b':* | 'x':AB");
    expect([...q]).toEqual(['run', "it's", 'a\\b', 'x']);
    expect(q.operands.get('run')).toBe(2);
    expect(q.operands.get('x')).toBe(1);
    expect([...tsqueryLexemes('')]).toEqual([]);
  });
});

describe('guessQueryLexemes', () => {
  it("guesses what to_tsquery('english', …) holds for SEARCH's OR query of the docs' words, operands counted", async () => {
    const vocabulary = [...new Set([...wordsOf(TEXT), ...HARD_CASES.map((w) => w.toLowerCase())])];
    // Every word alone; runs of three; pairs naming one lexeme twice; stop words; parser-ish words.
    const queries = [
      ...vocabulary.map((w) => [w]),
      ...vocabulary
        .slice(0, 1500)
        .map((w, i) => [
          w,
          vocabulary[(i * 7 + 1) % vocabulary.length]!,
          vocabulary[(i * 13 + 2) % vocabulary.length]!,
        ]),
      ['run', 'runs', 'running'],
      ['index', 'indexes', 'indexing', 'the'],
      ['the', 'and', 'of'],
      ['v1', '2', 'a1b2', 'café', 'naïve', 'µs', 'x²'],
      ['ﬁle', 'İstanbul', 'straße'],
    ];
    const { rows } = await db.query<{ ord: string; q: string }>(
      `select t.ord, to_tsquery('english', t.x)::text as q from unnest($1::text[]) with ordinality as t(x, ord)`,
      [queries.map((q) => q.join(' | '))],
    );
    const differ = rows
      .map((r) => ({ words: queries[Number(r.ord) - 1]!, pg: tsqueryLexemes(r.q) }))
      .filter(({ words, pg }) => !sameLexemes(guessQueryLexemes(words), pg))
      .map(
        ({ words, pg }) => `${words.join(' | ')}: ${[...pg].join(' ')} != ${[...guessQueryLexemes(words)].join(' ')}`,
      );
    expect(differ).toEqual([]);
    expect(rows.length).toBe(queries.length);
    expect(guessQueryLexemes(['run', 'runs', 'running']).operands.get('run')).toBe(3);
    expect([...guessQueryLexemes(['the', 'and', 'of'])]).toEqual([]);
  });

  it('finds lexemes the same only when the same are each named by as many operands', () => {
    expect(sameLexemes(tsqueryLexemes("'run' | 'fast'"), tsqueryLexemes("'fast' | 'run'"))).toBe(true);
    expect(sameLexemes(tsqueryLexemes("'run' | 'run'"), tsqueryLexemes("'run'"))).toBe(false);
    expect(sameLexemes(tsqueryLexemes("'run' | 'fast'"), tsqueryLexemes("'run' | 'slow'"))).toBe(false);
    expect(sameLexemes(tsqueryLexemes("'run'"), tsqueryLexemes("'run' | 'fast'"))).toBe(false);
    expect(sameLexemes(tsqueryLexemes(''), new QueryLexemes())).toBe(true);
  });
});

describe('headline', () => {
  it('writes what ts_headline writes for chunks of 40, 150 and 600 words and queries of 1 to 3 words', async () => {
    const vocabulary = wordsOf(TEXT);
    let seed = 42;
    const pick = <T>(list: readonly T[]) => list[(seed = (seed * 1103515245 + 12345) % 2147483648) % list.length]!;
    const stops = [...ENGLISH_STOP_WORDS];
    const cases: { chunk: string; query: string }[] = [];
    for (const chunk of [...chunks(40, 131), ...chunks(150, 401), ...chunks(600, 2003)]) {
      const own = wordsOf(chunk);
      const digit = own.find((w) => /\d/.test(w)) ?? 'v2';
      const queries = [
        [pick(own)],
        [pick(own), pick(own)],
        [pick(own), pick(vocabulary), pick(own)],
        [pick(vocabulary)],
        ['zqxv'],
        [pick(stops)],
        [pick(stops), pick(own)],
        [digit],
        [digit, pick(own), 'zqxv'],
        // Two spellings of one stem: the query names the lexeme twice.
        [pick(own), `${pick(own)}s`, pick(own)],
      ];
      for (const words of queries) cases.push({ chunk, query: [...new Set(words)].join(' | ') });
    }
    const { rows } = await db.query<{ ord: string; tsq: string; h: string }>(
      `select t.ord, to_tsquery('english', t.q)::text as tsq, ts_headline('english', t.chunk, to_tsquery('english', t.q), $3) as h
         from unnest($1::text[], $2::text[]) with ordinality as t(chunk, q, ord)`,
      [cases.map((c) => c.chunk), cases.map((c) => c.query), OPTIONS],
    );
    const differ = rows
      .map((r) => ({
        ...cases[Number(r.ord) - 1]!,
        tsq: r.tsq,
        pg: r.h,
        ours: headline(cases[Number(r.ord) - 1]!.chunk, tsqueryLexemes(r.tsq)),
      }))
      .filter((c) => c.ours !== c.pg);
    expect(differ).toEqual([]);
    // Each chunk's first query above met it unseen; here every pair does (only the query's candidates lexized).
    const firstSight = rows.filter((r) => {
      resetHeadlineMemos('texts');
      return headline(cases[Number(r.ord) - 1]!.chunk, tsqueryLexemes(r.tsq)) !== r.h;
    });
    expect(firstSight).toEqual([]);
    expect(cases.length).toBeGreaterThan(2000);
    expect(rows.filter((r) => r.h.includes('<b>')).length).toBeGreaterThan(1000);
    expect(rows.some((r) => /'(\w+)'.*'\1'/.test(r.tsq))).toBe(true);
    console.info(`headline: ${cases.length} chunk and query pairs equal to ts_headline`);
  });

  it('drops tokens of 2,047 bytes or more, caps positions at 16,383 and copies twice-named words, as PostgreSQL does', async () => {
    const long = `intro ${'a'.repeat(2100)} needle here ${'b'.repeat(1500)}s more`;
    const huge = Array.from({ length: 17_000 }, (_, i) => (i % 5000 === 4999 ? 'needle' : `beta${i % 13}`)).join(' ');
    const cases = [
      { chunk: long, query: 'needle' },
      { chunk: long, query: 'zzz' },
      { chunk: `${huge} needle gamma`, query: 'gamma' },
      // An early match, and two past the cap: those share one position, so one cover of two words wins.
      { chunk: `alpha needle ${huge} needle needle end`, query: 'needle' },
      { chunk: 'I run and running and runs fast, fast and quick', query: 'run | running | fast' },
      // Words whose stem does not begin with their first two letters (dying: die), in an ASCII text.
      { chunk: `${'Calm words here. '.repeat(30)}The plant was dying, lying low.`, query: 'die | lie' },
      {
        chunk: 'See <b>http://example.com/a?b=1</b> &amp; state-of-the-art re-index at v1.2.3',
        query: 'art | index | example',
      },
    ];
    const { rows } = await db.query<{ ord: string; tsq: string; h: string }>(
      `select t.ord, to_tsquery('english', t.q)::text as tsq, ts_headline('english', t.chunk, to_tsquery('english', t.q), $3) as h
         from unnest($1::text[], $2::text[]) with ordinality as t(chunk, q, ord)`,
      [cases.map((c) => c.chunk), cases.map((c) => c.query), OPTIONS],
    );
    // Twice each: the first sighting (only the query's candidates lexized), then the whole text lexized.
    for (const r of rows) {
      resetHeadlineMemos('texts');
      for (let sighting = 0; sighting < 2; sighting++)
        expect(headline(cases[Number(r.ord) - 1]!.chunk, tsqueryLexemes(r.tsq))).toBe(r.h);
    }
  });

  it('reads a text only as far as its fragment, and writes what reading it whole writes', () => {
    // A first sighting, and every sighting of a text of over 1,000 characters, reads up to 40 words past the
    // first match of the fewest operands; a short text's second sighting reads it whole and keeps it. Each must
    // write what reading the whole text writes, for every kind of match the rules treat apart.
    const filler = (n: number, salt: number) =>
      Array.from({ length: n }, (_, i) => ['alpha', 'beta', 'gamma', 'Delta', 'epsilon'][(i + salt) % 5]).join(' ');
    const texts = [
      `${filler(10, 0)} needle ${filler(500, 1)}`,
      `${filler(300, 2)} needle ${filler(30, 3)}`,
      `needle ${filler(45, 4)} needle`,
      `${filler(100, 0)} runs ${filler(7, 4)} running ${filler(80, 1)} run ${filler(90, 2)}`,
      `${filler(10, 0)} runs ${filler(60, 1)} needle ${filler(200, 2)}`,
      `${filler(20, 1)} state-of-the-art needle re-index ${filler(200, 3)}`,
      `${filler(20, 1)} see http://example.com/needle and me@needle.org ${filler(200, 3)}`,
      `${filler(15, 2)} <b>needle</b> <script>needle</script> &amp; ${filler(200, 4)}`,
      `${filler(12, 0)} ${'a'.repeat(2100)} needle ${filler(120, 1)}`,
      `${filler(12, 0)} naïve café needle résumé ${filler(120, 2)} 😀 needle`,
      `${filler(90, 1)} the plant was dying ${filler(70, 2)} lying needle ${filler(10, 3)}`,
      // A hyphenated word and a URL late in the text: covers of no words, chosen over an early match.
      `needle ${filler(100, 1)} foo-bar ${filler(5, 2)} http://example.com/x ${filler(5, 3)}`,
      `${filler(60, 3)}. ${filler(3, 0)}, a to of needle. It is so. ${filler(200, 4)}`,
      filler(700, 1),
      // Short texts (kept from their second sighting).
      `${filler(8, 0)} needle ${filler(60, 1)} needle`,
      `${filler(6, 2)} runs ${filler(50, 1)} needle ${filler(20, 2)}`,
    ];
    const queries = [
      new QueryLexemes(['needl']),
      new QueryLexemes(['zzz']),
      new QueryLexemes(['run', 'needl', 'gamma']),
      new QueryLexemes(['art', 'index', 'needl']),
      new QueryLexemes(['exampl', 'needl']),
      tsqueryLexemes("'run' | 'run' | 'needl'"), // run named twice: a needle (once) is chosen over an earlier run
      tsqueryLexemes("'needl' | 'needl' | 'alpha'"),
      tsqueryLexemes("'needl' | 'needl'"),
      new QueryLexemes(['die', 'zzz']),
      new QueryLexemes(['needl', 'foo-bar']),
      new QueryLexemes(['needl', 'example.com/x']),
      new QueryLexemes(['li']),
    ];
    let compared = 0;
    for (const text of texts)
      for (const query of queries) {
        resetHeadlineMemos('texts');
        const whole = headlineOfWholeText(text, query);
        for (let sighting = 0; sighting < 3; sighting++)
          expect(headline(text, query), `sighting ${sighting}, ${query.size} lexemes over ${text.slice(0, 60)}`).toBe(
            whole,
          );
        compared++;
      }
    expect(compared).toBe(texts.length * queries.length);
  });

  it('writes what reading the whole text writes for 1,500 random texts and queries, each sighted twice', () => {
    // Seeded: words, stop words, the stemmer's exceptions, numbers, versions, hosts, URLs, e-mail addresses, paths,
    // hyphenated words, entities, tags, long tokens and non-ASCII letters, joined by assorted blanks; queries of
    // one to three lexemes of the text's words or others, some named twice.
    const next = seeded(20261128);
    const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
    const words = ['needle', 'Needles', 'run', 'running', 'Runs', 'dying', 'lying', 'tie', 'skies', 'early', 'hope'];
    words.push(...['alpha', 'beta', 'Gamma', 'the', 'a', 'of', 'is', 'it', 'and', 'x', 'I', 'ok', 'was', 'generously']);
    const odd = [
      '123',
      '1.5',
      '-3',
      '+7',
      '1e5',
      'v1.2.3',
      '1.2.3.4',
      'example.com',
      'http://ex.com/a/b',
      'me@host.org',
    ];
    odd.push(...['/usr/bin/x', './a/b.txt', 'state-of-the-art', 're-index-2', 'foo--bar', '&amp;', '&#65;', 'a1b2']);
    odd.push(
      ...["it's", '(x)', 'x_y', '<b>', '</p>', '<a href="x y">', '<script>needle run</script>', 'naïve', 'café'],
    );
    odd.push(...['İstanbul', '😀', 'x²', 'a'.repeat(2050), `needle${'x'.repeat(1000)}`]);
    const blanks = [' ', ' ', ' ', ', ', '. ', '\n', '\n\n', '\t', ' - ', ' / ', '-', '/', ''];
    let compared = 0;
    for (let c = 0; c < 1500; c++) {
      const parts: string[] = [];
      const length = 20 + Math.floor(next() ** 2 * 900);
      for (let i = 0; i < length; i++) parts.push(next() < 0.15 ? pick(odd) : pick(words));
      let text = parts.map((p) => p + pick(blanks)).join('');
      if (next() < 0.5) text = text.replace(/[\u0080-\uffff]/g, 'q');
      const query = new QueryLexemes();
      for (let k = 1 + Math.floor(next() * 3); k > 0; k--)
        for (const lexeme of guessQueryLexemes([
          next() < 0.8 ? pick(parts).toLowerCase() : pick(['zzz', 'die', 'lie']),
        ])) {
          query.add(lexeme);
          query.operands.set(lexeme, (query.operands.get(lexeme) ?? 0) + (next() < 0.2 ? 2 : 1));
        }
      resetHeadlineMemos('texts');
      const whole = headlineOfWholeText(text, query);
      for (let sighting = 0; sighting < 2; sighting++) {
        expect(headline(text, query), `case ${c}, sighting ${sighting}`).toBe(whole);
        compared++;
      }
    }
    expect(compared).toBe(3000);
  });

  it('reads a long text from shortly before its first possible match, and writes what reading it whole writes', () => {
    // Texts of 1,000 characters or more: some with the query's words rare (read from far in), some with false
    // starts (a run next to a digit, a stop word, a word of the same two letters), tags, URLs and non-ASCII
    // text; queries of one to three lexemes, some named twice, some of non-ASCII words.
    const next = seeded(20261128 + 1);
    const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
    const words = ['needle', 'Needles', 'run', 'running', 'Runs', 'dying', 'lying', 'tie', 'skies', 'early', 'hope'];
    words.push(...['ne', 'nee', 'needled', 'ru', 'runner', 'backup', 'backups', 'nightly', 'night', 'go', 'going']);
    const filler = [
      'alpha',
      'beta',
      'Gamma',
      'the',
      'a',
      'of',
      'is',
      'it',
      'and',
      'x',
      'I',
      'ok',
      'was',
      'delta',
      'zeta',
    ];
    const odd = ['123', '1.5', '-3', 'v1.2.3', 'example.com', 'me@host.org', '/usr/bin/x', 'state-of-the-art', '&amp;'];
    odd.push(...['needle2', '2needle', '1.5needle', 'needle-run', 'run.needle', 'nEEdle', 'RUNS', '_run', '-needle']);
    odd.push(
      ...['a'.repeat(2050), `needle${'x'.repeat(1000)}`, '<b>needle</b>', '<a href="x needle">', '<!-- run -->'],
    );
    odd.push(...['<script>needle run</script>', 'http://ex.com/needle', 'https://needle.org/a b', 'café', 'naïve']);
    odd.push(
      ...['needleé', 'éneedle', 'İstanbul', '\u212aelvin', 'ﬁle', 'Ωmega', '—', '\u00a0needle', '😀', '٣needle'],
    );
    const blanks = [' ', ' ', ' ', ', ', '. ', '\n', '\n\n', '\t', ' - ', ' / ', '-', '/', '', '  ', '\r\n', ';', '('];
    let [compared, fromFurther, nothing] = [0, 0, 0];
    for (let c = 0; c < 1500; c++) {
      const parts: string[] = [];
      const rare = next() < 0.6;
      for (let i = 150 + Math.floor(next() * 1200); i > 0; i--)
        parts.push(
          rare
            ? next() < 0.004
              ? pick(odd)
              : next() < 0.006
                ? pick(words)
                : pick(filler)
            : next() < 0.1
              ? pick(odd)
              : pick(words),
        );
      let text = parts.map((p) => p + pick(blanks)).join('');
      if (next() < 0.4) text = text.replace(/[\u0080-\uffff]/g, 'q');
      const query = new QueryLexemes();
      for (let k = 1 + Math.floor(next() * 3); k > 0; k--) {
        const word = rare ? pick(words) : next() < 0.7 ? pick(parts) : pick(['zzz', 'die', 'café', 'kelvin', 'file']);
        for (const lexeme of guessQueryLexemes([word.toLowerCase().replace(/[^\p{L}\p{N}]/gu, '') || 'zzz'])) {
          query.add(lexeme);
          query.operands.set(lexeme, (query.operands.get(lexeme) ?? 0) + (next() < 0.2 ? 2 : 1));
        }
      }
      const start = readingStartOf(text, query);
      if (start > 0) fromFurther++;
      if (start < 0) nothing++;
      resetHeadlineMemos('texts');
      const whole = headlineOfWholeText(text, query);
      for (let sighting = 0; sighting < 2; sighting++) {
        expect(headline(text, query), `case ${c}, sighting ${sighting}, read from ${start}`).toBe(whole);
        compared++;
      }
    }
    expect(compared).toBe(3000);
    expect(fromFurther).toBeGreaterThan(150);
    expect(nothing).toBeGreaterThan(150);
  });

  it('reads from the start a text it cannot read from further in', () => {
    const filler = (n: number) => Array.from({ length: n }, (_, i) => ['alpha', 'beta', 'gamma'][i % 3]).join(' ');
    const needle = new QueryLexemes(['needl']);
    const late = `${filler(400)} needle ${filler(50)}`;
    const start = readingStartOf(late, needle);
    // Far in: more than 20 words before the match, at a letter after a blank.
    expect(start).toBeGreaterThan(late.indexOf('needle') - 400);
    expect(start).toBeLessThan(late.indexOf('needle') - 20 * 5);
    expect(late[start - 1]).toBe(' ');
    // A tag before it: no further than the tag.
    const tagged = `${filler(100)} <b class="a b">x</b> ${filler(300)} needle ${filler(50)}`;
    expect(readingStartOf(tagged, needle)).toBeLessThanOrEqual(tagged.indexOf('<'));
    // Lower-casing that changes the length, surrogate pairs, a lexeme of a non-ASCII first letter: from the start.
    expect(readingStartOf(`İ ${late}`, needle)).toBe(0);
    expect(readingStartOf(`😀 ${late}`, needle)).toBe(0);
    expect(readingStartOf(`é ${late}`, new QueryLexemes(['needl', 'éclair']))).toBe(0);
    // No possible match: -1; the first 15 words answer.
    expect(readingStartOf(late, new QueryLexemes(['zzz']))).toBe(-1);
    // A false start (a run next to a digit) before the match: read from before the false start.
    const falseStart = `${filler(200)} needle2 ${filler(200)} needle ${filler(50)}`;
    expect(readingStartOf(falseStart, needle)).toBeLessThan(falseStart.indexOf('needle2'));
    // A query word of non-ASCII letters after ASCII ones: its run of ASCII letters is taken to match.
    const cafe = `${filler(300)} Cafés ${filler(50)}`;
    expect(readingStartOf(cafe, new QueryLexemes(['café']))).toBeGreaterThan(0);
    expect(headline(cafe, new QueryLexemes(['café']))).toContain('<b>Cafés</b>');
    // A lexeme named by 40 operands or more: its cover's words are no longer counted as its operands, so the
    // first cover of the fewest operands may not be the one chosen (a review found it): read whole.
    const named = (counts: Record<string, number>) => {
      const query = new QueryLexemes(Object.keys(counts));
      for (const [lexeme, n] of Object.entries(counts)) query.operands.set(lexeme, n);
      return query;
    };
    for (const [text, query] of [
      [`${filler(30)} run ${filler(5)} needle ${filler(400)}`, named({ needl: 40, run: 41 })],
      [`${filler(30)} run ${filler(60)} needle ${filler(400)}`, named({ needl: 41, run: 42 })],
      [`run ${filler(30)} needle ${filler(300)}`, named({ needl: 42 })],
      [`needle ${filler(60)} run ${filler(300)}`, named({ needl: 41, run: 42 })],
    ] as const) {
      resetHeadlineMemos('texts');
      expect(headline(text, query)).toBe(headlineOfWholeText(text, query));
    }
    for (const text of [
      late,
      tagged,
      `İ ${late}`,
      `😀 ${late}`,
      falseStart,
      `${filler(10)} needle ${filler(400)}`,
      cafe,
    ])
      for (const query of [needle, new QueryLexemes(['zzz']), new QueryLexemes(['needl', 'gamma'])]) {
        resetHeadlineMemos('texts');
        expect(headline(text, query)).toBe(headlineOfWholeText(text, query));
      }
  });

  it('answers the first 15 words when nothing matches, and marks every spelling of a lexeme', () => {
    const text = 'Indexes hold chunks; each chunk is indexed once, and the index answers SEARCH with its best chunks.';
    expect(headline(text, new Set(['zzz']))).toBe(
      'Indexes hold chunks; each chunk is indexed once, and the index answers SEARCH with its',
    );
    // The end is cut back to a word of more than 3 bytes: the final period is left out, as PostgreSQL does.
    expect(headline(text, new QueryLexemes(['index']))).toBe(
      '<b>Indexes</b> hold chunks; each chunk is <b>indexed</b> once, and the <b>index</b> answers SEARCH with its best chunks',
    );
  });
});
