/**
 * PostgreSQL's default text search parser (`src/backend/tsearch/wparser_def.c`, PostgreSQL 18) in the
 * API process: the same state machine, state for state and rule for rule, so the tokens and their
 * types are the ones `ts_debug` shows. Character classes are those of a UTF-8 database under a
 * `C.UTF-8` libc locale (glibc's `iswalpha` and friends): ASCII as in C, other letters and other
 * scripts' digits alphabetic, combining marks "special" (part of a word, never its start).
 */
import { onProcessReset } from '../process-state.js';

/** Token types, numbered as PostgreSQL numbers them (`ts_token_type('default')`). */
export const TokenType = {
  ASCIIWORD: 1,
  WORD: 2,
  NUMWORD: 3,
  EMAIL: 4,
  URL: 5,
  HOST: 6,
  SCIENTIFIC: 7,
  VERSIONNUMBER: 8,
  NUMPARTHWORD: 9,
  PARTHWORD: 10,
  ASCIIPARTHWORD: 11,
  SPACE: 12,
  TAG: 13,
  PROTOCOL: 14,
  NUMHWORD: 15,
  ASCIIHWORD: 16,
  HWORD: 17,
  URLPATH: 18,
  FILEPATH: 19,
  DECIMAL: 20,
  SIGNEDINT: 21,
  UNSIGNEDINT: 22,
  XMLENTITY: 23,
} as const;

export interface Token {
  type: number;
  /** The token's text, as in the input. */
  text: string;
}

// Character tests (the `p_is*` functions); one-character comparisons are `eq` with a character.
const T = {
  EOF: 1,
  EQ: 2,
  IGNORE: 3,
  ASCLET: 4,
  ALPHA: 5,
  DIGIT: 6,
  ALNUM: 7,
  NOTALNUM: 8,
  SPECIAL: 9,
  SPACE: 10,
  XDIGIT: 11,
  STOPHOST: 12,
  HOST: 13,
  URLPATH: 14,
  URLCHAR: 15,
  ANY: 16,
} as const;

const Y = TokenType;

// Action flags, and the specials run before them.
const [BINGO, POP, PUSH, RERUN, CLEAR, MERGE, CLRALL] = [1, 2, 4, 8, 16, 32, 64] as const;
const [SP_TAGS, SP_FURL, SP_HYPHEN, SP_VERVERSION] = [1, 2, 3, 4] as const;
const STAY = -1;

/**
 * The parser's states and their rules, in PostgreSQL's order (`actionTPS_*`): the first rule whose
 * test passes applies. A state's line (and the indented lines after it) lists its rules, each written
 * `test[flags][>next state][!token type][@special]`: the test is a character in quotes or a class
 * (`ANY` passes always); the flags are `+` push, `^` pop, `~` clear, `*` clear all, `=` merge and
 * `&` rerun; a token type means bingo (the token is found); no next state means staying.
 */
