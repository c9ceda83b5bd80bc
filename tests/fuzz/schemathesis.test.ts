/**
 * A third-party fuzzer against the whole running stack, with authentication ON, in every `npm test`:
 * schemathesis generates requests from /openapi.json and fails on server errors, undocumented
 * statuses, responses that break their schema, and schema-valid requests the API refuses
 * (`tests/fuzz/fuzz-run.ts` says which checks run where, and why a few operations skip the last one).
 *
 * The fuzzer invents hosts (a CRM connection's login host, an issuer), so the run happens inside a
 * new network namespace where only loopback exists; `PLATFORM_EGRESS_ALLOW_PRIVATE=false` says the
 * same to the product wherever it runs. Without the rights to create a namespace the test says so
 * and runs on loopback.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { resolveSchemathesis } from '../../scripts/lib/temporal-binaries.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** Time schemathesis may spend generating (two passes share it); the stack's start and stop come on top. */
const FUZZ_SECONDS = Number(process.env.FUZZ_MAX_SECONDS ?? 120);

function canIsolateNetwork(): boolean {
  return spawnSync('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up'], { stdio: 'ignore' }).status === 0;
}

describe('schemathesis against the running stack', () => {
  it(
    'finds no server error, undocumented status, schema violation or refused valid request',
    { timeout: (FUZZ_SECONDS + 240) * 1000 },
    async () => {
      const st = await resolveSchemathesis((line) => process.stderr.write(`[fuzz] ${line}\n`));
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        SCHEMATHESIS_BIN: st,
        FUZZ_MAX_SECONDS: String(FUZZ_SECONDS),
        TEMPORAL_CLI_PATH: inject('temporalCliPath'),
        // The run's workflow bundle: the stack's worker does not bundle the workflows again.
        WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
      };
      for (const name of Object.keys(env))
        if (name.startsWith('VITEST') || name === 'DATABASE_URL' || name === 'TEMPORAL_ADDRESS') delete env[name];
      const script = `exec ${JSON.stringify(process.execPath)} --import tsx tests/fuzz/fuzz-run.ts`;
      const isolated = canIsolateNetwork();
      if (!isolated)
        process.stderr.write(
          '[fuzz] cannot create a network namespace here: fuzzing on loopback with the egress policy set to loopback only\n',
        );
      const child = isolated
        ? spawn('unshare', ['-n', '--', 'sh', '-c', `ip link set lo up && ${script}`], {
            cwd: root,
            env,
            stdio: ['ignore', 'pipe', 'pipe'],
          })
        : spawn('sh', ['-c', script], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
      // The summaries are read from stdout alone: a stderr chunk (the stack's logs) landing between two reads of
      // one stdout line would split a summary in a single combined buffer. Decoded as UTF-8 per stream, so a
      // character cut between two chunks is not mangled either.
      let stdout = '';
      let output = '';
      child.stdout!.setEncoding('utf8');
      child.stderr!.setEncoding('utf8');
      child.stdout!.on('data', (d: string) => {
        stdout += d;
        output += d;
      });
      child.stderr!.on('data', (d: string) => (output += d));
      // 'close', not 'exit': 'exit' may come while the pipes still hold the last output, and the second
      // pass's summary is at its very end (the flaky "only one summary" failure).
      const [code] = (await once(child, 'close')) as [number | null];
      // On failure the report is the assertion message: each failing operation, its check and a curl to reproduce it.
      if (code !== 0) expect.fail(`schemathesis failed (exit ${code}):\n${output.slice(-20_000)}`);
      const summaries = stdout.match(/(\d+) generated, \1 passed/g) ?? [];
      expect(summaries).toHaveLength(2);
      process.stdout.write(`[fuzz] ${isolated ? 'in a network namespace' : 'on loopback'}: ${summaries.join('; ')}\n`);
    },
  );
});
