/**
 * Search snippets written in the API process: what PostgreSQL's
 * `ts_headline('english', text, q, 'MaxWords=40, MinWords=15, MaxFragments=1')` returns, for an OR
 * query `q` of lexemes the caller had PostgreSQL stem (`to_tsquery('english', ?)::text`, read back by
 * `tsqueryLexemes`).
 *
 * The text is read by PostgreSQL's default parser (`parseTokens`) and each token lexized as the
 * `english` configuration does: words by `english_stem` (lower-cased, stop words give no lexeme, then
 * the Snowball stem), numbers, paths, hosts, URLs and e-mail addresses by `simple` (lower-cased),
 * blanks, tags, entities and protocol heads not at all. The fragment is then chosen as
 * `mark_hl_fragments` (`src/backend/tsearch/wparser_def.c`) chooses it: for an OR query each matching
 * word is a cover; the one chosen is the first of those with the fewest query operands (a lexeme the
 * query names twice counts twice, as PostgreSQL copies the word for each operand), stretched by up to
 * (40 - its length) / 2 words to the left and then to the right up to 40 words, both ends cut back
 * past tokens of 3 bytes or less and past non-words and numbers. With no match, the first 15 words.
 * Tags print as a space; hyphenated words and URLs print through their parts, which follow them.
 *
 * Cost: words' lexemes are memoized (50,000 words), and a text of up to 1,000 characters has its tokens with
 * their lexemes kept from the second time it is seen (2,000 texts): a search's best chunks often come back. A
 * text not kept (the first time, and every time past 1,000 characters) is read only up to the end of its
 * fragment when a match settles it (`prefixWords`), a long one from shortly before its first possible match
 * (`readingStart`), and only the tokens that may match are lexized.
 */
import { snowballEnglish, ENGLISH_STOP_WORDS, EXCEPTIONS } from './english-stem.js';
import { onProcessReset } from '../process-state.js';
import { readTokens, TokenStream, TokenType as Y } from './ts-parser.js';

export { ENGLISH_STOP_WORDS } from './english-stem.js';
export { parseTokens } from './ts-parser.js';

/** The options SEARCH passes (`MaxWords=40, MinWords=15, MaxFragments=1`) and `ShortWord`'s default, 3 bytes. */
const [MAX_WORDS, MIN_WORDS, MAX_FRAGMENTS, SHORT_WORD] = [40, 15, 1, 3] as const;
/** Those options as `ts_headline` takes them (SEARCH's statements that write snippets in SQL). */
export const HEADLINE_OPTIONS = `MaxWords=${MAX_WORDS}, MinWords=${MIN_WORDS}, MaxFragments=${MAX_FRAGMENTS}`;
/** Characters of a chunk's text a snippet shows when the query has no words (`left(text, 300)` in SQL). */
export const PLAIN_SNIPPET_CHARS = 300;
/**
 * PostgreSQL's limits: tokens of 2,047 bytes or more are dropped (`MAXSTRLEN`, "word is too long"),
 * words over 1,000 bytes are lower-cased but not stemmed (`dsnowball_lexize`), and positions past
 * 16,383 are all 16,383 (`LIMITPOS`).
 */
const [MAX_TOKEN_BYTES, MAX_STEMMED_BYTES, MAX_POSITION] = [2047, 1000, 16383] as const;
/** Memoized lexemes; cleared when full. */
const MEMO_SIZE = 50_000;

/** A table of token types (by number) from a list. */
const types = (...list: number[]) => {
  const table = new Uint8Array(24);
  for (const t of list) table[t] = 1;
  return table;
};
/** Token types `english` lexizes with `english_stem` (the others with `simple`, but for `IGNORED`). */
const STEMMED = types(Y.ASCIIWORD, Y.WORD, Y.PARTHWORD, Y.ASCIIPARTHWORD, Y.ASCIIHWORD, Y.HWORD);
/** Token types `english` does not lexize (no dictionary). */
const IGNORED = types(Y.SPACE, Y.TAG, Y.PROTOCOL, Y.XMLENTITY);
const NON_WORD_TYPES = [Y.SPACE, Y.TAG, Y.URL, Y.NUMHWORD, Y.ASCIIHWORD, Y.HWORD];
/** Token types of ASCII letters only. */
const ASCII_LETTERS = types(Y.ASCIIWORD, Y.ASCIIPARTHWORD);
/** `NONWORDTOKEN`: not counted as words. */
const NON_WORD = types(...NON_WORD_TYPES);
/** `NOENDTOKEN`: never a fragment's end unless a query word. */
const NO_END = types(
  ...NON_WORD_TYPES,
  Y.SCIENTIFIC,
  Y.VERSIONNUMBER,
  Y.DECIMAL,
  Y.SIGNEDINT,
  Y.UNSIGNEDINT,
  Y.PROTOCOL,
  Y.XMLENTITY,
);
/** `HLIDSKIP`: left out of the snippet (their parts follow them as tokens of their own). */
const SKIPPED = types(Y.URL, Y.NUMHWORD, Y.ASCIIHWORD, Y.HWORD);

const utf8 = new TextEncoder();
const byteLength = (s: string) => {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return utf8.encode(s).length;
  return s.length;
};

/** Lower-casing as the database's `towlower` does it: character by character, without context. */
function lower(text: string): string {
  let ascii = true;
  for (let i = 0; i < text.length && ascii; i++) ascii = text.charCodeAt(i) < 0x80;
  if (ascii) return text.toLowerCase();
  let out = '';
  for (const ch of text) out += String.fromCodePoint(ch.toLowerCase().codePointAt(0)!);
  return out;
}