const TABLE = `
Base                   EOF '<'+>InTagFirst IGNORE>InSpace ASCLET>InAsciiWord ALPHA>InWord DIGIT>InUnsignedInt
                      '-'+>InSignedIntFirst '+'+>InSignedIntFirst '&'+>InXMLEntityFirst '~'+>InFileTwiddle
                      '/'+>InFileFirst '.'+>InPathFirstFirst ANY>InSpace
InNumWord              EOF>Base!NUMWORD ALNUM>InNumWord SPECIAL>InNumWord '@'+>InEmail '/'+>InFileFirst
                      '.'+>InFileNext '-'+>InHyphenNumWordFirst ANY>Base!NUMWORD
InAsciiWord            EOF>Base!ASCIIWORD ASCLET '.'+>InHostFirstDomain '.'+>InFileNext '-'+>InHostFirstAN
                      '-'+>InHyphenAsciiWordFirst '_'+>InHostFirstAN '@'+>InEmail ':'+>InProtocolFirst
                      '/'+>InFileFirst DIGIT+>InHost DIGIT>InNumWord ALPHA>InWord SPECIAL>InWord
                      ANY>Base!ASCIIWORD
InWord                 EOF>Base!WORD ALPHA SPECIAL DIGIT>InNumWord '-'+>InHyphenWordFirst ANY>Base!WORD
InUnsignedInt          EOF>Base!UNSIGNEDINT DIGIT '.'+>InHostFirstDomain '.'+>InUDecimalFirst
                      'e'+>InMantissaFirst 'E'+>InMantissaFirst '-'+>InHostFirstAN '_'+>InHostFirstAN
                      '@'+>InEmail ASCLET+>InHost ALPHA>InNumWord SPECIAL>InNumWord '/'+>InFileFirst
                      ANY>Base!UNSIGNEDINT
InSignedIntFirst       EOF^ DIGIT~>InSignedInt ANY^
InSignedInt            EOF>Base!SIGNEDINT DIGIT '.'+>InDecimalFirst 'e'+>InMantissaFirst 'E'+>InMantissaFirst
                      ANY>Base!SIGNEDINT
InSpace                EOF>Base!SPACE '<'>Base!SPACE IGNORE '-'>Base!SPACE '+'>Base!SPACE '&'>Base!SPACE
                      '/'>Base!SPACE NOTALNUM>InSpace ANY>Base!SPACE
InUDecimalFirst        EOF^ DIGIT~>InUDecimal ANY^
InUDecimal             EOF>Base!DECIMAL DIGIT>InUDecimal '.'+>InVersionFirst 'e'+>InMantissaFirst
                      'E'+>InMantissaFirst ANY>Base!DECIMAL
InDecimalFirst         EOF^ DIGIT~>InDecimal ANY^
InDecimal              EOF>Base!DECIMAL DIGIT>InDecimal '.'+>InVerVersion 'e'+>InMantissaFirst
                      'E'+>InMantissaFirst ANY>Base!DECIMAL
InVerVersion           EOF^ DIGIT&>InSVerVersion@ververs ANY^
InSVerVersion          EOF^ DIGIT*>InUnsignedInt!SPACE ANY
InVersionFirst         EOF^ DIGIT~>InVersion ANY^
InVersion              EOF>Base!VERSIONNUMBER DIGIT>InVersion '.'+>InVersionFirst ANY>Base!VERSIONNUMBER
InMantissaFirst        EOF^ DIGIT~>InMantissa '+'>InMantissaSign '-'>InMantissaSign ANY^
InMantissaSign         EOF^ DIGIT~>InMantissa ANY^
InMantissa             EOF>Base!SCIENTIFIC DIGIT>InMantissa ANY>Base!SCIENTIFIC
InXMLEntityFirst       EOF^ '#'>InXMLEntityNumFirst ASCLET>InXMLEntity ':'>InXMLEntity '_'>InXMLEntity ANY^
InXMLEntity            EOF^ ALNUM>InXMLEntity ':'>InXMLEntity '_'>InXMLEntity '.'>InXMLEntity '-'>InXMLEntity
                      ';'>InXMLEntityEnd ANY^
InXMLEntityNumFirst    EOF^ 'x'>InXMLEntityHexNumFirst 'X'>InXMLEntityHexNumFirst DIGIT>InXMLEntityNum ANY^
InXMLEntityNum         EOF^ DIGIT>InXMLEntityNum ';'>InXMLEntityEnd ANY^
InXMLEntityHexNumFirst EOF^ XDIGIT>InXMLEntityHexNum ANY^
InXMLEntityHexNum      EOF^ XDIGIT>InXMLEntityHexNum ';'>InXMLEntityEnd ANY^
InXMLEntityEnd         ANY~>Base!XMLENTITY
InTagFirst             EOF^ '/'+>InTagCloseFirst '!'+>InCommentFirst '?'+>InXMLBegin ASCLET+>InTagName
                      ':'+>InTagName '_'+>InTagName ANY^
InXMLBegin             EOF^ 'x'>InTag ANY^
InTagCloseFirst        EOF^ ASCLET>InTagName ANY^
InTagName              EOF^ '/'>InTagBeginEnd '>'>InTagEnd@tags SPACE>InTag@tags ALNUM ':' '_' '.' '-' ANY^
InTagBeginEnd          EOF^ '>'>InTagEnd ANY^
InTag                  EOF^ '>'>InTagEnd@tags '''>InTagEscapeK '"'>InTagEscapeKK ASCLET DIGIT '=' '-' '_' '#'
                      '/' ':' '.' '&' '?' '%' '~' SPACE@tags ANY^
InTagEscapeK           EOF^ '\\'+>InTagBackSleshed '''>InTag ANY>InTagEscapeK
InTagEscapeKK          EOF^ '\\'+>InTagBackSleshed '"'>InTag ANY>InTagEscapeKK
InTagBackSleshed       EOF^ ANY=
InTagEnd               ANY*>Base!TAG
InCommentFirst         EOF^ '-'>InCommentLast 'D'>InTag 'd'>InTag ANY^
InCommentLast          EOF^ '-'>InComment ANY^
InComment              EOF^ '-'>InCloseCommentFirst ANY
InCloseCommentFirst    EOF^ '-'>InCloseCommentLast ANY>InComment
InCloseCommentLast     EOF^ '-' '>'>InCommentEnd ANY>InComment
InCommentEnd           ANY*>Base!TAG
InHostFirstDomain      EOF^ ASCLET>InHostDomainSecond DIGIT>InHost ANY^
InHostDomainSecond     EOF^ ASCLET>InHostDomain DIGIT+>InHost '-'+>InHostFirstAN '_'+>InHostFirstAN
                      '.'+>InHostFirstDomain '@'+>InEmail ANY^
InHostDomain           EOF*>Base!HOST ASCLET>InHostDomain DIGIT+>InHost ':'+>InPortFirst '-'+>InHostFirstAN
                      '_'+>InHostFirstAN '.'+>InHostFirstDomain '@'+>InEmail DIGIT^
                      STOPHOST*>InURLPathStart!HOST '/'+>InFURL ANY*>Base!HOST
InPortFirst            EOF^ DIGIT>InPort ANY^
InPort                 EOF*>Base!HOST DIGIT>InPort STOPHOST*>InURLPathStart!HOST '/'+>InFURL ANY*>Base!HOST
InHostFirstAN          EOF^ DIGIT>InHost ASCLET>InHost ANY^
InHost                 EOF^ DIGIT>InHost ASCLET>InHost '@'+>InEmail '.'+>InHostFirstDomain '-'+>InHostFirstAN
                      '_'+>InHostFirstAN ANY^
InEmail                STOPHOST^ HOST*>Base!EMAIL ANY^
InFileFirst            EOF^ ASCLET>InFile DIGIT>InFile '.'>InPathFirst '_'>InFile '~'+>InFileTwiddle ANY^
InFileTwiddle          EOF^ ASCLET>InFile DIGIT>InFile '_'>InFile '/'>InFileFirst ANY^
InPathFirst            EOF^ ASCLET>InFile DIGIT>InFile '_'>InFile '.'>InPathSecond '/'>InFileFirst ANY^
InPathFirstFirst       EOF^ '.'>InPathSecond '/'>InFileFirst ANY^
InPathSecond           EOF~>Base!FILEPATH '/'+>InFileFirst '/'~>Base!FILEPATH SPACE~>Base!FILEPATH ANY^
InFile                 EOF>Base!FILEPATH ASCLET>InFile DIGIT>InFile '.'+>InFileNext '_'>InFile '-'>InFile
                      '/'+>InFileFirst ANY>Base!FILEPATH
InFileNext             EOF^ ASCLET~>InFile DIGIT~>InFile '_'~>InFile ANY^
InURLPathFirst         EOF^ URLCHAR>InURLPath ANY^
InURLPathStart         ANY>InURLPath
InURLPath              EOF>Base!URLPATH URLCHAR>InURLPath ANY>Base!URLPATH
InFURL                 EOF^ URLPATH*>Base!URL@furl ANY^
InProtocolFirst        EOF^ '/'>InProtocolSecond ANY^
InProtocolSecond       EOF^ '/'>InProtocolEnd ANY^
InProtocolEnd          ANY*>Base!PROTOCOL
InHyphenAsciiWordFirst EOF^ ASCLET>InHyphenAsciiWord ALPHA>InHyphenWord DIGIT>InHyphenDigitLookahead ANY^
InHyphenAsciiWord      EOF*>InParseHyphen!ASCIIHWORD@hyphen ASCLET>InHyphenAsciiWord ALPHA>InHyphenWord
                      SPECIAL>InHyphenWord DIGIT>InHyphenNumWord '-'+>InHyphenAsciiWordFirst
                      ANY*>InParseHyphen!ASCIIHWORD@hyphen
InHyphenWordFirst      EOF^ ALPHA>InHyphenWord DIGIT>InHyphenDigitLookahead ANY^
InHyphenWord           EOF*>InParseHyphen!HWORD@hyphen ALPHA>InHyphenWord SPECIAL>InHyphenWord
                      DIGIT>InHyphenNumWord '-'+>InHyphenWordFirst ANY*>InParseHyphen!HWORD@hyphen
InHyphenNumWordFirst   EOF^ ALPHA>InHyphenNumWord DIGIT>InHyphenDigitLookahead ANY^
InHyphenNumWord        EOF*>InParseHyphen!NUMHWORD@hyphen ALNUM>InHyphenNumWord SPECIAL>InHyphenNumWord
                      '-'+>InHyphenNumWordFirst ANY*>InParseHyphen!NUMHWORD@hyphen
InHyphenDigitLookahead EOF^ DIGIT>InHyphenDigitLookahead ALPHA>InHyphenNumWord SPECIAL>InHyphenNumWord ANY^
InParseHyphen          EOF&>Base ASCLET>InHyphenAsciiWordPart ALPHA>InHyphenWordPart DIGIT+>InHyphenUnsignedInt
                      '-'+>InParseHyphenHyphen ANY&>Base
InParseHyphenHyphen    EOF^ ALNUM~>InParseHyphen!SPACE SPECIAL~>InParseHyphen!SPACE ANY^
InHyphenWordPart       EOF>Base!PARTHWORD ALPHA>InHyphenWordPart SPECIAL>InHyphenWordPart
                      DIGIT>InHyphenNumWordPart ANY>InParseHyphen!PARTHWORD
InHyphenAsciiWordPart  EOF>Base!ASCIIPARTHWORD ASCLET>InHyphenAsciiWordPart ALPHA>InHyphenWordPart
                      SPECIAL>InHyphenWordPart DIGIT>InHyphenNumWordPart ANY>InParseHyphen!ASCIIPARTHWORD
InHyphenNumWordPart    EOF>Base!NUMPARTHWORD ALNUM>InHyphenNumWordPart SPECIAL>InHyphenNumWordPart
                      ANY>InParseHyphen!NUMPARTHWORD
InHyphenUnsignedInt    EOF^ DIGIT ALPHA~>InHyphenNumWordPart SPECIAL~>InHyphenNumWordPart ANY^
`;

