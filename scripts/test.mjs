// `npm test`: every lint step beside `vitest run`, not before it. The suite waits mostly on its servers
// (PostgreSQL, Temporal, the API) and spends minutes starting them, so the lint steps run one after
// another in the meantime. Each step's output is kept and shown when it fails (a passing step prints one
// line); the exit status is non-zero when vitest or any step failed.
// `npm run lint` (`node scripts/test.mjs --lint`) runs the same steps alone, stopping at the first failure.
// Type-aware ESLint builds the type program but does not report compiler errors, so `tsc` stays a step.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);

/** The lint steps, quick ones first. */
export const LINT_STEPS = [
  { name: 'prettier', cmd: bin('prettier'), args: ['--check', '.'] },
  { name: 'workflow imports', cmd: process.execPath, args: ['scripts/check-workflow-imports.mjs'] },
  { name: 'lint:deps', cmd: 'npm', args: ['run', '--silent', 'lint:deps'] },
  { name: 'typecheck', cmd: bin('tsc'), args: ['-p', 'tsconfig.json', '--noEmit'] },
  { name: 'eslint', cmd: bin('eslint'), args: ['.'] },
];

const children = new Set();

/** Runs one command; `capture` keeps its output (stdout and stderr, in order) instead of showing it. */
function run(cmd, args, { capture }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(cmd, args, { cwd: root, stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    children.add(child);
    let output = '';
    child.stdout?.on('data', (d) => (output += d));
    child.stderr?.on('data', (d) => (output += d));
    child.on('error', (err) => (output += `${err.message}\n`));
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve({ ok: code === 0, code: code ?? signal, output, seconds: Math.round((Date.now() - started) / 1000) });
    });
  });
}

/** The lint steps one after another; `stopAtFailure` for `npm run lint`. Returns the names of those that failed. */
async function lint({ capture, stopAtFailure }) {
  const failed = [];
  for (const step of LINT_STEPS) {
    const result = await run(step.cmd, step.args, { capture });
    if (result.ok) {
      if (capture) process.stdout.write(`[lint] ✓ ${step.name} (${result.seconds} s)\n`);
      continue;
    }
    failed.push(step.name);
    process.stdout.write(
      `\n[lint] ✗ ${step.name} failed (exit ${result.code}, ${result.seconds} s)${capture ? `:\n${result.output.trimEnd()}\n` : '\n'}\n`,
    );
    if (stopAtFailure) break;
  }
  return failed;
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
  });
}

if (process.argv.includes('--lint')) {
  const failed = await lint({ capture: false, stopAtFailure: true });
  process.exit(failed.length ? 1 : 0);
}

const [tests, failed] = await Promise.all([
  run(bin('vitest'), ['run', ...process.argv.slice(2)], { capture: false }),
  lint({ capture: true, stopAtFailure: false }),
]);
if (failed.length) process.stdout.write(`\nlint: ${failed.length} failed (${failed.join(', ')})\n`);
if (!tests.ok) process.stdout.write(`\nvitest exited ${tests.code}\n`);
process.exit(tests.ok && !failed.length ? 0 : 1);