/**
 * The memos: words' stems, tokens' lexemes (of `english_stem` and of `simple`), texts' tokens, texts
 * seen once. Pure functions of their keys, the same for every app; each map is cleared when full.
 */
let memo = emptyMemos();
function emptyMemos() {
  return {
    stems: new Map<string, string>(),
    stemmed: new Map<string, string | null>(),
    simple: new Map<string, string | null>(),
    texts: new Map<string, LexizedText>(),
    seen: new Set<string>(),
  };
}
onProcessReset('shared/document-index/headline.ts#memo', () => (memo = emptyMemos()));

/**
 * What PostgreSQL's `english_stem` dictionary gives for a lower-cased word that is not a stop word
 * (`ts_lexize('english_stem', word)`): the Snowball English stem, or the word itself past 1,000 bytes.
 * Memoized.
 */
export function englishStem(word: string): string {
  let stem = memo.stems.get(word);
  if (stem === undefined) {
    stem = byteLength(word) > MAX_STEMMED_BYTES ? word : snowballEnglish(word);
    if (memo.stems.size >= MEMO_SIZE) memo.stems = new Map();
    memo.stems.set(word, stem);
  }
  return stem;
}

/** The lexeme `english` gives a token of a lexized type (null: a stop word or empty). Memoized by text. */
function lexize(type: number, text: string): string | null {
  const key = STEMMED[type] ? 'stemmed' : 'simple';
  let found = memo[key].get(text);
  if (found === undefined) {
    const low = lower(text);
    if (!STEMMED[type]) found = low === '' ? null : low;
    else if (byteLength(text) > MAX_STEMMED_BYTES) found = low;
    else found = low === '' || ENGLISH_STOP_WORDS.has(low) ? null : englishStem(low);
    if (memo[key].size >= MEMO_SIZE) memo[key] = new Map();
    memo[key].set(text, found);
  }
  return found;
}

/** Empties the memos (a benchmark's cold start): all of them, or only the texts (new texts of known words). */
export function resetHeadlineMemos(which: 'all' | 'texts' = 'all'): void {
  if (which === 'all') memo = emptyMemos();
  else Object.assign(memo, { texts: new Map(), seen: new Set() });
}

/**
 * The lexemes of a tsquery's text form as PostgreSQL prints it (`'run' | 'fast'`, `'it''s'`), in a
 * set that also remembers how many operands name each one (`QueryLexemes.operands`): a lexeme named
 * twice changes the fragment PostgreSQL picks. Weights and prefix marks are ignored.
 */
export function tsqueryLexemes(text: string): QueryLexemes {
  const out = new QueryLexemes();
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== "'") continue;
    let value = '';
    for (i++; i < text.length; i++) {
      const ch = text[i]!;
      if (ch === '\\' && i + 1 < text.length) value += text[++i];
      else if (ch === "'" && text[i + 1] === "'") value += text[++i];
      else if (ch === "'") break;
      else value += ch;
    }
    out.add(value);
    out.operands.set(value, (out.operands.get(value) ?? 0) + 1);
  }
  return out;
}

/** A query's lexemes, with how many operands name each (1 unless `operands` says more). */
export class QueryLexemes extends Set<string> {
  readonly operands = new Map<string, number>();
}

/**
 * What `to_tsquery('english', …)` of `words` OR-ed together holds, as `tsqueryLexemes` reads it back: each
 * word's tokens lexized as the headline lexizes a text's. A guess, to write snippets before PostgreSQL's
 * lexemes arrive; only a guess `sameLexemes` finds equal to them may be used, for `headline` reads nothing
 * else of the query.
 */
export function guessQueryLexemes(words: readonly string[]): QueryLexemes {
  const out = new QueryLexemes();
  for (const word of words)
    for (const lexeme of lexizedTokens(word).lexemes) {
      if (lexeme === null) continue;
      out.add(lexeme);
      out.operands.set(lexeme, (out.operands.get(lexeme) ?? 0) + 1);
    }
  return out;
}

/** The same lexemes, each named by as many operands: `headline` writes the same snippet for either. */
export function sameLexemes(a: QueryLexemes, b: QueryLexemes): boolean {
  if (a.size !== b.size || a.operands.size !== b.operands.size) return false;
  for (const [lexeme, n] of a.operands) if (b.operands.get(lexeme) !== n) return false;
  for (const lexeme of a) if (!b.has(lexeme)) return false;
  return true;
}

/**
 * The text's tokens as the headline sees them (`HeadlineWordEntry`), one array per field and word `i` at
 * index `i` of each: a snippet of a new chunk reads about a hundred tokens, and an object per token was
 * most of its time and garbage. Without copies (below) `types`, `texts` and `pos` are the memoized
 * `LexizedText`'s own arrays, never written.
 */
interface Words {
  readonly types: ArrayLike<number>;
  readonly texts: readonly string[];
  readonly pos: ArrayLike<number>;
  /** 1: matches a query operand. */
  readonly item: Uint8Array;
  /** 1: a copy for a further operand naming the same lexeme (never printed, still counted). */
  readonly repeated: Uint8Array;
  /** 1: in the snippet. */
  readonly in: Uint8Array;
}

/** A text's tokens with what the query does not change: type, text, lexeme (null: none), position. */
interface LexizedText {
  types: number[];
  texts: string[];
  lexemes: (string | null)[];
  positions: number[];
}