const FLAG_OF: Record<string, number> = { '+': PUSH, '^': POP, '~': CLEAR, '*': CLRALL, '=': MERGE, '&': RERUN };
const SPECIAL_OF: Record<string, number> = { tags: SP_TAGS, furl: SP_FURL, hyphen: SP_HYPHEN, ververs: SP_VERVERSION };

/** State numbers by name, and each state's rules flattened, six numbers a rule: test, character, flags, next, type, special. */
const { S, FLAT } = (() => {
  const states = TABLE.trim()
    .split(/\n(?=\S)/)
    .map((block) => block.trim().split(/\s+/));
  const S: Record<string, number> = Object.fromEntries(states.map(([name], i) => [name!, i]));
  const FLAT = states.map(([, ...rules]) =>
    Int32Array.from(
      rules.flatMap((rule) => {
        const m = /^('.'|[A-Z]+)([+^~*=&]*)(?:>(\w+))?(?:!(\w+))?(?:@(\w+))?$/.exec(rule);
        if (!m) throw new Error(`parser table: bad rule ${rule}`);
        const [, test, flags, next, type, special] = m;
        const quoted = test!.startsWith("'");
        return [
          quoted ? T.EQ : T[test as keyof typeof T],
          quoted ? test!.charCodeAt(1) : 0,
          [...flags!].reduce((f, ch) => f | FLAG_OF[ch]!, type ? BINGO : 0),
          next ? S[next]! : STAY,
          type ? Y[type as keyof typeof Y] : 0,
          special ? SPECIAL_OF[special]! : 0,
        ];
      }),
    ),
  );
  return { S, FLAT };
})();
const BASE = S['Base']!;
const URLPATH_FIRST = S['InURLPathFirst']!;

