import { continueAsNew, proxyActivities, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { SecretActivities } from '../activities/secrets.js';
import { SEALED_TABLE_NAMES } from '../shared/secrets/sealed-columns.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import { SearchAttributes } from '../shared/temporal/search-attributes.js';
import type { SecretResealInput, SecretResealResult } from './secret-reseal-definitions.js';
import { setLifecycleStatus, trackFailure } from './visibility.js';

const { beginSecretRotation, resealSecretBatch, verifySecretRotation, retireSecretKeys, finishSecretRotation } =
  proxyActivities<SecretActivities>(ActivityProfiles.databaseBatch);

/** Verify-and-retry passes before the rotation gives up (writers under an old keyring keep appearing). */
const MAX_PASSES = 20;

/**
 * Enabling or rotating the encryption key (shared/secrets/rotation.ts): activate the new key, re-seal
 * every sealed value of every table in SEALED_TABLES in batches, verify that each opens and is under
 * the new key, and only then retire the old keys. A killed worker resumes at the batch it was in (each
 * batch is one idempotent transaction); an unreadable value fails the rotation with nothing retired.
 */
export async function secretResealWorkflow(input: SecretResealInput): Promise<SecretResealResult> {
  return trackFailure('secretResealWorkflow', async () => {
    const { rotationId, batchSize, pauseMs } = input;
    const begun = await beginSecretRotation(rotationId);
    const targetKid = begun.targetKid;
    if (begun.status !== 'running') {
      setLifecycleStatus('secretResealWorkflow', begun.status === 'completed' ? 'completed' : 'failed');
      return {
        rotationId,
        targetKid,
        status: begun.status === 'completed' ? 'completed' : 'failed',
        retired: [],
        passes: 0,
      };
    }
    upsertSearchAttributes([{ key: SearchAttributes.status, value: 'running' }]);
    let pass = input.resume?.pass ?? 1;
    let startTable = input.resume?.tableIndex ?? 0;
    let startAfter = input.resume?.afterPk ?? null;
    for (; pass <= MAX_PASSES; pass++) {
      for (let ti = startTable; ti < SEALED_TABLE_NAMES.length; ti++) {
        let afterPk = ti === startTable ? startAfter : null;
        for (;;) {
          const r = await resealSecretBatch({ rotationId, table: SEALED_TABLE_NAMES[ti]!, afterPk, batchSize });
          afterPk = r.lastPk;
          if (r.rows < batchSize) break;
          if (pauseMs > 0) await sleep(pauseMs);
          if (workflowInfo().continueAsNewSuggested)
            await continueAsNew<typeof secretResealWorkflow>({ ...input, resume: { pass, tableIndex: ti, afterPk } });
        }
      }
      startTable = 0;
      startAfter = null;
      const verified = await verifySecretRotation(rotationId);
      if (verified.unreadable.length > 0) {
        const named = verified.unreadable.map((u) => `${u.table}.${u.column} ${u.id}`).join(', ');
        await finishSecretRotation({
          rotationId,
          status: 'failed',
          error: `Values no key opens (nothing was retired): ${named}`,
        });
        upsertSearchAttributes([{ key: SearchAttributes.status, value: 'failed' }]);
        return { rotationId, targetKid, status: 'failed', retired: [], passes: pass };
      }
      if (verified.remaining > 0) continue;
      const retired = await retireSecretKeys(rotationId);
      if (retired.remaining > 0) continue;
      await finishSecretRotation({ rotationId, status: 'completed' });
      upsertSearchAttributes([{ key: SearchAttributes.status, value: 'completed' }]);
      return { rotationId, targetKid, status: 'completed', retired: retired.retired, passes: pass };
    }
    await finishSecretRotation({
      rotationId,
      status: 'failed',
      error: `Values kept appearing under an old key after ${MAX_PASSES} passes; nothing was retired. Enable again to retry.`,
    });
    upsertSearchAttributes([{ key: SearchAttributes.status, value: 'failed' }]);
    return { rotationId, targetKid, status: 'failed', retired: [], passes: MAX_PASSES };
  });
}