/**
 * Texts memoized (and texts seen once) at most. A search's best chunks come back for the next
 * searches; a text is kept the second time it is seen, so one-off texts cost no memo churn.
 */
const TEXT_MEMO_SIZE = 2_000;
/**
 * Texts longer than this (in UTF-16 units) are never kept: each sighting reads them as a first one does, up to
 * its fragment (`prefixWords`). Kept, a chunk of the default size (about 4,000 characters, 1,200 tokens) held
 * about 70 KB of token arrays and strings, and a memo of them most of the garbage collector's work.
 */
const MEMO_MAX_CHARS = 1_000;

/**
 * The text's tokens, lexized and numbered as `hlparsetext` does (long tokens dropped): memoized from the second
 * time it is seen, or only `query`'s candidates lexized at its `first` sight (`lexizedTokens`).
 */
function lexized(text: string, query: ReadonlySet<string>, first: boolean): LexizedText {
  const known = memo.texts.get(text);
  if (known) return known;
  if (first) return lexizedTokens(text, Candidates.of(query));
  const found = lexizedTokens(text);
  if (memo.texts.size >= TEXT_MEMO_SIZE) memo.texts = new Map();
  memo.texts.set(text, found);
  return found;
}

/**
 * Whether the text is read as at its first sight: seen for the first time (no memo holds it; it is remembered as
 * seen from now on), or longer than `MEMO_MAX_CHARS` (never kept).
 */
function firstSight(text: string): boolean {
  if (text.length > MEMO_MAX_CHARS) return true;
  if (memo.texts.has(text) || memo.seen.has(text)) return false;
  if (memo.seen.size >= TEXT_MEMO_SIZE) memo.seen = new Set();
  memo.seen.add(text);
  return true;
}

/**
 * Which tokens can be lexized to one of a query's lexemes, told from their first characters, so the others are
 * never lexized (`mayMatch`). A lexeme keeps its word's first character (`simple` lower-cases; `english_stem`
 * lower-cases and then rewrites endings: the tests hold `englishStem` to it). A stem of three or more characters
 * also keeps its word's first two, but for the whole-word exceptions that change them (dying: die): the steps
 * rewrite endings, those of Step 1 included, never one of the first two characters of a stem that keeps three or
 * more (a test holds `englishStem` to it over 200,000 words). So an ASCII token of two or more characters is a
 * candidate when its first two, lower-cased, begin such a lexeme (or a word an exception stems to it); any other
 * token when its first character begins a lexeme.
 */
