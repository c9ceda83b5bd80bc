/**
 * The key rotation's re-seal in virtual time: batches with a durable pause between full ones, a
 * second pass when values under an old key reappear, and the refusal to retire anything when a value
 * is unreadable. Stub activities count each batch.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEALED_TABLE_NAMES } from '../../shared/secrets/sealed-columns.js';
import { secretResealWorkflowId, type SecretResealInput } from '../../workflows/secret-reseal-definitions.js';
import { startTimeSkipping } from '../helpers/temporal.js';
import { recorded, stubWorker, timerSeconds } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

const BATCH = 10;
const FULL_TABLE = SEALED_TABLE_NAMES[0]!;

interface Verify {
  remaining: number;
  unreadable: { table: string; column: string; id: string }[];
}

/** Stubs: the first table holds `fullBatches` full batches (then a short one); verification answers in turn. */
function resealStubs(opts: { fullBatches: number; verify: Verify[]; beginStatus?: string }) {
  const served = new Map<string, number>();
  return recorded({
    beginSecretRotation: async () => ({ targetKid: 'k2', status: opts.beginStatus ?? 'running' }),
    resealSecretBatch: async ({ table, afterPk }: { table: string; afterPk: string | null }) => {
      // The batch number within this pass (a pass starts each table with no cursor).
      const n = afterPk === null ? 1 : (served.get(table) ?? 0) + 1;
      served.set(table, n);
      const full = table === FULL_TABLE && n <= opts.fullBatches;
      return { rows: full ? BATCH : 0, lastPk: full ? `${table}-${n}` : afterPk };
    },
    verifySecretRotation: async () => (opts.verify.length > 1 ? opts.verify.shift() : opts.verify[0]),
    retireSecretKeys: async () => ({ retired: ['k1'], remaining: 0 }),
    finishSecretRotation: async () => undefined,
  });
}

async function reseal(stubs: ReturnType<typeof resealStubs>, rotationId: string, pauseMs: number) {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  const input: SecretResealInput = { rotationId, batchSize: BATCH, pauseMs };
  const handle = await env.client.workflow.start('secretResealWorkflow', {
    taskQueue,
    workflowId: secretResealWorkflowId(rotationId),
    args: [input],
  });
  return { handle, result: await worker.runUntil(handle.result()) };
}

describe('secretResealWorkflow', () => {
  it('pauses durably after each full batch, verifies, retires the old keys and completes', async () => {
    const stubs = resealStubs({ fullBatches: 2, verify: [{ remaining: 0, unreadable: [] }] });
    const { handle, result } = await reseal(stubs, 'rot_ok', 30_000);
    expect(result).toEqual({ rotationId: 'rot_ok', targetKid: 'k2', status: 'completed', retired: ['k1'], passes: 1 });
    // Two full batches and a short one in the first table, one short batch in every other table.
    expect(stubs.count('resealSecretBatch')).toBe(SEALED_TABLE_NAMES.length + 2);
    expect(await timerSeconds(handle)).toEqual([30, 30]);
    expect(stubs.count('retireSecretKeys')).toBe(1);
    expect(stubs.calls.finishSecretRotation).toEqual([{ rotationId: 'rot_ok', status: 'completed' }]);
  });

  it('runs another pass when values under an old key remain after the first', async () => {
    const stubs = resealStubs({
      fullBatches: 0,
      verify: [
        { remaining: 3, unreadable: [] },
        { remaining: 0, unreadable: [] },
      ],
    });
    const { handle, result } = await reseal(stubs, 'rot_two_passes', 0);
    expect(result).toMatchObject({ status: 'completed', passes: 2 });
    expect(stubs.count('resealSecretBatch')).toBe(2 * SEALED_TABLE_NAMES.length);
    expect(stubs.count('verifySecretRotation')).toBe(2);
    expect(stubs.count('retireSecretKeys')).toBe(1);
    expect(await timerSeconds(handle)).toEqual([]);
  });

  it('fails without retiring any key when a value no key opens', async () => {
    const stubs = resealStubs({
      fullBatches: 0,
      verify: [{ remaining: 0, unreadable: [{ table: 'llm_providers', column: 'secrets_sealed', id: 'p1' }] }],
    });
    const { result } = await reseal(stubs, 'rot_unreadable', 0);
    expect(result).toEqual({
      rotationId: 'rot_unreadable',
      targetKid: 'k2',
      status: 'failed',
      retired: [],
      passes: 1,
    });
    expect(stubs.count('retireSecretKeys')).toBe(0);
    expect(stubs.calls.finishSecretRotation).toEqual([
      {
        rotationId: 'rot_unreadable',
        status: 'failed',
        error: 'Values no key opens (nothing was retired): llm_providers.secrets_sealed p1',
      },
    ]);
  });

  it('does nothing when the rotation was already completed', async () => {
    const stubs = resealStubs({ fullBatches: 0, verify: [{ remaining: 0, unreadable: [] }], beginStatus: 'completed' });
    const { result } = await reseal(stubs, 'rot_done', 0);
    expect(result).toMatchObject({ status: 'completed', passes: 0, retired: [] });
    expect(stubs.count('resealSecretBatch')).toBe(0);
    expect(stubs.count('finishSecretRotation')).toBe(0);
  });
});
