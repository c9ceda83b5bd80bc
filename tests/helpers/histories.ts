import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';

export const historiesDir = fileURLToPath(new URL('../histories/', import.meta.url));

/** True when this run should (re)record replay histories: `npm run record-histories`. */
export const recordingHistories = process.env.RECORD_HISTORIES === '1';

/** Saves a finished workflow's history under tests/histories/<name>.json for the replay suite. */
export async function recordHistory(name: string, handle: WorkflowHandle): Promise<void> {
  if (!recordingHistories) return;
  const history = await handle.fetchHistory();
  await mkdir(historiesDir, { recursive: true });
  await writeFile(path.join(historiesDir, `${name}.json`), historyToJSON(history) + '\n');
}
