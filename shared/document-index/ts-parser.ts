// @workflow-safe: pure text functions, no I/O.
/**
 * PostgreSQL's default text search parser (`src/backend/tsearch/wparser_def.c`, PostgreSQL 18) in the
 * API process: the same state machine, state for state and rule for rule, so the tokens and their
 * types are the ones `ts_debug` shows. Character classes are those of a UTF-8 database under a
 * `C.UTF-8` libc locale (glibc's `iswalpha` and friends): ASCII as in C, other letters and other
 * scripts' digits alphabetic, combining marks "special" (part of a word, never its start).
 */

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

// Action flags.
const NEXT = 0;
const BINGO = 1;
const POP = 2;
const PUSH = 4;
const RERUN = 8;
const CLEAR = 16;
const MERGE = 32;
const CLRALL = 64;

// Specials run before an action's flags.
const SP_TAGS = 1;
const SP_FURL = 2;
const SP_HYPHEN = 3;
const SP_VERVERSION = 4;

/** One rule of a state: test (and its character), flags, next state (-1: stay), token type, special. */
type Rule = readonly [test: number, ch: number, flags: number, to: number, type: number, special: number];

const S = {
  Base: 0,
  InNumWord: 1,
  InAsciiWord: 2,
  InWord: 3,
  InUnsignedInt: 4,
  InSignedIntFirst: 5,
  InSignedInt: 6,
  InSpace: 7,
  InUDecimalFirst: 8,
  InUDecimal: 9,
  InDecimalFirst: 10,
  InDecimal: 11,
  InVerVersion: 12,
  InSVerVersion: 13,
  InVersionFirst: 14,
  InVersion: 15,
  InMantissaFirst: 16,
  InMantissaSign: 17,
  InMantissa: 18,
  InXMLEntityFirst: 19,
  InXMLEntity: 20,
  InXMLEntityNumFirst: 21,
  InXMLEntityNum: 22,
  InXMLEntityHexNumFirst: 23,
  InXMLEntityHexNum: 24,
  InXMLEntityEnd: 25,
  InTagFirst: 26,
  InXMLBegin: 27,
  InTagCloseFirst: 28,
  InTagName: 29,
  InTagBeginEnd: 30,
  InTag: 31,
  InTagEscapeK: 32,
  InTagEscapeKK: 33,
  InTagBackSleshed: 34,
  InTagEnd: 35,
  InCommentFirst: 36,
  InCommentLast: 37,
  InComment: 38,
  InCloseCommentFirst: 39,
  InCloseCommentLast: 40,
  InCommentEnd: 41,
  InHostFirstDomain: 42,
  InHostDomainSecond: 43,
  InHostDomain: 44,
  InPortFirst: 45,
  InPort: 46,
  InHostFirstAN: 47,
  InHost: 48,
  InEmail: 49,
  InFileFirst: 50,
  InFileTwiddle: 51,
  InPathFirst: 52,
  InPathFirstFirst: 53,
  InPathSecond: 54,
  InFile: 55,
  InFileNext: 56,
  InURLPathFirst: 57,
  InURLPathStart: 58,
  InURLPath: 59,
  InFURL: 60,
  InProtocolFirst: 61,
  InProtocolSecond: 62,
  InProtocolEnd: 63,
  InHyphenAsciiWordFirst: 64,
  InHyphenAsciiWord: 65,
  InHyphenWordFirst: 66,
  InHyphenWord: 67,
  InHyphenNumWordFirst: 68,
  InHyphenNumWord: 69,
  InHyphenDigitLookahead: 70,
  InParseHyphen: 71,
  InParseHyphenHyphen: 72,
  InHyphenWordPart: 73,
  InHyphenAsciiWordPart: 74,
  InHyphenNumWordPart: 75,
  InHyphenUnsignedInt: 76,
} as const;

const Y = TokenType;
const c = (ch: string) => ch.charCodeAt(0);
/** A rule testing one character. */
const eq = (ch: string, flags: number, to: number, type = 0, special = 0): Rule => [
  T.EQ,
  c(ch),
  flags,
  to,
  type,
  special,
];
/** A rule testing a class. */
const is = (test: number, flags: number, to: number, type = 0, special = 0): Rule => [
  test,
  0,
  flags,
  to,
  type,
  special,
];
const STAY = -1;

