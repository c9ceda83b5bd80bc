/**
 * Error codes are typed constants (docs/architecture.md "Error codes"): product code never writes one as an
 * inline string literal. A family module is a `shared/` or `workflows/` file marked `@error-codes` in its
 * header; its `export const <Name>Codes = { KEY: 'KEY', … } as const` objects are the registry.
 *
 * An error-code site is: the value of a property `code`, `reason_code`, `warning_code`, `error_code` or
 * `refusalReason` in an object literal; the first argument of a coded error class (`new GitSyncError(…)`, …);
 * a literal compared with such a property (`err.code === 'X'`) or a `case` of `switch (x.code)`; the first
 * argument of `notApplied(…)` or of a function of the same file whose first parameter is `code`; a literal
 * assigned to `code` or `x.code`. A string
 * literal at a site fails this test, naming file and line (use the constant; a new code goes into its family
 * first), unless it is another system's code (FOREIGN below). The rules match the codemod that converted
 * the tree, so re-running it fixes what this test reports.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const PRODUCT = ['api', 'shared', 'activities', 'worker', 'workflows'];
const CODE_PROPS = new Set(['code', 'reason_code', 'warning_code', 'error_code', 'refusalReason']);
const CODED_ERRORS = new Set(['GitSyncError', 'EgressError', 'TrackerReadError', 'InvalidArchiveError']);
const CODED_CALLS = ['notApplied'];
const ZOD_ISSUES = [
  'custom',
  'invalid_type',
  'invalid_union',
  'invalid_value',
  'invalid_format',
  'invalid_key',
  'invalid_element',
  'unrecognized_keys',
  'too_big',
  'too_small',
  'not_multiple_of',
];
const ISOMORPHIC_GIT = ['HttpError', 'NotFoundError', 'SmartHttpError', 'ParseError', 'UnknownTransportError'];
/** Other systems' codes, compared or passed through as they are: Node, undici, PostgreSQL, zod, isomorphic-git. */
const FOREIGN = (v: string) =>
  v === '' ||
  /^E[A-Z0-9_]+$/.test(v) ||
  /^(UND|ERR)_[A-Z0-9_]+$/.test(v) ||
  /^\d{2}[0-9A-Z]{3}$/.test(v) ||
  ZOD_ISSUES.includes(v) ||
  ISOMORPHIC_GIT.includes(v);

const tsFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : tsFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
const isFamily = (text: string) => text.slice(0, 600).includes('@error-codes');
const parse = (file: string, text: string) => ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);

interface Entry {
  family: string;
  key: string;
  value: string;
  file: string;
}

/** The `<Name>Codes` objects of one family module. */
function familyEntries(file: string, text: string): Entry[] {
  const out: Entry[] = [];
  for (const st of parse(file, text).statements) {
    if (!ts.isVariableStatement(st) || !st.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
    for (const d of st.declarationList.declarations) {
      if (!ts.isIdentifier(d.name) || !d.name.text.endsWith('Codes') || !d.initializer) continue;
      let init: ts.Expression = d.initializer;
      while (ts.isAsExpression(init) || ts.isSatisfiesExpression(init)) init = init.expression;
      if (!ts.isObjectLiteralExpression(init)) continue;
      for (const p of init.properties)
        if (ts.isPropertyAssignment(p) && ts.isStringLiteral(p.initializer) && ts.isIdentifier(p.name))
          out.push({ family: d.name.text, key: p.name.text, value: p.initializer.text, file });
    }
  }
  return out;
}

const strip = (n: ts.Expression): ts.Expression => {
  while (ts.isParenthesizedExpression(n) || ts.isAsExpression(n) || ts.isSatisfiesExpression(n)) n = n.expression;
  return n;
};
/** The string literals an expression can evaluate to, through conditionals. */
const literalsOf = (expr: ts.Expression, out: ts.StringLiteralLike[] = []): ts.StringLiteralLike[] => {
  const inner = strip(expr);
  if (ts.isStringLiteralLike(inner)) out.push(inner);
  else if (ts.isConditionalExpression(inner)) {
    literalsOf(inner.whenTrue, out);
    literalsOf(inner.whenFalse, out);
  }
  return out;
};
const isCodeAccess = (n: ts.Expression) => {
  const e = strip(n);
  return ts.isPropertyAccessExpression(e) && CODE_PROPS.has(e.name.text);
};
const EQUALITY = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
]);

