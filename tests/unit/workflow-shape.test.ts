/**
 * Workflows keep the proposal workflow's shape (issue 29): no function in workflows/ is longer than
 * 60 lines (state object, named handlers, helpers for branches), and every `proxyActivities` call
 * names a profile of shared/temporal/activity-profiles.ts instead of hand-writing its options.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MAX_FUNCTION_LINES = 60;

/** Files excused by name, with the reason (none today: every workflow module holds to the shape). */
const KNOWN_EXCEPTIONS: Record<string, string> = {};

function workflowSources(): { file: string; source: ts.SourceFile }[] {
  const dir = path.join(root, 'workflows');
  return readdirSync(dir)
    .filter((entry) => entry.endsWith('.ts'))
    .map((entry) => {
      const file = `workflows/${entry}`;
      const text = readFileSync(path.join(dir, entry), 'utf8');
      return { file, source: ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true) };
    });
}

function visit(node: ts.Node, each: (node: ts.Node) => void): void {
  each(node);
  ts.forEachChild(node, (child) => visit(child, each));
}

const lineOf = (source: ts.SourceFile, pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;

/** A function declaration, a method, or a function bound to a name (`const f = () => …`). */
function namedFunction(node: ts.Node): string | null {
  if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name) return node.name.getText();
  const bound = (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) && ts.isVariableDeclaration(node.parent);
  return bound ? node.parent.name.getText() : null;
}

function longFunctions(file: string, source: ts.SourceFile): string[] {
  const found: string[] = [];
  visit(source, (node) => {
    const name = namedFunction(node);
    if (name === null) return;
    const lines = lineOf(source, node.getEnd()) - lineOf(source, node.getStart()) + 1;
    if (lines > MAX_FUNCTION_LINES) found.push(`${file}: ${name} is ${lines} lines`);
  });
  return found;
}

/** `ActivityProfiles.name`, or `ActivityProfiles.name(…)` for a profile computed from the input. */
function namesAProfile(arg: ts.Expression | undefined): boolean {
  const target = arg && ts.isCallExpression(arg) ? arg.expression : arg;
  return !!target && ts.isPropertyAccessExpression(target) && target.expression.getText() === 'ActivityProfiles';
}

function handWrittenOptions(file: string, source: ts.SourceFile): string[] {
  const found: string[] = [];
  visit(source, (node) => {
    if (!ts.isCallExpression(node) || node.expression.getText() !== 'proxyActivities') return;
    if (!namesAProfile(node.arguments[0])) found.push(`${file}:${lineOf(source, node.getStart())}`);
  });
  return found;
}

describe('workflow shape', () => {
  const sources = workflowSources().filter(({ file }) => !(file in KNOWN_EXCEPTIONS));

  it('reads every workflow module', () => {
    expect(sources.length).toBeGreaterThan(20);
  });

  it(`no workflow function is longer than ${MAX_FUNCTION_LINES} lines`, () => {
    expect(sources.flatMap(({ file, source }) => longFunctions(file, source))).toEqual([]);
  });

  it('every proxyActivities call names a profile of shared/temporal/activity-profiles.ts', () => {
    expect(sources.flatMap(({ file, source }) => handWrittenOptions(file, source))).toEqual([]);
  });
});