/** The rules of each state, in PostgreSQL's order (the first whose test passes applies). */
const RULES: Rule[][] = [];
RULES[S.Base] = [
  is(T.EOF, NEXT, STAY),
  eq('<', PUSH, S.InTagFirst),
  is(T.IGNORE, NEXT, S.InSpace),
  is(T.ASCLET, NEXT, S.InAsciiWord),
  is(T.ALPHA, NEXT, S.InWord),
  is(T.DIGIT, NEXT, S.InUnsignedInt),
  eq('-', PUSH, S.InSignedIntFirst),
  eq('+', PUSH, S.InSignedIntFirst),
  eq('&', PUSH, S.InXMLEntityFirst),
  eq('~', PUSH, S.InFileTwiddle),
  eq('/', PUSH, S.InFileFirst),
  eq('.', PUSH, S.InPathFirstFirst),
  is(T.ANY, NEXT, S.InSpace),
];
RULES[S.InNumWord] = [
  is(T.EOF, BINGO, S.Base, Y.NUMWORD),
  is(T.ALNUM, NEXT, S.InNumWord),
  is(T.SPECIAL, NEXT, S.InNumWord),
  eq('@', PUSH, S.InEmail),
  eq('/', PUSH, S.InFileFirst),
  eq('.', PUSH, S.InFileNext),
  eq('-', PUSH, S.InHyphenNumWordFirst),
  is(T.ANY, BINGO, S.Base, Y.NUMWORD),
];
RULES[S.InAsciiWord] = [
  is(T.EOF, BINGO, S.Base, Y.ASCIIWORD),
  is(T.ASCLET, NEXT, STAY),
  eq('.', PUSH, S.InHostFirstDomain),
  eq('.', PUSH, S.InFileNext),
  eq('-', PUSH, S.InHostFirstAN),
  eq('-', PUSH, S.InHyphenAsciiWordFirst),
  eq('_', PUSH, S.InHostFirstAN),
  eq('@', PUSH, S.InEmail),
  eq(':', PUSH, S.InProtocolFirst),
  eq('/', PUSH, S.InFileFirst),
  is(T.DIGIT, PUSH, S.InHost),
  is(T.DIGIT, NEXT, S.InNumWord),
  is(T.ALPHA, NEXT, S.InWord),
  is(T.SPECIAL, NEXT, S.InWord),
  is(T.ANY, BINGO, S.Base, Y.ASCIIWORD),
];
RULES[S.InWord] = [
  is(T.EOF, BINGO, S.Base, Y.WORD),
  is(T.ALPHA, NEXT, STAY),
  is(T.SPECIAL, NEXT, STAY),
  is(T.DIGIT, NEXT, S.InNumWord),
  eq('-', PUSH, S.InHyphenWordFirst),
  is(T.ANY, BINGO, S.Base, Y.WORD),
];
RULES[S.InUnsignedInt] = [
  is(T.EOF, BINGO, S.Base, Y.UNSIGNEDINT),
  is(T.DIGIT, NEXT, STAY),
  eq('.', PUSH, S.InHostFirstDomain),
  eq('.', PUSH, S.InUDecimalFirst),
  eq('e', PUSH, S.InMantissaFirst),
  eq('E', PUSH, S.InMantissaFirst),
  eq('-', PUSH, S.InHostFirstAN),
  eq('_', PUSH, S.InHostFirstAN),
  eq('@', PUSH, S.InEmail),
  is(T.ASCLET, PUSH, S.InHost),
  is(T.ALPHA, NEXT, S.InNumWord),
  is(T.SPECIAL, NEXT, S.InNumWord),
  eq('/', PUSH, S.InFileFirst),
  is(T.ANY, BINGO, S.Base, Y.UNSIGNEDINT),
];
RULES[S.InSignedIntFirst] = [is(T.EOF, POP, STAY), is(T.DIGIT, NEXT | CLEAR, S.InSignedInt), is(T.ANY, POP, STAY)];
RULES[S.InSignedInt] = [
  is(T.EOF, BINGO, S.Base, Y.SIGNEDINT),
  is(T.DIGIT, NEXT, STAY),
  eq('.', PUSH, S.InDecimalFirst),
  eq('e', PUSH, S.InMantissaFirst),
  eq('E', PUSH, S.InMantissaFirst),
  is(T.ANY, BINGO, S.Base, Y.SIGNEDINT),
];
RULES[S.InSpace] = [
  is(T.EOF, BINGO, S.Base, Y.SPACE),
  eq('<', BINGO, S.Base, Y.SPACE),
  is(T.IGNORE, NEXT, STAY),
  eq('-', BINGO, S.Base, Y.SPACE),
  eq('+', BINGO, S.Base, Y.SPACE),
  eq('&', BINGO, S.Base, Y.SPACE),
  eq('/', BINGO, S.Base, Y.SPACE),
  is(T.NOTALNUM, NEXT, S.InSpace),
  is(T.ANY, BINGO, S.Base, Y.SPACE),
];
RULES[S.InUDecimalFirst] = [is(T.EOF, POP, STAY), is(T.DIGIT, CLEAR, S.InUDecimal), is(T.ANY, POP, STAY)];
RULES[S.InUDecimal] = [
  is(T.EOF, BINGO, S.Base, Y.DECIMAL),
  is(T.DIGIT, NEXT, S.InUDecimal),
  eq('.', PUSH, S.InVersionFirst),
  eq('e', PUSH, S.InMantissaFirst),
  eq('E', PUSH, S.InMantissaFirst),
  is(T.ANY, BINGO, S.Base, Y.DECIMAL),
];
RULES[S.InDecimalFirst] = [is(T.EOF, POP, STAY), is(T.DIGIT, CLEAR, S.InDecimal), is(T.ANY, POP, STAY)];
RULES[S.InDecimal] = [
  is(T.EOF, BINGO, S.Base, Y.DECIMAL),
  is(T.DIGIT, NEXT, S.InDecimal),
  eq('.', PUSH, S.InVerVersion),
  eq('e', PUSH, S.InMantissaFirst),
  eq('E', PUSH, S.InMantissaFirst),
  is(T.ANY, BINGO, S.Base, Y.DECIMAL),
];
RULES[S.InVerVersion] = [
  is(T.EOF, POP, STAY),
  is(T.DIGIT, RERUN, S.InSVerVersion, 0, SP_VERVERSION),
  is(T.ANY, POP, STAY),
];
RULES[S.InSVerVersion] = [
  is(T.EOF, POP, STAY),
  is(T.DIGIT, BINGO | CLRALL, S.InUnsignedInt, Y.SPACE),
  is(T.ANY, NEXT, STAY),
];
RULES[S.InVersionFirst] = [is(T.EOF, POP, STAY), is(T.DIGIT, CLEAR, S.InVersion), is(T.ANY, POP, STAY)];
RULES[S.InVersion] = [
  is(T.EOF, BINGO, S.Base, Y.VERSIONNUMBER),
  is(T.DIGIT, NEXT, S.InVersion),
  eq('.', PUSH, S.InVersionFirst),
  is(T.ANY, BINGO, S.Base, Y.VERSIONNUMBER),
];
RULES[S.InMantissaFirst] = [
  is(T.EOF, POP, STAY),
  is(T.DIGIT, CLEAR, S.InMantissa),
  eq('+', NEXT, S.InMantissaSign),
  eq('-', NEXT, S.InMantissaSign),
  is(T.ANY, POP, STAY),
];
RULES[S.InMantissaSign] = [is(T.EOF, POP, STAY), is(T.DIGIT, CLEAR, S.InMantissa), is(T.ANY, POP, STAY)];
RULES[S.InMantissa] = [
  is(T.EOF, BINGO, S.Base, Y.SCIENTIFIC),
  is(T.DIGIT, NEXT, S.InMantissa),
  is(T.ANY, BINGO, S.Base, Y.SCIENTIFIC),
];
RULES[S.InXMLEntityFirst] = [
  is(T.EOF, POP, STAY),
  eq('#', NEXT, S.InXMLEntityNumFirst),
  is(T.ASCLET, NEXT, S.InXMLEntity),
  eq(':', NEXT, S.InXMLEntity),
  eq('_', NEXT, S.InXMLEntity),
  is(T.ANY, POP, STAY),
];
RULES[S.InXMLEntity] = [
  is(T.EOF, POP, STAY),
  is(T.ALNUM, NEXT, S.InXMLEntity),
  eq(':', NEXT, S.InXMLEntity),
  eq('_', NEXT, S.InXMLEntity),
  eq('.', NEXT, S.InXMLEntity),
  eq('-', NEXT, S.InXMLEntity),
  eq(';', NEXT, S.InXMLEntityEnd),
  is(T.ANY, POP, STAY),
];
RULES[S.InXMLEntityNumFirst] = [
  is(T.EOF, POP, STAY),
  eq('x', NEXT, S.InXMLEntityHexNumFirst),
  eq('X', NEXT, S.InXMLEntityHexNumFirst),
  is(T.DIGIT, NEXT, S.InXMLEntityNum),
  is(T.ANY, POP, STAY),
];
RULES[S.InXMLEntityHexNumFirst] = [is(T.EOF, POP, STAY), is(T.XDIGIT, NEXT, S.InXMLEntityHexNum), is(T.ANY, POP, STAY)];
RULES[S.InXMLEntityNum] = [
  is(T.EOF, POP, STAY),
  is(T.DIGIT, NEXT, S.InXMLEntityNum),
  eq(';', NEXT, S.InXMLEntityEnd),
  is(T.ANY, POP, STAY),
];
RULES[S.InXMLEntityHexNum] = [
  is(T.EOF, POP, STAY),
  is(T.XDIGIT, NEXT, S.InXMLEntityHexNum),
  eq(';', NEXT, S.InXMLEntityEnd),
  is(T.ANY, POP, STAY),
];
RULES[S.InXMLEntityEnd] = [is(T.ANY, BINGO | CLEAR, S.Base, Y.XMLENTITY)];
RULES[S.InTagFirst] = [
  is(T.EOF, POP, STAY),
  eq('/', PUSH, S.InTagCloseFirst),
  eq('!', PUSH, S.InCommentFirst),
  eq('?', PUSH, S.InXMLBegin),
  is(T.ASCLET, PUSH, S.InTagName),
  eq(':', PUSH, S.InTagName),
  eq('_', PUSH, S.InTagName),
  is(T.ANY, POP, STAY),
];
RULES[S.InXMLBegin] = [is(T.EOF, POP, STAY), eq('x', NEXT, S.InTag), is(T.ANY, POP, STAY)];
RULES[S.InTagCloseFirst] = [is(T.EOF, POP, STAY), is(T.ASCLET, NEXT, S.InTagName), is(T.ANY, POP, STAY)];
RULES[S.InTagName] = [
  is(T.EOF, POP, STAY),
  eq('/', NEXT, S.InTagBeginEnd),
  eq('>', NEXT, S.InTagEnd, 0, SP_TAGS),
  is(T.SPACE, NEXT, S.InTag, 0, SP_TAGS),
  is(T.ALNUM, NEXT, STAY),
  eq(':', NEXT, STAY),
  eq('_', NEXT, STAY),
  eq('.', NEXT, STAY),
  eq('-', NEXT, STAY),
  is(T.ANY, POP, STAY),
];
RULES[S.InTagBeginEnd] = [is(T.EOF, POP, STAY), eq('>', NEXT, S.InTagEnd), is(T.ANY, POP, STAY)];
RULES[S.InTag] = [
  is(T.EOF, POP, STAY),
  eq('>', NEXT, S.InTagEnd, 0, SP_TAGS),
  eq("'", NEXT, S.InTagEscapeK),
  eq('"', NEXT, S.InTagEscapeKK),
  is(T.ASCLET, NEXT, STAY),
  is(T.DIGIT, NEXT, STAY),
  ...['=', '-', '_', '#', '/', ':', '.', '&', '?', '%', '~'].map((ch) => eq(ch, NEXT, STAY)),
  is(T.SPACE, NEXT, STAY, 0, SP_TAGS),
  is(T.ANY, POP, STAY),
];
RULES[S.InTagEscapeK] = [
  is(T.EOF, POP, STAY),
  eq('\\', PUSH, S.InTagBackSleshed),
  eq("'", NEXT, S.InTag),
  is(T.ANY, NEXT, S.InTagEscapeK),
];
RULES[S.InTagEscapeKK] = [
  is(T.EOF, POP, STAY),
  eq('\\', PUSH, S.InTagBackSleshed),
  eq('"', NEXT, S.InTag),
  is(T.ANY, NEXT, S.InTagEscapeKK),
];
RULES[S.InTagBackSleshed] = [is(T.EOF, POP, STAY), is(T.ANY, MERGE, STAY)];
RULES[S.InTagEnd] = [is(T.ANY, BINGO | CLRALL, S.Base, Y.TAG)];
RULES[S.InCommentFirst] = [
  is(T.EOF, POP, STAY),
  eq('-', NEXT, S.InCommentLast),
  eq('D', NEXT, S.InTag),
  eq('d', NEXT, S.InTag),
  is(T.ANY, POP, STAY),
];
RULES[S.InCommentLast] = [is(T.EOF, POP, STAY), eq('-', NEXT, S.InComment), is(T.ANY, POP, STAY)];
RULES[S.InComment] = [is(T.EOF, POP, STAY), eq('-', NEXT, S.InCloseCommentFirst), is(T.ANY, NEXT, STAY)];
RULES[S.InCloseCommentFirst] = [
  is(T.EOF, POP, STAY),
  eq('-', NEXT, S.InCloseCommentLast),
  is(T.ANY, NEXT, S.InComment),
];
RULES[S.InCloseCommentLast] = [
  is(T.EOF, POP, STAY),
  eq('-', NEXT, STAY),
  eq('>', NEXT, S.InCommentEnd),
  is(T.ANY, NEXT, S.InComment),
];
RULES[S.InCommentEnd] = [is(T.ANY, BINGO | CLRALL, S.Base, Y.TAG)];
RULES[S.InHostFirstDomain] = [
  is(T.EOF, POP, STAY),
  is(T.ASCLET, NEXT, S.InHostDomainSecond),
  is(T.DIGIT, NEXT, S.InHost),
  is(T.ANY, POP, STAY),
];
RULES[S.InHostDomainSecond] = [
  is(T.EOF, POP, STAY),
  is(T.ASCLET, NEXT, S.InHostDomain),
  is(T.DIGIT, PUSH, S.InHost),
  eq('-', PUSH, S.InHostFirstAN),
  eq('_', PUSH, S.InHostFirstAN),
  eq('.', PUSH, S.InHostFirstDomain),
  eq('@', PUSH, S.InEmail),
  is(T.ANY, POP, STAY),
];
RULES[S.InHostDomain] = [
  is(T.EOF, BINGO | CLRALL, S.Base, Y.HOST),
  is(T.ASCLET, NEXT, S.InHostDomain),
  is(T.DIGIT, PUSH, S.InHost),
  eq(':', PUSH, S.InPortFirst),
  eq('-', PUSH, S.InHostFirstAN),
  eq('_', PUSH, S.InHostFirstAN),
  eq('.', PUSH, S.InHostFirstDomain),
  eq('@', PUSH, S.InEmail),
  is(T.DIGIT, POP, STAY),
  is(T.STOPHOST, BINGO | CLRALL, S.InURLPathStart, Y.HOST),
  eq('/', PUSH, S.InFURL),
  is(T.ANY, BINGO | CLRALL, S.Base, Y.HOST),
];
RULES[S.InPortFirst] = [is(T.EOF, POP, STAY), is(T.DIGIT, NEXT, S.InPort), is(T.ANY, POP, STAY)];
RULES[S.InPort] = [
  is(T.EOF, BINGO | CLRALL, S.Base, Y.HOST),
  is(T.DIGIT, NEXT, S.InPort),
  is(T.STOPHOST, BINGO | CLRALL, S.InURLPathStart, Y.HOST),
  eq('/', PUSH, S.InFURL),
  is(T.ANY, BINGO | CLRALL, S.Base, Y.HOST),
];
RULES[S.InHostFirstAN] = [
  is(T.EOF, POP, STAY),
  is(T.DIGIT, NEXT, S.InHost),
  is(T.ASCLET, NEXT, S.InHost),
  is(T.ANY, POP, STAY),
];
RULES[S.InHost] = [
  is(T.EOF, POP, STAY),
  is(T.DIGIT, NEXT, S.InHost),
  is(T.ASCLET, NEXT, S.InHost),
  eq('@', PUSH, S.InEmail),
  eq('.', PUSH, S.InHostFirstDomain),
  eq('-', PUSH, S.InHostFirstAN),
  eq('_', PUSH, S.InHostFirstAN),
  is(T.ANY, POP, STAY),
];
RULES[S.InEmail] = [is(T.STOPHOST, POP, STAY), is(T.HOST, BINGO | CLRALL, S.Base, Y.EMAIL), is(T.ANY, POP, STAY)];
RULES[S.InFileFirst] = [
  is(T.EOF, POP, STAY),
  is(T.ASCLET, NEXT, S.InFile),
  is(T.DIGIT, NEXT, S.InFile),
  eq('.', NEXT, S.InPathFirst),
  eq('_', NEXT, S.InFile),
  eq('~', PUSH, S.InFileTwiddle),
  is(T.ANY, POP, STAY),
];
RULES[S.InFileTwiddle] = [
  is(T.EOF, POP, STAY),
  is(T.ASCLET, NEXT, S.InFile),
  is(T.DIGIT, NEXT, S.InFile),
  eq('_', NEXT, S.InFile),
  eq('/', NEXT, S.InFileFirst),
  is(T.ANY, POP, STAY),
];
RULES[S.InPathFirst] = [
  is(T.EOF, POP, STAY),
  is(T.ASCLET, NEXT, S.InFile),
  is(T.DIGIT, NEXT, S.InFile),
  eq('_', NEXT, S.InFile),
  eq('.', NEXT, S.InPathSecond),
  eq('/', NEXT, S.InFileFirst),
  is(T.ANY, POP, STAY),
];
RULES[S.InPathFirstFirst] = [
  is(T.EOF, POP, STAY),
  eq('.', NEXT, S.InPathSecond),
  eq('/', NEXT, S.InFileFirst),
  is(T.ANY, POP, STAY),
];
RULES[S.InPathSecond] = [
  is(T.EOF, BINGO | CLEAR, S.Base, Y.FILEPATH),
  eq('/', NEXT | PUSH, S.InFileFirst),
  eq('/', BINGO | CLEAR, S.Base, Y.FILEPATH),
  is(T.SPACE, BINGO | CLEAR, S.Base, Y.FILEPATH),
  is(T.ANY, POP, STAY),
];
RULES[S.InFile] = [
  is(T.EOF, BINGO, S.Base, Y.FILEPATH),
  is(T.ASCLET, NEXT, S.InFile),
  is(T.DIGIT, NEXT, S.InFile),
  eq('.', PUSH, S.InFileNext),
  eq('_', NEXT, S.InFile),
  eq('-', NEXT, S.InFile),
  eq('/', PUSH, S.InFileFirst),
  is(T.ANY, BINGO, S.Base, Y.FILEPATH),
];
RULES[S.InFileNext] = [
  is(T.EOF, POP, STAY),
  is(T.ASCLET, CLEAR, S.InFile),
  is(T.DIGIT, CLEAR, S.InFile),
  eq('_', CLEAR, S.InFile),
  is(T.ANY, POP, STAY),
];
RULES[S.InURLPathFirst] = [is(T.EOF, POP, STAY), is(T.URLCHAR, NEXT, S.InURLPath), is(T.ANY, POP, STAY)];
RULES[S.InURLPathStart] = [is(T.ANY, NEXT, S.InURLPath)];
RULES[S.InURLPath] = [
  is(T.EOF, BINGO, S.Base, Y.URLPATH),
  is(T.URLCHAR, NEXT, S.InURLPath),
  is(T.ANY, BINGO, S.Base, Y.URLPATH),
];
RULES[S.InFURL] = [is(T.EOF, POP, STAY), is(T.URLPATH, BINGO | CLRALL, S.Base, Y.URL, SP_FURL), is(T.ANY, POP, STAY)];
RULES[S.InProtocolFirst] = [is(T.EOF, POP, STAY), eq('/', NEXT, S.InProtocolSecond), is(T.ANY, POP, STAY)];
RULES[S.InProtocolSecond] = [is(T.EOF, POP, STAY), eq('/', NEXT, S.InProtocolEnd), is(T.ANY, POP, STAY)];
RULES[S.InProtocolEnd] = [is(T.ANY, BINGO | CLRALL, S.Base, Y.PROTOCOL)];
RULES[S.InHyphenAsciiWordFirst] = [
  is(T.EOF, POP, STAY),
  is(T.ASCLET, NEXT, S.InHyphenAsciiWord),
  is(T.ALPHA, NEXT, S.InHyphenWord),
  is(T.DIGIT, NEXT, S.InHyphenDigitLookahead),
  is(T.ANY, POP, STAY),
];
RULES[S.InHyphenAsciiWord] = [
  is(T.EOF, BINGO | CLRALL, S.InParseHyphen, Y.ASCIIHWORD, SP_HYPHEN),
  is(T.ASCLET, NEXT, S.InHyphenAsciiWord),
  is(T.ALPHA, NEXT, S.InHyphenWord),
  is(T.SPECIAL, NEXT, S.InHyphenWord),
  is(T.DIGIT, NEXT, S.InHyphenNumWord),
  eq('-', PUSH, S.InHyphenAsciiWordFirst),
  is(T.ANY, BINGO | CLRALL, S.InParseHyphen, Y.ASCIIHWORD, SP_HYPHEN),
];
RULES[S.InHyphenWordFirst] = [
  is(T.EOF, POP, STAY),
  is(T.ALPHA, NEXT, S.InHyphenWord),
  is(T.DIGIT, NEXT, S.InHyphenDigitLookahead),
  is(T.ANY, POP, STAY),
];
RULES[S.InHyphenWord] = [
  is(T.EOF, BINGO | CLRALL, S.InParseHyphen, Y.HWORD, SP_HYPHEN),
  is(T.ALPHA, NEXT, S.InHyphenWord),
  is(T.SPECIAL, NEXT, S.InHyphenWord),
  is(T.DIGIT, NEXT, S.InHyphenNumWord),
  eq('-', PUSH, S.InHyphenWordFirst),
  is(T.ANY, BINGO | CLRALL, S.InParseHyphen, Y.HWORD, SP_HYPHEN),
];
RULES[S.InHyphenNumWordFirst] = [
  is(T.EOF, POP, STAY),
  is(T.ALPHA, NEXT, S.InHyphenNumWord),
  is(T.DIGIT, NEXT, S.InHyphenDigitLookahead),
  is(T.ANY, POP, STAY),
];
RULES[S.InHyphenNumWord] = [
  is(T.EOF, BINGO | CLRALL, S.InParseHyphen, Y.NUMHWORD, SP_HYPHEN),
  is(T.ALNUM, NEXT, S.InHyphenNumWord),
  is(T.SPECIAL, NEXT, S.InHyphenNumWord),
  eq('-', PUSH, S.InHyphenNumWordFirst),
  is(T.ANY, BINGO | CLRALL, S.InParseHyphen, Y.NUMHWORD, SP_HYPHEN),
];
RULES[S.InHyphenDigitLookahead] = [
  is(T.EOF, POP, STAY),
  is(T.DIGIT, NEXT, S.InHyphenDigitLookahead),
  is(T.ALPHA, NEXT, S.InHyphenNumWord),
  is(T.SPECIAL, NEXT, S.InHyphenNumWord),
  is(T.ANY, POP, STAY),
];
RULES[S.InParseHyphen] = [
  is(T.EOF, RERUN, S.Base),
  is(T.ASCLET, NEXT, S.InHyphenAsciiWordPart),
  is(T.ALPHA, NEXT, S.InHyphenWordPart),
  is(T.DIGIT, PUSH, S.InHyphenUnsignedInt),
  eq('-', PUSH, S.InParseHyphenHyphen),
  is(T.ANY, RERUN, S.Base),
];
RULES[S.InParseHyphenHyphen] = [
  is(T.EOF, POP, STAY),
  is(T.ALNUM, BINGO | CLEAR, S.InParseHyphen, Y.SPACE),
  is(T.SPECIAL, BINGO | CLEAR, S.InParseHyphen, Y.SPACE),
  is(T.ANY, POP, STAY),
];
RULES[S.InHyphenWordPart] = [
  is(T.EOF, BINGO, S.Base, Y.PARTHWORD),
  is(T.ALPHA, NEXT, S.InHyphenWordPart),
  is(T.SPECIAL, NEXT, S.InHyphenWordPart),
  is(T.DIGIT, NEXT, S.InHyphenNumWordPart),
  is(T.ANY, BINGO, S.InParseHyphen, Y.PARTHWORD),
];
RULES[S.InHyphenAsciiWordPart] = [
  is(T.EOF, BINGO, S.Base, Y.ASCIIPARTHWORD),
  is(T.ASCLET, NEXT, S.InHyphenAsciiWordPart),
  is(T.ALPHA, NEXT, S.InHyphenWordPart),
  is(T.SPECIAL, NEXT, S.InHyphenWordPart),
  is(T.DIGIT, NEXT, S.InHyphenNumWordPart),
  is(T.ANY, BINGO, S.InParseHyphen, Y.ASCIIPARTHWORD),
];
RULES[S.InHyphenNumWordPart] = [
  is(T.EOF, BINGO, S.Base, Y.NUMPARTHWORD),
  is(T.ALNUM, NEXT, S.InHyphenNumWordPart),
  is(T.SPECIAL, NEXT, S.InHyphenNumWordPart),
  is(T.ANY, BINGO, S.InParseHyphen, Y.NUMPARTHWORD),
];
RULES[S.InHyphenUnsignedInt] = [
  is(T.EOF, POP, STAY),
  is(T.DIGIT, NEXT, STAY),
  is(T.ALPHA, CLEAR, S.InHyphenNumWordPart),
  is(T.SPECIAL, CLEAR, S.InHyphenNumWordPart),
  is(T.ANY, POP, STAY),
];

