import {
  condition,
  continueAsNew,
  defineSignal,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { BlueprintRenameActivities } from '../activities/blueprint-rename.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import {
  BLUEPRINT_RENAME_POLL_SECONDS,
  BLUEPRINT_RENAME_SYNCED_SIGNAL,
  type BlueprintRenameInput,
  type BlueprintRenameResult,
} from './blueprint-rename-definitions.js';
import { trackOutcome } from './visibility.js';

const db = proxyActivities<BlueprintRenameActivities>(ActivityProfiles.database);
export const blueprintRenameSyncedSignal = defineSignal(BLUEPRINT_RENAME_SYNCED_SIGNAL);

/**
 * `blueprint-rename/<blueprint_id>`: a remote-backed blueprint's rename whose pull request is open.
 * The truth is in the database (the blueprint row's `source_path`, written by each source sync): the
 * workflow checks it, then sleeps until a sync signals it or the hourly backstop poll, and applies the
 * rename (the local rename code) once a sync saw the renamed directory with the same blueprint_id.
 * After the deadline (30 days) the pending rename is dropped (`expired`).
 */
export async function blueprintRenameWorkflow(input: BlueprintRenameInput): Promise<BlueprintRenameResult> {
  return trackOutcome(
    'blueprintRenameWorkflow',
    () => awaitRename(input),
    ({ status }) => status,
  );
}

async function awaitRename(input: BlueprintRenameInput): Promise<BlueprintRenameResult> {
  let synced = false;
  setHandler(blueprintRenameSyncedSignal, () => {
    synced = true;
  });
  for (;;) {
    synced = false;
    const check = await db.blueprintRenameCheck(input);
    if (check.status === 'applied') return check;
    if (check.status === 'gone') return check;
    const remaining = input.deadlineMs - Date.now();
    if (remaining <= 0) {
      await db.blueprintRenameExpire(input);
      return { status: 'expired', reason: check.reason };
    }
    await condition(() => synced, Math.min(remaining, BLUEPRINT_RENAME_POLL_SECONDS * 1000));
    if (workflowInfo().continueAsNewSuggested) await continueAsNew<typeof blueprintRenameWorkflow>(input);
  }
}