/** Functions of this file whose first parameter is `code` (`const refuse = (code: …) => …`), and `notApplied`. */
function codedCalls(sf: ts.SourceFile): Set<string> {
  const names = new Set(CODED_CALLS);
  const visit = (n: ts.Node) => {
    let fn: ts.SignatureDeclaration | null = null;
    let name: string | null = null;
    if (ts.isFunctionDeclaration(n) && n.name) [fn, name] = [n, n.name.text];
    else if (
      ts.isVariableDeclaration(n) &&
      ts.isIdentifier(n.name) &&
      n.initializer &&
      (ts.isArrowFunction(n.initializer) || ts.isFunctionExpression(n.initializer))
    )
      [fn, name] = [n.initializer, n.name.text];
    const first = fn?.parameters[0];
    if (name && first && ts.isIdentifier(first.name) && CODE_PROPS.has(first.name.text)) names.add(name);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return names;
}
const isCodeTarget = (n: ts.Expression) => (ts.isIdentifier(n) && CODE_PROPS.has(n.text)) || isCodeAccess(n);

/** The string literals written at error-code sites of one source text. */
function codeLiterals(file: string, text: string): Array<{ line: number; value: string }> {
  const sf = parse(file, text);
  const calls = codedCalls(sf);
  const found: ts.StringLiteralLike[] = [];
  const visit = (n: ts.Node) => {
    if (
      ts.isPropertyAssignment(n) &&
      (ts.isIdentifier(n.name) || ts.isStringLiteral(n.name)) &&
      CODE_PROPS.has(n.name.text)
    )
      literalsOf(n.initializer, found);
    else if (ts.isNewExpression(n) && ts.isIdentifier(n.expression) && CODED_ERRORS.has(n.expression.text)) {
      const first = n.arguments?.[0];
      if (first) literalsOf(first, found);
    } else if (ts.isBinaryExpression(n) && EQUALITY.has(n.operatorToken.kind)) {
      if (isCodeAccess(n.left)) literalsOf(n.right, found);
      else if (isCodeAccess(n.right)) literalsOf(n.left, found);
    } else if (ts.isCaseClause(n) && isCodeAccess(n.parent.parent.expression)) literalsOf(n.expression, found);
    if (ts.isCallExpression(n) && ts.isIdentifier(n.expression) && calls.has(n.expression.text) && n.arguments[0])
      literalsOf(n.arguments[0], found);
    else if (ts.isBinaryExpression(n) && n.operatorToken.kind === ts.SyntaxKind.EqualsToken && isCodeTarget(n.left))
      literalsOf(n.right, found);
    else if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && CODE_PROPS.has(n.name.text) && n.initializer)
      literalsOf(n.initializer, found);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found
    .filter((lit) => !FOREIGN(lit.text))
    .map((lit) => ({ line: sf.getLineAndCharacterOfPosition(lit.getStart(sf)).line + 1, value: lit.text }));
}

const sources = PRODUCT.flatMap((dir) => tsFiles(path.join(root, dir))).map((file) => ({
  file,
  rel: path.relative(root, file),
  text: readFileSync(file, 'utf8'),
}));
const families = sources.filter((s) => isFamily(s.text));
const entries = families.flatMap((s) => familyEntries(s.rel, s.text));
const registry = new Map(entries.map((e) => [e.value, e]));

describe('error codes as typed constants', () => {
  it('has the families docs/architecture.md lists, each workflow-safe or an existing area module', () => {
    expect(families.map((f) => f.rel).sort()).toEqual(
      [
        'shared/action-review/refusals.ts',
        'shared/agents/error-codes.ts',
        'shared/blueprints/error-codes.ts',
        'shared/crm/error-codes.ts',
        'shared/demo/error-codes.ts',
        'shared/desktop/error-codes.ts',
        'shared/document-index/error-codes.ts',
        'shared/http/egress-policy.ts',
        'shared/http/error-codes.ts',
        'shared/managed-sources/error-codes.ts',
        'shared/missions/error-codes.ts',
        'shared/settings/error-codes.ts',
        'shared/tracker/error-codes.ts',
      ].sort(),
    );
    for (const f of families.filter((s) => s.rel.endsWith('error-codes.ts')))
      expect(f.text.startsWith('// @workflow-safe'), f.rel).toBe(true);
    const docs = readFileSync(path.join(root, 'docs/architecture.md'), 'utf8');
    for (const family of new Set(entries.map((e) => e.family)))
      expect(docs.includes(`\`${family}\``), `${family} listed in docs/architecture.md`).toBe(true);
  });

  it('names each code by its wire string, and puts each code in one family only', () => {
    expect(entries.length).toBeGreaterThan(100);
    for (const e of entries) expect(e.key, `${e.file}: ${e.family}.${e.key}`).toBe(e.value);
    const twice = entries.filter((e, i) => entries.findIndex((o) => o.value === e.value) !== i);
    expect(twice.map((e) => `${e.value} (${e.family}, ${e.file})`)).toEqual([]);
  });

  it('finds inline codes at every kind of site (the scanner itself)', () => {
    const sample = [
      "throw new ConflictError('x', { code: 'BLUEPRINT_NAME_TAKEN' });",
      "const r = { code: 'already_decided' as const, message: 'm' };",
      "const f = { reason_code: ok ? 'no_agent' : 'NOT_REGISTERED_YET' };",
      "throw new GitSyncError('GIT_FAILED', 'm');",
      "if (err.code === 'egress_refused') x();",
      "switch (e.code) { case 'tracker_refused': break; }",
      "const fine = { code: BlueprintCodes.BLUEPRINT_NAME_TAKEN, other: 'already_decided' };",
      "ctx.addIssue({ code: 'custom', message: 'zod' }); if (e.code === 'ENOENT' || e.code === 'HttpError') y();",
      "const refuse = (code: ErrorCode, message: string) => ({ code, message }); refuse('approval_expired', 'm');",
      "return notApplied('merge_refused', 'm'); other('already_decided');",
      "let code = 'SYNC_FAILED'; e.payload.code = 'BLUEPRINT_VERSIONS_RESTORING'; code = '';",
    ].join('\n');
    expect(codeLiterals('sample.ts', sample)).toEqual([
      { line: 1, value: 'BLUEPRINT_NAME_TAKEN' },
      { line: 2, value: 'already_decided' },
      { line: 3, value: 'no_agent' },
      { line: 3, value: 'NOT_REGISTERED_YET' },
      { line: 4, value: 'GIT_FAILED' },
      { line: 5, value: 'egress_refused' },
      { line: 6, value: 'tracker_refused' },
      { line: 9, value: 'approval_expired' },
      { line: 10, value: 'merge_refused' },
      { line: 11, value: 'SYNC_FAILED' },
      { line: 11, value: 'BLUEPRINT_VERSIONS_RESTORING' },
    ]);
  });

  it('finds no error code written as an inline literal in api/, shared/, activities/, worker/, workflows/', () => {
    const offences = sources
      .filter((s) => !isFamily(s.text))
      .flatMap((s) =>
        codeLiterals(s.rel, s.text).map(({ line, value }) => {
          const reg = registry.get(value);
          return reg
            ? `${s.rel}:${line}: '${value}' written inline; use ${reg.family}.${reg.key} (${reg.file})`
            : `${s.rel}:${line}: '${value}' is no registered error code; add it to its family module and use the constant`;
        }),
      );
    expect(offences).toEqual([]);
  });
});