// Character classes of one code point (bits), for the tests above.
const ALPHA = 1;
const DIGIT = 2;
const SPACE = 4;
const SPECIAL = 8;
const URLCHAR = 16;
const XDIGIT = 32;

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

const DOT = 0x2e;
const HYPHEN = 0x2d;
const PLUS = 0x2b;
const UNDERSCORE = 0x5f;
const COLON = 0x3a;
const SLASH = 0x2f;
const TILDE = 0x7e;

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
const unicodeClasses = new Map<number, number>();

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

/** The rules flattened, six numbers a rule, for the parser's inner loop. */
const FLAT: Int32Array[] = RULES.map((rules) => Int32Array.from(rules.flat()));
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
    state: number = S.Base,
  ) {
    this.push(from, 0, S.Base);
    if (state !== S.Base) this.push(from, 0, state);
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
        return this.subToken(S.Base, Y.HOST, true);
      case T.URLPATH:
        return this.subToken(S.InURLPathFirst, Y.URLPATH, false);
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
    if (this.state[d] === S.Base && !this.ignore && this.fast(d)) return true;
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

/**
 * The text's code points (in `buffer`, `length` of them), and where each starts in the string (null
 * when every one is a single UTF-16 unit).
 */
function codePoints(text: string): { cps: Uint32Array; length: number; offsets: Uint32Array | null } {
  if (buffer.length < text.length) buffer = new Uint32Array(text.length * 2);
  const cps = buffer;
  let astral = false;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit < 0xdc00 && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low < 0xe000) astral = true;
    }
    cps[i] = unit;
  }
  if (!astral) return { cps, length: text.length, offsets: null };
  const offsets: number[] = [];
  let n = 0;
  for (let i = 0; i < text.length;) {
    const cp = text.codePointAt(i)!;
    cps[n++] = cp;
    offsets.push(i);
    i += cp > 0xffff ? 2 : 1;
  }
  offsets.push(text.length);
  return { cps, length: n, offsets: Uint32Array.from(offsets) };
}

/** The tokens of `text` as PostgreSQL's default parser reads them (`ts_parse('default', text)`). */
export function parseTokens(text: string): Token[] {
  const { cps, length, offsets } = codePoints(text);
  const parser = new Parser(cps, 0, length);
  const tokens: Token[] = [];
  while (parser.next()) {
    const from = offsets ? offsets[parser.start]! : parser.start;
    const to = offsets ? offsets[parser.start + parser.length]! : parser.start + parser.length;
    tokens.push({ type: parser.type, text: text.slice(from, to) });
  }
  return tokens;
}