// Character classes of one code point (bits), for the tests above.
const [ALPHA, DIGIT, SPACE, SPECIAL, URLCHAR, XDIGIT] = [1, 2, 4, 8, 16, 32] as const;

const ASCII_CLASSES = new Uint8Array(128);
for (let i = 0; i < 128; i++) {
  const ch = String.fromCharCode(i);
  let k = 0;
  if (/[A-Za-z]/.test(ch)) k |= ALPHA;
  if (/[0-9]/.test(ch)) k |= DIGIT;
  if (/[ \t\n\v\f\r]/.test(ch)) k |= SPACE;
  if (/[0-9A-Fa-f]/.test(ch)) k |= XDIGIT;
  if (i > 0x20 && i < 0x7f && !'"<>\\^`{|}'.includes(ch)) k |= URLCHAR;
  ASCII_CLASSES[i] = k;
}

const [DOT, HYPHEN, PLUS, UNDERSCORE, COLON, SLASH, TILDE] = [0x2e, 0x2d, 0x2b, 0x5f, 0x3a, 0x2f, 0x7e] as const;

/** ASCII characters after which a run of ASCII letters is not yet a whole word. */
const WORD_GOES_ON = new Uint8Array(128);
/** ASCII characters that start something other than a blank from the base state. */
const BLANK_STARTS_OTHER = new Uint8Array(128);
/** ASCII characters that end a blank. */
const BLANK_ENDS = new Uint8Array(128);
for (let i = 0; i < 128; i++) {
  const ch = String.fromCharCode(i);
  const alnum = (ASCII_CLASSES[i]! & (ALPHA | DIGIT)) !== 0;
  WORD_GOES_ON[i] = alnum || '.-_@:/'.includes(ch) ? 1 : 0;
  BLANK_STARTS_OTHER[i] = alnum || '<-+&~/.'.includes(ch) ? 1 : 0;
  BLANK_ENDS[i] = alnum || '<-+&/'.includes(ch) ? 1 : 0;
}

