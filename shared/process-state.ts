/**
 * State a module keeps for the whole process rather than for one app (the keyring rows it last read,
 * the tenants it has seeded, its random signing key, token caches…). Each such module registers here
 * how to forget it, under its own name; `resetProcessState()` forgets all of it, so that a process
 * which runs one app after another (the test suite's shared workers: one process, one database per
 * test file) gives each app what a fresh process would have. A deployment runs one app per process
 * and never calls it. `tests/unit/process-state.test.ts` fails on module state that is not registered.
 */
const resets = new Map<string, () => void>();

/** Registers how to forget one module's process state; `name` is `<file>#<binding>` (unique). */
export function onProcessReset(name: string, reset: () => void): void {
  resets.set(name, reset);
}

/** Forgets every registered module's process state, as if the process had just started. */
export function resetProcessState(): void {
  for (const reset of resets.values()) reset();
}

/** The names registered so far (modules register when loaded). */
export function processStateNames(): string[] {
  return [...resets.keys()];
}
