// Workflow code runs in Temporal's deterministic sandbox: it may import only @temporalio/workflow,
// @temporalio/common and workflow-safe project modules, never Node built-ins, drivers or I/O
// clients. This walks the import graph from workflows/ and fails on anything else.
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
      problems.push(`${path.relative(root, file)}: imports "${spec}" (not workflow-safe)${from ? ` — reached from ${path.relative(root, from)}` : ''}`);
    }
  }
}
for (const entry of readdirSync(path.join(root, 'workflows'))) {
  if (entry.endsWith('.ts')) visit(path.join(root, 'workflows', entry));
}
if (problems.length) {
  console.error('Workflow code must stay deterministic:\n  ' + problems.join('\n  '));
  process.exit(1);
}
console.log(`workflow import check: ${seen.size} modules, all workflow-safe`);