/** Spacing combining marks PostgreSQL treats as part of a word (`p_isspecial`'s list). */
const STRANGE_LETTERS = new Set(
  (
    '0903 093E 093F 0940 0949 094A 094B 094C 0982 0983 09BE 09BF 09C0 09C7 09C8 09CB 09CC 09D7 0A03 0A3E 0A3F ' +
    '0A40 0A83 0ABE 0ABF 0AC0 0AC9 0ACB 0ACC 0B02 0B03 0B3E 0B40 0B47 0B48 0B4B 0B4C 0B57 0BBE 0BBF 0BC1 0BC2 ' +
    '0BC6 0BC7 0BC8 0BCA 0BCB 0BCC 0BD7 0C01 0C02 0C03 0C41 0C42 0C43 0C44 0C82 0C83 0CBE 0CC0 0CC1 0CC2 0CC3 ' +
    '0CC4 0CC7 0CC8 0CCA 0CCB 0CD5 0CD6 0D02 0D03 0D3E 0D3F 0D40 0D46 0D47 0D48 0D4A 0D4B 0D4C 0D57 0D82 0D83 ' +
    '0DCF 0DD0 0DD1 0DD8 0DD9 0DDA 0DDB 0DDC 0DDD 0DDE 0DDF 0DF2 0DF3 0F3E 0F3F 0F7F 102B 102C 1031 1038 103B ' +
    '103C 1056 1057 1062 1063 1064 1067 1068 1069 106A 106B 106C 106D 1083 1084 1087 1088 1089 108A 108B 108C ' +
    '108F 17B6 17BE 17BF 17C0 17C1 17C2 17C3 17C4 17C5 17C7 17C8 1923 1924 1925 1926 1929 192A 192B 1930 1931 ' +
    '1933 1934 1935 1936 1937 1938 19B0 19B1 19B2 19B3 19B4 19B5 19B6 19B7 19B8 19B9 19BA 19BB 19BC 19BD 19BE ' +
    '19BF 19C0 19C8 19C9 1A19 1A1A 1A1B 1B04 1B35 1B3B 1B3D 1B3E 1B3F 1B40 1B41 1B43 1B44 1B82 1BA1 1BA6 1BA7 ' +
    '1BAA 1C24 1C25 1C26 1C27 1C28 1C29 1C2A 1C2B 1C34 1C35 A823 A824 A827 A880 A881 A8B4 A8B5 A8B6 A8B7 A8B8 ' +
    'A8B9 A8BA A8BB A8BC A8BD A8BE A8BF A8C0 A8C1 A8C2 A8C3 A952 A953 AA2F AA30 AA33 AA34 AA4D'
  )
    .split(' ')
    .map((h) => parseInt(h, 16)),
);

const UNICODE_ALPHA = /^[\p{Alphabetic}\p{Nd}]$/u;
/**
 * Where this Node's Unicode tables and the database's glibc disagree: marks glibc does not count as
 * letters (only as zero-width), and letters it does not know yet (measured on the BMP against
 * PostgreSQL 18 under C.UTF-8).
 */
const GLIBC_MARKS = ranges(
  '363-36f 892-897 9ff a00 a43-a46 a49-a4a a4e-a50 ac6 b00 b4e-b54 c04 c49 c4e-c54 dd5 f82-f83 f98 1a5f 1a7d-1a7e ' +
    '1ade-1adf 1aec-1aff 1dd3-1de6 2065',
);
const GLIBC_UNKNOWN = ranges('88f c5c cdc cf3 1c89-1c8a a7cb-a7cf a7d2 a7d4 a7da-a7dc a7f1');

function ranges(list: string): Set<number> {
  const out = new Set<number>();
  for (const r of list.split(' ')) {
    const [from, to = from] = r.split('-').map((h) => parseInt(h, 16));
    for (let cp = from!; cp <= to!; cp++) out.add(cp);
  }
  return out;
}
const UNICODE_SPACE = /^[\u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]$/u;
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}]$/u;
/** Classes of the non-ASCII code points met so far (a pure function of the code point). */
let unicodeClasses = new Map<number, number>();
onProcessReset('shared/document-index/ts-parser.ts#unicodeClasses', () => (unicodeClasses = new Map()));

function classesOf(cp: number): number {
  if (cp < 128) return ASCII_CLASSES[cp]!;
  let k = unicodeClasses.get(cp);
  if (k === undefined) {
    const ch = String.fromCodePoint(cp);
    k = 0;
    if (GLIBC_MARKS.has(cp)) k = SPECIAL;
    else if (GLIBC_UNKNOWN.has(cp)) k = 0;
    else if (UNICODE_ALPHA.test(ch)) k |= ALPHA;
    if (UNICODE_SPACE.test(ch)) k |= SPACE;
    if ((cp >= 0xa0 && ZERO_WIDTH.test(ch)) || STRANGE_LETTERS.has(cp)) k |= SPECIAL;
    unicodeClasses.set(cp, k);
  }
  return k;
}

const RULE = 6;

/**
 * The parser over code points `cps[from..end)` (`TParser`); a sub-parser shares the array. Its
 * position stack (`TParserPosition`) is held in parallel arrays, `depth` entries deep.
 */
class Parser {
  ignore = false;
  wantHost = false;
  /** Start of the token being read. */
  private tokenStart = 0;
  /** The last token found: its type, start and length (code points). */
  type = 0;
  start = 0;
  length = 0;
  private readonly pos: number[] = [];
  private readonly len: number[] = [];
  private readonly state: number[] = [];
  /** Rule index that pushed the entry above (-1: none). */
  private readonly pushed: number[] = [];
  private depth = 0;