class Candidates {
  /** First code points of the lexemes. */
  readonly firsts = new Set<number>();
  /**
   * ASCII pairs (first * 128 + second, lower-cased) that may begin a candidate, one bit each: made for every
   * query, where a byte each (16 KB to clear) was a measurable part of a search's ten snippets.
   */
  private readonly pairs = new Uint32Array((128 * 128) / 32);
  /** What an ASCII text must hold (lower-cased) for a token of it to match: each lexeme's pair or first character. */
  readonly starts: string[] = [];
  /** Whether every lexeme is letters and digits only (no hyphenated word or URL can match it). */
  readonly wordsOnly: boolean;
  /**
   * What a word of ASCII letters begins with, lower-cased, if it stems to one of the lexemes of ASCII letters: all
   * of the lexeme but its last letter (the stemmer rewrites endings by one letter at most beyond what it cuts:
   * happy, happi; using, use), the lexeme itself when it is one letter, or an exception's word (dying, die). The
   * same test holds `englishStem` to it.
   */
  readonly wordBegins: string[];
  /**
   * Where in a text (either case) a token may begin that matches (`readingStart`), not after an ASCII letter: a
   * lexeme's word beginning (`wordBegins`), or for a lexeme of other characters (a digit, a non-ASCII letter
   * after its first) its start. Null when no lexeme begins with an ASCII character. Compiled at its first use:
   * only a long text (`SKIP_MIN_CHARS`) reads it, and a search's texts are often all short.
   */
  get possibleStart(): RegExp | null {
    if (this.pattern === undefined) {
      const escaped = this.begins.map((b) => b.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&'));
      this.pattern = escaped.length ? new RegExp(`(?<![a-z])(?:${escaped.join('|')})`, 'gi') : null;
    }
    return this.pattern;
  }
  private pattern: RegExp | null | undefined;
  /** `possibleStart`'s alternatives, unescaped. */
  private readonly begins: string[];

  private constructor(query: ReadonlySet<string>) {
    this.wordsOnly = [...query].every((lexeme) => /^[\p{L}\p{N}]+$/u.test(lexeme));
    for (const lexeme of query) {
      const c0 = lexeme.charCodeAt(0);
      this.firsts.add(lexeme.codePointAt(0)!);
      if (c0 >= 128) continue; // no ASCII token is lexized to it
      const c1 = lexeme.length >= 3 ? lexeme.charCodeAt(1) : 128;
      if (c1 < 128) this.addPair(lexeme.slice(0, 2));
      else {
        this.pairs.fill(~0, c0 * 4, c0 * 4 + 4); // a short lexeme: any token of its first character (128 bits)
        this.starts.push(lexeme[0]!);
      }
      for (const word of EXCEPTIONAL_STARTS.get(lexeme) ?? []) this.addPair(word.slice(0, 2));
    }
    const wordBegins = new Set<string>();
    const otherStarts = new Set<string>();
    for (const lexeme of query) {
      if (/^[a-z]+$/.test(lexeme)) {
        wordBegins.add(lexeme.length > 1 ? lexeme.slice(0, -1) : lexeme);
        for (const word of EXCEPTIONAL_STARTS.get(lexeme) ?? []) wordBegins.add(word);
      } else if (lexeme.charCodeAt(0) < 0x80)
        otherStarts.add(lexeme.length >= 3 && lexeme.charCodeAt(1) < 0x80 ? lexeme.slice(0, 2) : lexeme[0]!);
    }
    this.wordBegins = [...wordBegins];
    this.begins = [...wordBegins, ...otherStarts];
  }

  /** The query's candidates: a search writes ten snippets or more for one query, so the last query's are kept. */
  static of(query: ReadonlySet<string>): Candidates {
    const last = lastCandidates;
    if (last?.query === query) return last.candidates;
    // The same lexemes come as two sets in a search (guessed for the early snippets, then read back).
    const same = last && last.query.size === query.size && [...query].every((lexeme) => last.query.has(lexeme));
    lastCandidates = { query, candidates: same ? last.candidates : new Candidates(query) };
    return lastCandidates.candidates;
  }

  private addPair(pair: string): void {
    const at = pair.charCodeAt(0) * 128 + pair.charCodeAt(1);
    this.pairs[at >>> 5]! |= 1 << (at & 31);
    this.starts.push(pair);
  }

  /**
   * Whether token `t`, of ASCII letters (an `asciiword` or a part of a hyphenated one), may stem to a lexeme of
   * the query: whether it begins with one of `wordBegins`, told without lower-casing it.
   */
  mayBeWord(t: string): boolean {
    next: for (const begin of this.wordBegins) {
      if (begin.length > t.length) continue;
      for (let k = 0; k < begin.length; k++) if ((t.charCodeAt(k) | 0x20) !== begin.charCodeAt(k)) continue next;
      return true;
    }
    return false;
  }

  /** Whether token `t` may be lexized to a lexeme of the query. */
  mayMatch(t: string): boolean {
    const c0 = t.charCodeAt(0);
    const c1 = t.charCodeAt(1); // NaN for a token of one character
    if (c0 < 128 && c1 < 128) {
      const at = lowerAscii(c0) * 128 + lowerAscii(c1);
      return ((this.pairs[at >>> 5]! >>> (at & 31)) & 1) === 1;
    }
    return this.firsts.has(lowerFirst(t));
  }
}

const lowerAscii = (c: number) => (c >= 0x41 && c <= 0x5a ? c + 0x20 : c);

/** The whole-word exceptions whose stem does not begin with the word's first two characters, by stem. */
const EXCEPTIONAL_STARTS = new Map<string, string[]>();
for (const [word, stem] of EXCEPTIONS)
  if (word.slice(0, 2) !== stem.slice(0, 2))
    EXCEPTIONAL_STARTS.set(stem, [...(EXCEPTIONAL_STARTS.get(stem) ?? []), word]);

/** The last query's candidates (`Candidates.of`); a query's lexemes are never changed once read. */
let lastCandidates: { query: ReadonlySet<string>; candidates: Candidates } | null = null;
onProcessReset('shared/document-index/headline.ts#lastCandidates', () => (lastCandidates = null));

/**
 * The text's tokens lexized and numbered: every token, or with `candidates` only those that may match the query
 * (`Candidates.mayMatch`). A token left out gets a null lexeme and position 0, which the headline reads as it
 * reads a word outside the query (it compares the positions of query words only).
 */
function lexizedTokens(text: string, candidates?: Candidates): LexizedText {
  const { types, texts: tokens } = readTokens(text);
  const lexemes = new Array<string | null>(types.length).fill(null);
  const positions = new Array<number>(types.length);
  let position = 0;
  let dropped = false;
  for (let i = 0; i < types.length; i++) {
    const t = tokens[i]!;
    if (t.length * 3 >= MAX_TOKEN_BYTES && byteLength(t) >= MAX_TOKEN_BYTES) {
      // PostgreSQL drops the token: marked here, taken out below.
      positions[i] = -1;
      dropped = true;
      continue;
    }
    positions[i] = 0;
    if (IGNORED[types[i]!]) continue;
    position++;
    if (candidates && !candidates.mayMatch(t)) continue;
    const lexeme = lexize(types[i]!, t);
    lexemes[i] = lexeme;
    if (lexeme !== null) positions[i] = Math.min(position, MAX_POSITION);
  }
  const found = { types, texts: tokens, lexemes, positions };
  return dropped ? withoutDropped(found) : found;
}

/** The first code point of `lower(t)`: `lower` maps each code point to the first of its lower case. */
function lowerFirst(t: string): number {
  if (t.length === 0) return -1;
  const c = t.charCodeAt(0);
  if (c < 0x80) return c >= 0x41 && c <= 0x5a ? c + 0x20 : c;
  return String.fromCodePoint(t.codePointAt(0)!).toLowerCase().codePointAt(0)!;
}

/** The text without the tokens marked dropped (position -1). */
function withoutDropped(text: LexizedText): LexizedText {
  const keep = text.positions.map((p, i) => (p < 0 ? -1 : i)).filter((i) => i >= 0);
  return {
    types: keep.map((i) => text.types[i]!),
    texts: keep.map((i) => text.texts[i]!),
    lexemes: keep.map((i) => text.lexemes[i]!),
    positions: keep.map((i) => text.positions[i]!),
  };
}

/**
 * The text's tokens with positions and query matches (`hlparsetext`): a token matching a lexeme the query
 * names n times is followed by n - 1 copies of it.
 */
function headlineWords(text: string, query: ReadonlySet<string>, first: boolean): Words {
  return wordsOf(lexized(text, query, first), query);
}

/** `headlineWords` of a text's tokens lexized and numbered. */
function wordsOf(lexizedText: LexizedText, query: ReadonlySet<string>): Words {
  const operands = query instanceof QueryLexemes ? query.operands : undefined;
  const { types, texts, lexemes, positions } = lexizedText;
  const n = types.length;
  const item = new Uint8Array(n);
  let copies = 0;
  for (let i = 0; i < n; i++) {
    const lexeme = lexemes[i]!;
    if (lexeme === null || !query.has(lexeme)) continue;
    item[i] = 1;
    if (operands) copies += Math.max(0, (operands.get(lexeme) ?? 1) - 1);
  }
  if (copies === 0) return { types, texts, pos: positions, item, repeated: new Uint8Array(n), in: new Uint8Array(n) };
  const w = {
    types: [] as number[],
    texts: [] as string[],
    pos: [] as number[],
    item: new Uint8Array(n + copies),
    repeated: new Uint8Array(n + copies),
    in: new Uint8Array(n + copies),
  };
  for (let i = 0; i < n; i++) {
    const copiesOf = item[i] ? Math.max(0, (operands!.get(lexemes[i]!) ?? 1) - 1) : 0;
    for (let c = 0; c <= copiesOf; c++) {
      const at = w.types.length;
      w.types.push(types[i]!);
      w.texts.push(texts[i]!);
      w.pos.push(positions[i]!);
      w.item[at] = item[i]!;
      w.repeated[at] = c > 0 ? 1 : 0;
    }
  }
  return w;
}

/**
 * `headlineWords` of a text not kept, read only as far as the snippet needs (`TokenStream`), or null when the
 * whole text must be read. For an OR query every cover is the matching words at one position (a word and its
 * copies), each holding one interesting word; the fragment chosen is the first cover of the fewest words, which
 * for a counted word are the operands naming its lexeme. So once a match named by the fewest operands of any
 * query lexeme is read, no later cover can be chosen, and the fragment reaches at most `MAX_WORDS` counted
 * words past it (`stretch`): the text after those is never read. A 4,000-character chunk took about 75 µs to
 * read whole. Without such a match the text is read to its end (all of its words). Two kinds of later cover
 * would still win, so their texts are read whole (null, read again by `headlineWords`): a match of a type not
 * counted as a word (a hyphenated word or a URL: a cover of no words), possible only when a query lexeme holds
 * other than letters and digits (SEARCH's never do); and words past PostgreSQL's position cap, which share one
 * position and so one cover, possible only in a text of `MAX_POSITION` characters or more.
 *
 * A long text is also read from shortly before its first possible match (`readingStart`) when it can be: the
 * words before are never shown, and only the positions of matches are compared (their order), never their
 * numbers, so the reading gives the same words from there on.
 */
function prefixWords(text: string, query: ReadonlySet<string>): Words | null {
  const candidates = Candidates.of(query);
  if (!candidates.wordsOnly) return null;
  // A lexeme named by `MAX_WORDS` operands or more makes a cover whose words `fragments` no longer counts as
  // its operands (a tie at 40, none past it), so the first cover of the fewest operands may not be the one chosen.
  if (query instanceof QueryLexemes && [...query.operands.values()].some((n) => n >= MAX_WORDS)) return null;
  const stream = new TokenStream(text);
  // A long text is read from shortly before its first possible match (-1: none; an ASCII text's case is told by
  // the pattern, not by lower-casing it). Else an ASCII text holding none of the starts a match needs matches
  // nothing. Either way, with no match the first `MIN_WORDS` words answer.
  const long = text.length >= SKIP_MIN_CHARS && stream.seekable;
  const from = long ? readingStart(text, stream.ascii ? text : text.toLowerCase(), query, candidates) : 0;
  const lower = !long && stream.ascii && text.toLowerCase();
  const none = from < 0 || (lower !== false && !candidates.starts.some((start) => lower.includes(start)));
  // A position takes a character at least: a shorter text never reaches the cap.
  if (!none && text.length >= MAX_POSITION) return null;
  if (from > 0) {
    const found = readWords(stream.seek(from), text, query, false, true);
    if (found !== AGAIN) return found;
    stream.seek(0);
  }
  const words = readWords(stream, text, query, none, false);
  return words === AGAIN ? null : words;
}

/** `readWords` read from past the text's start and not far enough back: to be read again from the start. */
const AGAIN = Symbol('again');

/**
 * The words of `prefixWords` from the stream, or null (the whole text to be read), or, when `partial` (the
 * stream began past the text's start), `AGAIN` unless the fragment chosen lies far enough past that start.
 * `none`: nothing matches (the first `MIN_WORDS` words answer).
 */
function readWords(
  stream: TokenStream,
  text: string,
  query: ReadonlySet<string>,
  none: boolean,
  partial: boolean,
): Words | null | typeof AGAIN {
  const operands = query instanceof QueryLexemes ? query.operands : undefined;
  let fewest = Infinity;
  for (const lexeme of query) fewest = Math.min(fewest, operands?.get(lexeme) ?? 1);
  const candidates = Candidates.of(query);
  // The tokens read, by where they are in the text (`n` of them), in the reading's scratch arrays (`putToken`); the
  // part the snippet can show is copied out at the end.
  let n = 0;
  let position = 0;
  /** Counted words read after the chosen cover's first word (-1: none chosen yet), or, when `none`, from the start. */
  let after = none ? 0 : -1;
  /** How many `after` may reach: as far as the fragment can, once the cover is chosen. */
  let limit = none ? MIN_WORDS : MAX_WORDS;
  /** The chosen cover's first token, and whether any token matched. */
  let chosen = -1;
  let matched = false;
  /** Where the fragment may begin at the earliest: the tokens before are never shown. */
  let lo = 0;
  while (after < limit && stream.next()) {
    const { type, text: t } = stream;
    if (t.length * 3 >= MAX_TOKEN_BYTES && byteLength(t) >= MAX_TOKEN_BYTES) continue; // dropped, as PostgreSQL drops it
    let lexeme: string | null = null;
    if (!IGNORED[type]) {
      position++;
      if (!none && candidates.mayMatch(t) && (!ASCII_LETTERS[type] || candidates.mayBeWord(t)))
        lexeme = lexize(type, t);
    }
    const matches = lexeme !== null && query.has(lexeme);
    const at = Math.min(position, MAX_POSITION);
    putToken(n++, type, t, lexeme === null ? 0 : at, matches ? 1 : 0, 0);
    if (after >= 0 && !NON_WORD[type]) after++;
    if (!matches) continue;
    // A match not counted as a word would be a cover of no words, chosen before any other: read it all.
    if (NON_WORD[type] || position >= MAX_POSITION) return null;
    matched = true;
    const copies = Math.max(0, (operands?.get(lexeme!) ?? 1) - 1);
    for (let c = 0; c < copies; c++) putToken(n++, type, t, at, 1, 1);
    if (after >= 0)
      after += copies; // copies are counted words too
    else if (copies + 1 === fewest) {
      after = copies;
      chosen = n - copies - 1;
      // `stretch` widens the cover back by up to (MAX_WORDS - its words) / 2 counted words, cuts the new start
      // forward past bad end points, then widens it forward to MAX_WORDS words in all: how far it reaches past
      // the cover is known now. No earlier cover is chosen (each has more words).
      const most = Math.floor((MAX_WORDS - copies - 1) / 2);
      const { types, ts, item, repeated } = scratch;
      let [words, back] = [copies + 1, 0];
      for (lo = chosen; lo > 0 && back < most;)
        if (!NON_WORD[types[--lo]!]) {
          words++;
          back++;
        }
      if (partial && back < most) return AGAIN; // begun too late to know
      for (let i = lo; i < chosen && badEndToken(types[i]!, ts[i]!, item[i] === 1 && repeated[i] === 0); i++)
        if (!NON_WORD[types[i]!]) words--;
      limit = copies + MAX_WORDS - words;
    }
  }
  // The fragment chosen ends where the reading stopped. Without a match of the fewest operands the text was read
  // to its end, so these are all its words.
  const { types, ts, pos, item, repeated } = scratch;
  let hi = n;
  if (chosen < 0 && partial) {
    // Nothing matched from the start given, and nothing before it can: nothing matches. Else the covers
    // found may need words from before.
    return matched ? AGAIN : readWords(stream.seek(0), text, query, true, false);
  } else if (chosen < 0 && !matched) {
    // No cover: the first `MIN_WORDS` counted words answer.
    let counted = 0;
    for (hi = 0; hi < n && counted < MIN_WORDS; hi++) if (!NON_WORD[types[hi]!]) counted++;
  }
  const words = {
    types: types.slice(lo, hi),
    texts: ts.slice(lo, hi),
    pos: pos.slice(lo, hi),
    item: item.slice(lo, hi),
    repeated: repeated.slice(lo, hi),
    in: new Uint8Array(hi - lo),
  };
  // A long text read to its end without a match grew the arrays to its size: not kept past it.
  if (types.length > SCRATCH_KEPT) scratch = scratchOf(SCRATCH_SIZE);
  return words;
}

/**
 * `readWords`' arrays, reused from one reading to the next (a reading copies out what it answers): grown by
 * `push`, five arrays of a hundred tokens each took a few reallocations a snippet.
 */
const scratchOf = (size: number) => ({
  types: new Uint8Array(size),
  ts: new Array<string>(size).fill(''),
  pos: new Int32Array(size),
  item: new Uint8Array(size),
  repeated: new Uint8Array(size),
});
/** The scratch arrays' first size (tokens), and the most kept after a reading grew them. */
const [SCRATCH_SIZE, SCRATCH_KEPT] = [256, 4096] as const;
let scratch = scratchOf(SCRATCH_SIZE);
onProcessReset('shared/document-index/headline.ts#scratch', () => (scratch = scratchOf(SCRATCH_SIZE)));

/**
 * Writes a reading's token `n` into `scratch`, grown when full: a function of the module, not a closure of each
 * reading (run through `tsx`, as `npm start` runs, each closure made is also named by `__name`, a property
 * definition that cost about a microsecond a snippet).
 */
function putToken(n: number, type: number, t: string, at: number, matches: number, copy: number): void {
  const s = n === scratch.types.length ? growScratch(n) : scratch;
  s.types[n] = type;
  s.ts[n] = t;
  s.pos[n] = at;
  s.item[n] = matches;
  s.repeated[n] = copy;
}

/** `scratch` twice as large, holding its first `n` tokens. */
function growScratch(n: number): typeof scratch {
  const grown = scratchOf(n * 2);
  grown.types.set(scratch.types.subarray(0, n));
  grown.pos.set(scratch.pos.subarray(0, n));
  grown.item.set(scratch.item.subarray(0, n));
  grown.repeated.set(scratch.repeated.subarray(0, n));
  for (let i = 0; i < n; i++) grown.ts[i] = scratch.ts[i]!;
  return (scratch = grown);
}

/** Where `headline` begins reading a text for `lexemes` at its first sight (tests: the reading from there is exact). */
export function readingStartOf(text: string, lexemes: ReadonlySet<string>): number {
  const { seekable, ascii } = new TokenStream(text);
  return seekable && text.length >= SKIP_MIN_CHARS
    ? readingStart(text, ascii ? text : text.toLowerCase(), lexemes, Candidates.of(lexemes))
    : 0;
}

/** Texts at least this long (UTF-16 units) are read from shortly before their first possible match. */
const SKIP_MIN_CHARS = 1_000;
/**
 * Words (runs of letters and digits) read before the first possible match. `stretch` takes fewer than
 * `MAX_WORDS` / 2 counted words back; prose holds as many runs as counted words, and a reading that finds fewer
 * (a version number is runs of one word, a tag runs of none) is read again from the start (`AGAIN`).
 */
const WORDS_BEFORE = 24;

/** ASCII letters (either case), digits, blanks. */
const isLetter = (c: number) => (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isAlnum = (c: number) => isLetter(c) || isDigit(c);
const isSpace = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/**
 * Where to begin reading a text for `query` (`lower`: the text lower-cased, or an ASCII text as it is, read in
 * either case): -1 when no token can match, else 0,
 * or an offset `WORDS_BEFORE` words or more before the first token that may match, where the parser is back in
 * its base state. Two facts of the parser make this exact, and a test holds the parser to both over random
 * texts of every kind of token:
 *
 * - no token begins with a letter or digit right after an ASCII letter, so a match begins where
 *   `Candidates.possibleStart` finds one not preceded by one; if it is a run of ASCII letters there, the match is that
 *   run (a longer token holds other characters, never all of a lexeme of letters and digits); a run next to a
 *   digit or a non-ASCII character is taken to match;
 * - a token never spans a blank but in a tag, and an ASCII letter after a blank begins a token read as from the
 *   text's start, when no tag (`<`) comes before it (a `<script>` or `<style>` tag changes how the rest is read).
 *
 * A text whose lower-casing changes its length (İ), and any text for a query with a lexeme that begins with other
 * than an ASCII character (the pattern would not find it), is read from its start.
 */
function readingStart(text: string, lower: string, query: ReadonlySet<string>, candidates: Candidates): number {
  if (lower.length !== text.length) return 0;
  for (const lexeme of query) if (lexeme.charCodeAt(0) >= 0x80) return 0;
  const possible = candidates.possibleStart;
  if (!possible) return -1;
  let first = -1;
  possible.lastIndex = 0;
  for (let found = possible.exec(lower); found; found = possible.exec(lower))
    if (mayMatchRun(lower, found.index, query)) {
      first = found.index;
      break;
    }
  if (first < 0) return -1;
  let i = first;
  for (let words = 0; i > 0 && words < WORDS_BEFORE;) {
    i--;
    if (isAlnum(lower.charCodeAt(i)) && (i === 0 || !isAlnum(lower.charCodeAt(i - 1)))) words++;
  }
  const tag = lower.indexOf('<');
  if (tag >= 0 && tag < i) i = tag;
  for (; i > 0; i--) if (isSpace(text.charCodeAt(i - 1)) && isLetter(text.charCodeAt(i))) return i;
  return 0;
}

/** Whether the token at `i` of `readingStart`'s text (lower-cased, or ASCII in either case) may be lexized to one of `query`'s. */
function mayMatchRun(lower: string, i: number, query: ReadonlySet<string>): boolean {
  const before = i > 0 ? lower.charCodeAt(i - 1) : 0;
  if (isDigit(before) || before >= 0x80) return true;
  let j = i;
  for (; j < lower.length; j++) {
    const c = lower.charCodeAt(j);
    if (isDigit(c) || c >= 0x80) return true;
    if (!isLetter(c)) break;
  }
  const lexeme = lexize(Y.ASCIIWORD, lower.slice(i, j));
  return lexeme !== null && query.has(lexeme);
}

interface Cover {
  start: number;
  end: number;
  /** Interesting words (query words, not copies) and words. */
  interesting: number;
  words: number;
  chosen: boolean;
  excluded: boolean;
}

const interesting = (w: Words, i: number) => w.item[i] === 1 && w.repeated[i] === 0;
const counts = (w: Words, i: number) => !NON_WORD[w.types[i]!];
/** `BADENDPOINT` (a token of at most 3 bytes has at most 3 UTF-16 units). */
const badEnd = (w: Words, i: number) => badEndToken(w.types[i]!, w.texts[i]!, interesting(w, i));
const badEndToken = (type: number, text: string, interesting: boolean) =>
  (NO_END[type] || (text.length <= SHORT_WORD && byteLength(text) <= SHORT_WORD)) && !interesting;

/**
 * The covers of an OR query (`hlCover`), cut into fragments: from each position holding a query word,
 * the words from its first to its last query word at that position (the word and its copies).
 */
function covers(words: Words): Cover[] {
  const found: Cover[] = [];
  const { item, pos: positions } = words;
  for (let i = 0; i < item.length;) {
    if (!item[i]) {
      i++;
      continue;
    }
    const pos = positions[i]!;
    let end = i;
    for (let j = i + 1; j < item.length; j++) {
      if (!item[j]) continue;
      if (positions[j]! > pos) break;
      end = j;
    }
    found.push(...fragments(words, i, end));
    i = end + 1;
  }
  return found;
}

/** A cover cut into fragments of at most `MAX_WORDS` words that start and end on query words (`get_next_fragment`). */
function fragments(words: Words, p: number, q: number): Cover[] {
  const out: Cover[] = [];
  let start = p;
  let end = q;
  while (start <= end) {
    let i = start;
    for (; i <= end; i++) {
      start = i;
      if (interesting(words, i)) break;
    }
    let n = 0;
    let hits = 0;
    for (i = start; i <= end && n < MAX_WORDS; i++) {
      if (counts(words, i)) n++;
      if (interesting(words, i)) hits++;
    }
    if (end > i) {
      end = i;
      for (i = end; i >= start; i--) {
        end = i;
        if (interesting(words, i)) break;
        if (counts(words, i)) n--;
      }
    }
    out.push({ start, end, interesting: hits, words: n, chosen: false, excluded: false });
    start = end + 1;
    end = q;
  }
  return out;
}

/** Marks the chosen fragments' words (`mark_hl_fragments`); false when no cover was chosen. */
function markFragments(words: Words, found: Cover[]): boolean {
  let marked = 0;
  for (let f = 0; f < MAX_FRAGMENTS; f++) {
    let best: Cover | undefined;
    let most = 0;
    let fewest = Infinity;
    for (const cover of found) {
      if (cover.chosen || cover.excluded) continue;
      if (most < cover.interesting || (most === cover.interesting && fewest > cover.words)) {
        most = cover.interesting;
        fewest = cover.words;
        best = cover;
      }
    }
    if (!best) break;
    best.chosen = true;
    stretch(words, best);
    for (let i = best.start; i <= best.end; i++) words.in[i] = words.repeated[i] ? 0 : 1;
    marked++;
    for (const other of found) {
      if (other === best) continue;
      const { start, end } = best;
      if (
        (other.start >= start && other.start <= end) ||
        (other.end >= start && other.end <= end) ||
        (other.start < start && other.end > end)
      )
        other.excluded = true;
    }
  }
  return marked > 0;
}

/** Widens a chosen cover to about `MAX_WORDS` words, ends cut back to good end points. */
function stretch(words: Words, cover: Cover): void {
  let { start, end, words: n } = cover;
  if (n < MAX_WORDS) {
    const most = Math.floor((MAX_WORDS - n) / 2);
    let stretched = 0;
    let marker = start;
    for (let i = start - 1; i >= 0 && stretched < most && !words.in[i]; i--) {
      if (counts(words, i)) {
        n++;
        stretched++;
      }
      marker = i;
    }
    let i = marker;
    for (; i < start && badEnd(words, i); i++) if (counts(words, i)) n--;
    start = i;
    marker = end;
    for (i = end + 1; i < words.in.length && n < MAX_WORDS && !words.in[i]; i++) {
      if (counts(words, i)) n++;
      marker = i;
    }
    for (i = marker; i > end && badEnd(words, i); i--) if (counts(words, i)) n--;
    end = i;
  }
  Object.assign(cover, { start, end, words: n });
}

/**
 * What `ts_headline('english', text, q, 'MaxWords=40, MinWords=15, MaxFragments=1')` returns for the
 * OR query `q` of `lexemes` (as `tsqueryLexemes` reads them from PostgreSQL): the chosen excerpt with
 * the query's words in `<b>` and `</b>`, or the first 15 words when none matches.
 */
export function headline(text: string, lexemes: ReadonlySet<string>): string {
  const first = firstSight(text);
  return written((first && prefixWords(text, lexemes)) || headlineWords(text, lexemes, first));
}

/**
 * `headline` reading the whole text and lexizing every token, nothing kept: the reading the tests hold
 * `headline`'s shorter, filtered and kept readings to.
 */
export function headlineOfWholeText(text: string, lexemes: ReadonlySet<string>): string {
  return written(wordsOf(lexizedTokens(text), lexemes));
}

/** The snippet of a text's words: the fragment chosen (`markFragments`), else the first `MIN_WORDS` words. */
function written(words: Words): string {
  const { types, texts, item, repeated } = words;
  const n = item.length;
  if (!markFragments(words, covers(words))) {
    let counted = 0;
    for (let i = 0; i < n && counted < MIN_WORDS; i++) {
      if (counts(words, i)) counted++;
      words.in[i] = repeated[i] ? 0 : 1;
    }
  }
  let out = '';
  let fragments = 0;
  let inFragment = false;
  for (let i = 0; i < n; i++) {
    if (repeated[i]) continue;
    if (!words.in[i]) {
      inFragment = false;
      continue;
    }
    if (!inFragment) {
      inFragment = true;
      if (++fragments > 1) out += ' ... ';
    }
    const type = types[i]!;
    if (type === Y.TAG) out += ' ';
    else if (!SKIPPED[type]) out += item[i] ? `<b>${texts[i]!}</b>` : texts[i]!;
  }
  return out;
}
