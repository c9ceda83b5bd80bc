// Workflow code runs in Temporal's deterministic sandbox: it may import only @temporalio/workflow,
// @temporalio/common and workflow-safe project modules, never Node built-ins, drivers or I/O
// clients. This walks the import graph from workflows/ and fails on anything else.
// Project modules outside workflows/ say they are workflow-safe with a `@workflow-safe` tag at the
// top (see shared/README.md): a module workflows reach must carry it, and every tagged module is
// walked too, so the tag stays true even before a workflow imports it.
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readdirSync } from 'node:fs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const allowedPackages = [/^@temporalio\/workflow$/, /^@temporalio\/common(\/|$)/, /^zod$/];
const importRe = /^\s*(import|export)\s+(?!type\b)(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm;

const problems = [];
const seen = new Set();
function visit(file, from) {
  if (seen.has(file)) return;
  seen.add(file);
  const source = readFileSync(file, 'utf8');
  for (const match of source.matchAll(importRe)) {
    const spec = match[2];
    if (spec.startsWith('.')) {
      const target = path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'));
      if (!existsSync(target)) problems.push(`${path.relative(root, file)}: cannot resolve ${spec}`);
      else visit(target, file);
    } else if (!allowedPackages.some((re) => re.test(spec))) {
      problems.push(
        `${path.relative(root, file)}: imports "${spec}" (not workflow-safe)${from ? ` — reached from ${path.relative(root, from)}` : ''}`,
      );
    }
  }
}
for (const entry of readdirSync(path.join(root, 'workflows'))) {
  if (entry.endsWith('.ts')) visit(path.join(root, 'workflows', entry));
}
const TAG = '@workflow-safe';
const tagged = (file) => readFileSync(file, 'utf8').slice(0, 400).includes(TAG);
const sharedModules = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sharedModules(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
const reachedFromWorkflows = [...seen];
for (const file of sharedModules(path.join(root, 'shared'))) if (tagged(file)) visit(file);
for (const file of reachedFromWorkflows) {
  if (!file.startsWith(path.join(root, 'workflows') + path.sep) && !tagged(file)) {
    problems.push(
      `${path.relative(root, file)}: imported by workflow code but not tagged ${TAG} (see shared/README.md)`,
    );
  }
}
if (problems.length) {
  console.error('Workflow code must stay deterministic:\n  ' + problems.join('\n  '));
  process.exit(1);
}
console.log(`workflow import check: ${seen.size} modules, all workflow-safe`);