  constructor(
    readonly cps: Uint32Array,
    from: number,
    readonly end: number,
    state: number = BASE,
  ) {
    this.push(from, 0, BASE);
    if (state !== BASE) this.push(from, 0, state);
  }

  private push(pos: number, len: number, state: number): void {
    const d = this.depth++;
    this.pos[d] = pos;
    this.len[d] = len;
    this.state[d] = state;
    this.pushed[d] = -1;
  }

  /** Copies entry `from` over entry `to`. */
  private copy(from: number, to: number): void {
    this.pos[to] = this.pos[from]!;
    this.len[to] = this.len[from]!;
    this.state[to] = this.state[from]!;
    this.pushed[to] = this.pushed[from]!;
  }

  /** Rule `r` of `rules` for the character `cp` (-1: the end) of classes `k` (the `p_is*` tests). */
  private test(rules: Int32Array, r: number, cp: number, k: number): boolean {
    switch (rules[r]) {
      case T.ANY:
        return true;
      case T.EOF:
        return cp < 0;
      case T.EQ:
        return cp === rules[r + 1];
      case T.IGNORE:
        return this.ignore;
      case T.ASCLET:
        return cp >= 0 && cp < 128 && (k & ALPHA) !== 0;
      case T.ALPHA:
        return (k & ALPHA) !== 0;
      case T.DIGIT:
        return (k & DIGIT) !== 0;
      case T.ALNUM:
        return (k & (ALPHA | DIGIT)) !== 0;
      case T.NOTALNUM:
        return (k & (ALPHA | DIGIT)) === 0;
      case T.SPECIAL:
        return (k & SPECIAL) !== 0;
      case T.SPACE:
        return (k & SPACE) !== 0;
      case T.XDIGIT:
        return (k & XDIGIT) !== 0;
      case T.URLCHAR:
        return (k & URLCHAR) !== 0;
      case T.STOPHOST:
        if (!this.wantHost) return false;
        this.wantHost = false;
        return true;
      case T.HOST:
        return this.subToken(BASE, Y.HOST, true);
      case T.URLPATH:
        return this.subToken(URLPATH_FIRST, Y.URLPATH, false);
    }
    return false;
  }

  /** `p_ishost` / `p_isURLPath`: a token of `type` read from here by a fresh parser extends this one. */
  private subToken(state: number, type: number, wantHost: boolean): boolean {
    const d = this.depth - 1;
    const sub = new Parser(this.cps, this.pos[d]!, this.end, state);
    sub.wantHost = wantHost;
    if (!sub.next() || sub.type !== type) return false;
    this.pos[d]! += sub.length;
    this.len[d]! += sub.length;
    return true;
  }

  private special(kind: number, d: number): void {
    if (kind === SP_TAGS) {
      const name = String.fromCodePoint(...this.cps.subarray(this.tokenStart, this.tokenStart + this.len[d]!));
      const lower = name.toLowerCase();
      if (lower === '</script' || lower === '</style') this.ignore = false;
      else if (lower === '<script' || lower === '<style') this.ignore = true;
    } else if (kind === SP_FURL) {
      this.wantHost = true;
      this.pos[d]! -= this.len[d]!;
    } else if (kind === SP_HYPHEN) {
      this.pos[d]! -= this.len[d]!;
    } else if (kind === SP_VERVERSION) {
      this.pos[d]! -= this.len[d]!;
      this.len[d] = 0;
    }
  }

  /**
   * The two commonest tokens read without the rule tables, where the tables would read them the same
   * way: from the base state, a run of ASCII letters that ends where a word ends, and a blank (a run
   * of non-alphanumerics other than `<-+&/`). Any other start goes through the tables. The tables'
   * tries on the way (a push, then a pop back) leave the stack as it was, at any depth.
   */
  private fast(d: number): boolean {
    const { cps, end } = this;
    const from = this.pos[d]!;
    const first = cps[from]!;
    let i = from + 1;
    if (first < 128 && ASCII_CLASSES[first]! & ALPHA) {
      while (i < end && cps[i]! < 128 && ASCII_CLASSES[cps[i]!]! & ALPHA) i++;
      if (i < end && !this.endsAsciiWord(cps[i]!, i + 1 < end ? cps[i + 1]! : -1)) return false;
      this.type = Y.ASCIIWORD;
    } else {
      if (!this.startsBlank(first, i < end ? cps[i]! : -1)) return false;
      for (; i < end; i++) {
        const ch = cps[i]!;
        if (ch < 128 ? BLANK_ENDS[ch] : classesOf(ch) & (ALPHA | DIGIT)) break;
      }
      this.type = Y.SPACE;
    }
    this.start = from;
    this.length = i - from;
    this.pos[d] = i;
    this.len[d] = 0;
    this.pushed[d] = -1;
    return true;
  }

