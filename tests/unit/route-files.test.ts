/**
 * Route files are HTTP adapters only (issue 29): in every `api/routes/*.ts`, no function (a route
 * handler, a top-level or nested helper, a callback) is longer than 25 lines, and nothing is imported
 * from `shared/db/` (entities, sql, orm): persistence and logic live in the area's `shared/<area>/`
 * services, the route file holds schemas and the route table.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const routesDir = path.join(root, 'api', 'routes');
const MAX_FUNCTION_LINES = 25;

function routeSources(): { file: string; source: ts.SourceFile }[] {
  return readdirSync(routesDir)
    .filter((entry) => entry.endsWith('.ts'))
    .map((entry) => {
      const file = `api/routes/${entry}`;
      const text = readFileSync(path.join(routesDir, entry), 'utf8');
      return { file, source: ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true) };
    });
}

function visit(node: ts.Node, each: (node: ts.Node) => void): void {
  each(node);
  ts.forEachChild(node, (child) => visit(child, each));
}

const lineOf = (source: ts.SourceFile, pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;

/** The `operationId` of the `defineRoute({...})` object a handler property belongs to, if any. */
function operationIdOf(property: ts.Node): string | null {
  const object = property.parent;
  if (!object || !ts.isObjectLiteralExpression(object)) return null;
  for (const member of object.properties) {
    if (ts.isPropertyAssignment(member) && member.name.getText() === 'operationId') {
      return member.initializer.getText().replace(/^['"`]|['"`]$/g, '');
    }
  }
  return null;
}

/** How a function reads in a failure: its own name, the name it is bound to, or where it starts. */
function functionName(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): string {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent)) return parent.name.getText();
  if (ts.isPropertyAssignment(parent)) {
    const operationId = operationIdOf(parent);
    const key = parent.name.getText();
    return operationId ? `${key} of ${operationId}` : key;
  }
  return `function at line ${lineOf(source, node.getStart())}`;
}

function isFunction(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isConstructorDeclaration(node)
  );
}

function longFunctions(file: string, source: ts.SourceFile): string[] {
  const found: string[] = [];
  visit(source, (node) => {
    if (!isFunction(node)) return;
    const lines = lineOf(source, node.getEnd()) - lineOf(source, node.getStart()) + 1;
    if (lines > MAX_FUNCTION_LINES) found.push(`${file}: ${functionName(node, source)} is ${lines} lines`);
  });
  return found;
}

/** Module names a file loads: import and export declarations, `import type`, `import()` and `require()`. */
function loadedModules(source: ts.SourceFile): string[] {
  const names: string[] = [];
  visit(source, (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) names.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.arguments.length > 0 && ts.isStringLiteral(node.arguments[0])) {
      const dynamic = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const required = ts.isIdentifier(node.expression) && node.expression.text === 'require';
      if (dynamic || required) names.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const literal = node.argument.literal;
      if (ts.isStringLiteral(literal)) names.push(literal.text);
    }
  });
  return names;
}

function databaseImports(file: string, source: ts.SourceFile): string[] {
  const dbDir = path.join(root, 'shared', 'db') + path.sep;
  return loadedModules(source)
    .filter((name) => name.startsWith('.'))
    .filter((name) => path.resolve(routesDir, name).startsWith(dbDir))
    .map((name) => `${file}: imports ${name}`);
}

describe('route files are HTTP adapters', () => {
  const sources = routeSources();

  it('finds the route files', () => {
    expect(sources.length).toBeGreaterThan(30);
  });

  it(`has no function longer than ${MAX_FUNCTION_LINES} lines`, () => {
    const found = sources.flatMap(({ file, source }) => longFunctions(file, source));
    expect(found, found.join('\n')).toEqual([]);
  });

  it('imports nothing from shared/db/', () => {
    const found = sources.flatMap(({ file, source }) => databaseImports(file, source));
    expect(found, found.join('\n')).toEqual([]);
  });

  it('holds every route file to the rules, with no exemption', () => {
    const onDisk = readdirSync(routesDir).filter((entry) => entry.endsWith('.ts'));
    expect(sources.map(({ file }) => file).sort()).toEqual(onDisk.map((entry) => `api/routes/${entry}`).sort());
    expect(sources.map(({ file }) => file)).toContain('api/routes/managed-sources.ts');
  });
});
