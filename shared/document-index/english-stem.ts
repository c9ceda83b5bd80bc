// @workflow-safe: pure text functions, no I/O.
/**
 * PostgreSQL's `english_stem` dictionary in the API process: its stop words and the Snowball English
 * (Porter2) stemmer as PostgreSQL 18 ships it (Snowball 2.2.0), written from the algorithm's
 * description at snowballstem.org. Vowels are `aeiouy`; any other character, non-ASCII letters
 * included, is a non-vowel, and lengths count characters (code points), as the UTF-8 stemmer does.
 */

/** PostgreSQL's `english.stop`: words the dictionary answers with no lexeme (`ts_lexize` gives `{}`). */
export const ENGLISH_STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers ' +
    'herself it its itself they them their theirs themselves what which who whom this that these those am is ' +
    'are was were be been being have has had having do does did doing a an the and but if or because as until ' +
    'while of at by for with about against between into through during before after above below to from up ' +
    'down in out on off over under again further then once here there when where why how all any both each few ' +
    'more most other some such no nor not only own same so than too very s t can will just don should now'
  ).split(' '),
);

/** Words stemmed as a whole (exception1): the stem, or the word itself. */
export const EXCEPTIONS: ReadonlyMap<string, string> = new Map<string, string>([
  ['skis', 'ski'],
  ['skies', 'sky'],
  ['dying', 'die'],
  ['lying', 'lie'],
  ['tying', 'tie'],
  ['idly', 'idl'],
  ['gently', 'gentl'],
  ['ugly', 'ugli'],
  ['early', 'earli'],
  ['only', 'onli'],
  ['singly', 'singl'],
  ...['sky', 'news', 'howe', 'atlas', 'cosmos', 'bias', 'andes'].map((w): [string, string] => [w, w]),
]);

/** Words left as they are once Step 1a has run (exception2). */
const INVARIANT_AFTER_1A = new Set([
  'inning',
  'outing',
  'canning',
  'herring',
  'earring',
  'proceed',
  'exceed',
  'succeed',
]);

/** Prefixes whose end is R1's start (they would otherwise put it too early). */
const R1_PREFIXES = ['gener', 'commun', 'arsen'];

const STEP2: ReadonlyArray<readonly [string, string]> = [
  ['ization', 'ize'],
  ['ational', 'ate'],
  ['fulness', 'ful'],
  ['ousness', 'ous'],
  ['iveness', 'ive'],
  ['tional', 'tion'],
  ['biliti', 'ble'],
  ['lessli', 'less'],
  ['entli', 'ent'],
  ['ation', 'ate'],
  ['alism', 'al'],
  ['aliti', 'al'],
  ['ousli', 'ous'],
  ['iviti', 'ive'],
  ['fulli', 'ful'],
  ['enci', 'ence'],
  ['anci', 'ance'],
  ['abli', 'able'],
  ['izer', 'ize'],
  ['ator', 'ate'],
  ['alli', 'al'],
  ['bli', 'ble'],
  ['ogi', 'og'],
  ['li', ''],
];
const STEP3: ReadonlyArray<readonly [string, string]> = [
  ['ational', 'ate'],
  ['tional', 'tion'],
  ['alize', 'al'],
  ['icate', 'ic'],
  ['iciti', 'ic'],
  ['ative', ''],
  ['ical', 'ic'],
  ['ness', ''],
  ['ful', ''],
];
const STEP4 = [
  'ement',
  'ance',
  'ence',
  'able',
  'ible',
  'ment',
  'ant',
  'ent',
  'ism',
  'ate',
  'iti',
  'ous',
  'ive',
  'ize',
  'ion',
  'al',
  'er',
  'ic',
];
const DOUBLES = new Set(['bb', 'dd', 'ff', 'gg', 'mm', 'nn', 'pp', 'rr', 'tt']);
const VALID_LI = new Set('cdeghkmnrt');

const isVowel = (ch: string | undefined) =>
  ch === 'a' || ch === 'e' || ch === 'i' || ch === 'o' || ch === 'u' || ch === 'y';

/** The word being stemmed: its characters, R1 and R2's starts. */
class Word {
  constructor(
    public s: string[],
    public p1 = s.length,
    public p2 = s.length,
  ) {}
  get length() {
    return this.s.length;
  }
  endsWith(suffix: string): boolean {
    const n = this.s.length - suffix.length;
    if (n < 0) return false;
    for (let i = 0; i < suffix.length; i++) if (this.s[n + i] !== suffix[i]) return false;
    return true;
  }
  /** Replaces the last `n` characters by `by`. */
  replaceEnd(n: number, by: string): void {
    this.s.length -= n;
    for (const ch of by) this.s.push(ch);
  }
  /** The longest of `suffixes` the word ends with (they are listed longest first). */
  longest<T extends string | readonly [string, string]>(suffixes: readonly T[]): T | undefined {
    return suffixes.find((x) => this.endsWith(typeof x === 'string' ? x : x[0]));
  }
  hasVowelBefore(end: number): boolean {
    for (let i = 0; i < end; i++) if (isVowel(this.s[i])) return true;
    return false;
  }
  /**
   * A short syllable ends at `end`: non-vowel, vowel, then a non-vowel other than w, x and Y; or, at
   * the word's start, a vowel then a non-vowel.
   */
  shortSyllable(end: number): boolean {
    const s = this.s;
    if (end >= 3) {
      const last = s[end - 1]!;
      if (!isVowel(last) && last !== 'w' && last !== 'x' && last !== 'Y' && isVowel(s[end - 2]) && !isVowel(s[end - 3]))
        return true;
    }
    return end === 2 && isVowel(s[0]) && !isVowel(s[1]);
  }
}