  /** Whether `ch`, then `next` (-1: the end), close a run of ASCII letters as a word (`InAsciiWord`'s rules). */
  private endsAsciiWord(ch: number, next: number): boolean {
    if (ch >= 128) return (classesOf(ch) & (ALPHA | SPECIAL)) === 0;
    if (!WORD_GOES_ON[ch]) return true;
    const k = next < 0 ? 0 : next < 128 ? ASCII_CLASSES[next]! : classesOf(next) & ~DIGIT;
    const asciiAlnum = next >= 0 && next < 128 && (k & (ALPHA | DIGIT)) !== 0;
    switch (ch) {
      case DOT:
        return !asciiAlnum && next !== UNDERSCORE;
      case HYPHEN:
        return (k & (ALPHA | DIGIT)) === 0;
      case UNDERSCORE:
        return !asciiAlnum;
      case COLON:
        return next !== SLASH;
      case SLASH:
        return !asciiAlnum && next !== DOT && next !== UNDERSCORE && next !== TILDE;
    }
    return false;
  }

  /** Whether `ch`, then `next` (-1: the end), start a blank from the base state (`Base`'s rules). */
  private startsBlank(ch: number, next: number): boolean {
    if (ch >= 128) return (classesOf(ch) & (ALPHA | DIGIT)) === 0;
    if (!BLANK_STARTS_OTHER[ch]) return true;
    const k = next < 0 ? 0 : next < 128 ? ASCII_CLASSES[next]! : 0;
    switch (ch) {
      case DOT:
        return next !== DOT && next !== SLASH;
      case HYPHEN:
      case PLUS:
        return (k & DIGIT) === 0;
      case SLASH:
        return (k & (ALPHA | DIGIT)) === 0 && next !== DOT && next !== UNDERSCORE && next !== TILDE;
    }
    return false;
  }

  /** Reads the next token (`TParserGet`); false at the end of the text. */
  next(): boolean {
    let d = this.depth - 1;
    if (this.pos[d]! >= this.end) return false;
    if (this.state[d] === BASE && !this.ignore && this.fast(d)) return true;
    this.tokenStart = this.pos[d]!;
    this.pushed[d] = -1;
    let flags = 0;
    while (this.pos[d]! <= this.end) {
      const p = this.pos[d]!;
      const cp = p < this.end ? this.cps[p]! : -1;
      const k = cp < 0 ? 0 : cp < 128 ? ASCII_CLASSES[cp]! : classesOf(cp);
      const rules = FLAT[this.state[d]!]!;
      let r = this.pushed[d]! >= 0 ? (this.pushed[d]! + 1) * RULE : 0;
      this.pushed[d] = -1;
      while (!this.test(rules, r, cp, k)) r += RULE;
      flags = rules[r + 2]!;
      if (rules[r + 5]) this.special(rules[r + 5]!, d);
      if (flags & BINGO) {
        this.length = this.len[d]!;
        this.start = this.tokenStart;
        this.len[d] = 0;
        this.type = rules[r + 4]!;
      }
      if (flags & POP) {
        d = --this.depth - 1;
      } else if (flags & PUSH) {
        this.pushed[d] = r / RULE;
        this.push(this.pos[d]!, this.len[d]!, this.state[d]!);
        d++;
      } else if (flags & CLEAR) {
        this.copy(d, d - 1);
        d = --this.depth - 1;
      } else if (flags & CLRALL) {
        this.copy(d, 0);
        this.depth = 1;
        d = 0;
      } else if (flags & MERGE) {
        this.pos[d - 1] = this.pos[d]!;
        this.len[d - 1] = this.len[d]!;
        d = --this.depth - 1;
      }
      if (rules[r + 3] !== STAY) this.state[d] = rules[r + 3]!;
      if (flags & BINGO || (this.pos[d]! >= this.end && !(flags & RERUN))) break;
      if (flags & (RERUN | POP)) continue;
      if (this.pos[d]! < this.end) {
        this.pos[d]!++;
        this.len[d]!++;
      }
    }
    return (flags & BINGO) !== 0;
  }
}

/** The text's code points, and where each starts in the string (null when every one is a single unit). */
/** Code points of the text being parsed, reused from one text to the next. */
let buffer = new Uint32Array(4096);
onProcessReset('shared/document-index/ts-parser.ts#buffer', () => (buffer = new Uint32Array(4096)));
/** The text's UTF-8 bytes, when it is ASCII: a native copy widened to `buffer`, reused from one text to the next. */
let asciiBytes = new Uint8Array(4096);
onProcessReset('shared/document-index/ts-parser.ts#asciiBytes', () => (asciiBytes = new Uint8Array(4096)));
const encoder = new TextEncoder();
/** A text's UTF-16 units (`codePoints`' scratch), and their bytes, where `Buffer#write` writes them. */
const unitsOf = (length: number) => {
  const u16 = new Uint16Array(length);
  return { u16, bytes: Buffer.from(u16.buffer) };
};
let units = unitsOf(4096);
onProcessReset('shared/document-index/ts-parser.ts#units', () => (units = unitsOf(4096)));
const SURROGATE_PAIR = /[\uD800-\uDBFF][\uDC00-\uDFFF]/;
/** Whether `Buffer#write(…, 'utf16le')` writes the units as a `Uint16Array` reads them. */
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

