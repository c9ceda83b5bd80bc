/**
 * How `vitest.config.ts` splits and orders the suite (issue 30): the files that start a stack share a
 * process per worker, the long poles start first on a clean clone (no duration cache), and each
 * project's files stay together so a shared worker moves from one stack file to the next.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { testProjects } from '../setup/projects.js';
import { longPolesFirst } from '../setup/sequencer.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const files = testProjects(root);

describe('test projects', () => {
  it('puts the files that start a stack or a worker with the activities (directly or through a support module) in the stack project', () => {
    expect(files.stack).toContain('tests/api/stack-reuse.test.ts');
    expect(files.stack).toContain('tests/workflow/echo.test.ts');
    expect(files.stack).toContain('tests/agents/agents-api.test.ts');
    expect(files.stack.filter((f) => f.startsWith('tests/crm/')).length).toBeGreaterThan(3);
    expect(files.stack.filter((f) => f.startsWith('tests/unit/'))).toEqual([]);
    expect(files.kills).toContain('tests/threads/worker-sigkill.test.ts');
    expect(files.kills.every((f) => files.stack.includes(f))).toBe(true);
  });

  it('keeps the fuzzer, chaos, the gate and e2e in their own processes', () => {
    expect(files.isolated).toEqual(
      expect.arrayContaining([
        'tests/fuzz/schemathesis.test.ts',
        'tests/chaos/action-review-worker-kills.test.ts',
        'tests/gate/exit-status.test.ts',
        'tests/e2e/start.test.ts',
      ]),
    );
    expect(files.isolated.some((f) => files.stack.includes(f))).toBe(false);
  });
});

describe('test order on a clean clone', () => {
  // Without a cache vitest orders by project name, then by size: here, alphabetically within each project.
  const project = (f: string) => (files.isolated.includes(f) ? 'isolated' : files.stack.includes(f) ? 'stack' : 'unit');
  const all = [...files.isolated, ...files.stack, 'tests/unit/config.test.ts', 'tests/unit/errors.test.ts'];
  const specs = [...all].sort().map((f) => ({ moduleId: `${root}${f}`, project: { name: project(f) } }));
  const order = longPolesFirst(specs, root, files).map((s) => s.moduleId.slice(root.length));

  it('starts the long poles first: fuzzer, chaos, gate, e2e, then the stack files that SIGKILL workers', () => {
    // Every chaos file (alphabetically, as vitest lists them without a cache) between the fuzzer and the gate.
    const chaos = files.isolated.filter((f) => f.startsWith('tests/chaos/')).sort();
    expect(chaos).toContain('tests/chaos/action-review-worker-kills.test.ts');
    expect(order.slice(0, chaos.length + 2)).toEqual([
      'tests/fuzz/schemathesis.test.ts',
      ...chaos,
      'tests/gate/exit-status.test.ts',
    ]);
    expect(order.slice(chaos.length + 2, files.isolated.length).every((f) => f.startsWith('tests/e2e/'))).toBe(true);
    const next = order.slice(files.isolated.length, files.isolated.length + files.kills.length);
    // The cloud worker crash, once the first of these, is a chaos file now (tests/chaos/code-agent-kills): it starts
    // with the chaos files above; the stack files that SIGKILL workers follow the isolated ones in vitest's order.
    expect(chaos).toContain('tests/chaos/code-agent-kills.test.ts');
    expect(next).toEqual([...files.kills].sort());
    expect([...next].sort()).toEqual([...files.kills].sort());
  });

  it('keeps each project together, unit last, every file once', () => {
    const projects = order.map(project);
    expect(projects).toEqual([
      ...files.isolated.map(() => 'isolated'),
      ...files.stack.map(() => 'stack'),
      'unit',
      'unit',
    ]);
    expect([...order].sort()).toEqual([...all].sort());
  });
});