function prelude(s: string[]): boolean {
  if (s[0] === "'") s.shift();
  let marked = false;
  if (s[0] === 'y') {
    s[0] = 'Y';
    marked = true;
  }
  for (let i = 0; i + 1 < s.length; i++) {
    if (isVowel(s[i]) && s[i + 1] === 'y') {
      s[i + 1] = 'Y';
      marked = true;
    }
  }
  return marked;
}

/** Position after the first non-vowel that follows a vowel, from `from` (the length when there is none). */
function regionStart(s: readonly string[], from: number): number {
  let i = from;
  while (i < s.length && !isVowel(s[i])) i++;
  while (i < s.length && isVowel(s[i])) i++;
  return i < s.length ? i + 1 : s.length;
}

function markRegions(w: Word): void {
  const s = w.s;
  const prefix = R1_PREFIXES.find((p) => s.length > p.length - 1 && s.slice(0, p.length).join('') === p);
  if (prefix) w.p1 = prefix.length;
  else {
    w.p1 = regionStart(s, 0);
    if (w.p1 === s.length) return;
  }
  w.p2 = regionStart(s, w.p1);
}

function step1a(w: Word): void {
  if (w.endsWith("'s'")) w.replaceEnd(3, '');
  else if (w.endsWith("'s")) w.replaceEnd(2, '');
  else if (w.endsWith("'")) w.replaceEnd(1, '');
  if (w.endsWith('sses')) w.replaceEnd(2, '');
  else if (w.endsWith('ied') || w.endsWith('ies')) w.replaceEnd(3, w.length > 4 ? 'i' : 'ie');
  else if (w.endsWith('ss') || w.endsWith('us')) return;
  else if (w.endsWith('s') && w.hasVowelBefore(w.length - 2)) w.replaceEnd(1, '');
}

function step1b(w: Word): void {
  const suffix = w.longest(['eedly', 'ingly', 'edly', 'eed', 'ing', 'ed']);
  if (!suffix) return;
  const start = w.length - suffix.length;
  if (suffix === 'eed' || suffix === 'eedly') {
    if (start >= w.p1) w.replaceEnd(suffix.length, 'ee');
    return;
  }
  if (!w.hasVowelBefore(start)) return;
  w.replaceEnd(suffix.length, '');
  const n = w.length;
  if (w.endsWith('at') || w.endsWith('bl') || w.endsWith('iz')) w.replaceEnd(0, 'e');
  else if (n >= 2 && DOUBLES.has(w.s[n - 2]! + w.s[n - 1]!)) {
    const ch = w.s[0];
    if (!(n === 3 && (ch === 'a' || ch === 'e' || ch === 'o'))) w.replaceEnd(1, '');
  } else if (n === w.p1 && w.shortSyllable(n)) w.replaceEnd(0, 'e');
}

function step1c(w: Word): void {
  const n = w.length;
  const last = w.s[n - 1];
  if ((last === 'y' || last === 'Y') && n > 2 && !isVowel(w.s[n - 2])) w.replaceEnd(1, 'i');
}

function step2(w: Word): void {
  const hit = w.longest(STEP2);
  if (!hit) return;
  const start = w.length - hit[0].length;
  if (start < w.p1) return;
  if (hit[0] === 'ogi' && w.s[start - 1] !== 'l') return;
  if (hit[0] === 'li' && !VALID_LI.has(w.s[start - 1] ?? '')) return;
  w.replaceEnd(hit[0].length, hit[1]);
}

function step3(w: Word): void {
  const hit = w.longest(STEP3);
  if (!hit) return;
  const start = w.length - hit[0].length;
  if (start < w.p1 || (hit[0] === 'ative' && start < w.p2)) return;
  w.replaceEnd(hit[0].length, hit[1]);
}

function step4(w: Word): void {
  const hit = w.longest(STEP4);
  if (!hit) return;
  const start = w.length - hit.length;
  if (start < w.p2) return;
  if (hit === 'ion' && w.s[start - 1] !== 's' && w.s[start - 1] !== 't') return;
  w.replaceEnd(hit.length, '');
}

function step5(w: Word): void {
  const start = w.length - 1;
  if (w.s[start] === 'e') {
    if (start >= w.p2 || (start >= w.p1 && !w.shortSyllable(start))) w.replaceEnd(1, '');
  } else if (w.s[start] === 'l' && start >= w.p2 && w.s[start - 1] === 'l') w.replaceEnd(1, '');
}

/** The Snowball English stem of a lower-cased word (no stop-word test: see `ENGLISH_STOP_WORDS`). */
export function snowballEnglish(word: string): string {
  const exception = EXCEPTIONS.get(word);
  if (exception !== undefined) return exception;
  const chars = Array.from(word);
  if (chars.length < 3) return word;
  const marked = prelude(chars);
  const w = new Word(chars);
  markRegions(w);
  step1a(w);
  if (!INVARIANT_AFTER_1A.has(w.s.join(''))) {
    step1b(w);
    step1c(w);
    step2(w);
    step3(w);
    step4(w);
    step5(w);
  }
  const out = w.s.join('');
  return marked ? out.replaceAll('Y', 'y') : out;
}