/**
 * The text's code points (in `buffer`, `length` of them), and where each starts in the string (null
 * when every one is a single UTF-16 unit).
 */
function codePoints(text: string): { cps: Uint32Array; length: number; offsets: Uint32Array | null; ascii: boolean } {
  if (buffer.length < text.length) buffer = new Uint32Array(text.length * 2);
  if (asciiBytes.length < text.length) asciiBytes = new Uint8Array(text.length * 2);
  // An ASCII text's UTF-8 bytes are its code points: a native encode and a widening copy, about 20 times
  // faster than the loop below (4,000 characters: 1 µs against 20). Any other character takes two bytes or
  // more, so the encode then stops short of the text's length.
  const { read, written } = encoder.encodeInto(text, asciiBytes.subarray(0, text.length));
  if (read === text.length && written === text.length) {
    buffer.set(asciiBytes.subarray(0, written));
    return { cps: buffer, length: text.length, offsets: null, ascii: true };
  }
  const cps = buffer;
  // Without surrogate pairs the code points are the UTF-16 units: a native write and a widening copy (a
  // 4,000-character text: about 1 µs, against 20 for a loop over its units), on a little-endian machine.
  if (LITTLE_ENDIAN && !SURROGATE_PAIR.test(text)) {
    if (units.u16.length < text.length) units = unitsOf(text.length * 2);
    units.bytes.write(text, 0, text.length * 2, 'utf16le');
    cps.set(units.u16.subarray(0, text.length));
    return { cps, length: text.length, offsets: null, ascii: false };
  }
  const offsets: number[] = [];
  let n = 0;
  for (let i = 0; i < text.length;) {
    const cp = text.codePointAt(i)!;
    cps[n++] = cp;
    offsets.push(i);
    i += cp > 0xffff ? 2 : 1;
  }
  offsets.push(text.length);
  return { cps, length: n, offsets: Uint32Array.from(offsets), ascii: false };
}

/** The tokens of `text` as PostgreSQL's default parser reads them (`ts_parse('default', text)`). */
export function parseTokens(text: string): Token[] {
  const { types, texts } = readTokens(text);
  return types.map((type, i) => ({ type, text: texts[i]! }));
}

/** `parseTokens` as two parallel arrays, the tokens' types and texts (no object per token). */
export function readTokens(text: string): { types: number[]; texts: string[] } {
  const stream = new TokenStream(text);
  const types: number[] = [];
  const texts: string[] = [];
  while (stream.next()) {
    types.push(stream.type);
    texts.push(stream.text);
  }
  return { types, texts };
}

/**
 * The tokens of a text one at a time, as `readTokens` reads them, for a reader that may stop before the end
 * (a snippet needs the text up to its fragment). The code points are in the module's shared buffer: a
 * stream is read before another text is parsed, and not after.
 */
export class TokenStream {
  /** The current token's type, and where its text is in the source (UTF-16 offsets), after `next` answered true. */
  type = 0;
  from = 0;
  to = 0;
  /** Whether every character of the text is ASCII, and whether it holds no surrogate pair (`seek` needs none). */
  readonly ascii: boolean;
  readonly seekable: boolean;
  private parser: Parser;
  private readonly offsets: Uint32Array | null;

  constructor(private readonly source: string) {
    const { cps, length, offsets, ascii } = codePoints(source);
    this.parser = new Parser(cps, 0, length);
    this.offsets = offsets;
    this.ascii = ascii;
    this.seekable = offsets === null;
  }

  /**
   * Reads on from `start` (a UTF-16 offset) as a parser that begins there, in a text without surrogate pairs
   * (its code points are its UTF-16 units). The tokens are those of the whole text from `start` only where
   * the whole text's parser is back in its base state there: the caller knows where (`headline`'s
   * `readingStart`).
   */
  seek(start: number): this {
    if (this.offsets) throw new Error('a stream seeks only in a text without surrogate pairs');
    this.parser = new Parser(this.parser.cps, start, this.parser.end);
    return this;
  }

  /** The current token's text, cut from the source. */
  get text(): string {
    return this.source.slice(this.from, this.to);
  }

  /** Reads the next token; false at the end of the text. */
  next(): boolean {
    const { parser, offsets } = this;
    if (!parser.next()) return false;
    this.from = offsets ? offsets[parser.start]! : parser.start;
    this.to = offsets ? offsets[parser.start + parser.length]! : parser.start + parser.length;
    this.type = parser.type;
    return true;
  }
}
