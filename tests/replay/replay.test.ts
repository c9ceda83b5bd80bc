/**
 * Replays every recorded history in tests/histories/ against the current workflow code. A change
 * that would break a running lifecycle fails here; such a change needs `patched()`.
 * Re-record with `npm run record-histories` after adding a scenario (never to paper over a failure).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { historiesDir } from '../helpers/histories.js';
import { installQuietRuntime } from '../helpers/temporal.js';

const files = (await readdir(historiesDir)).filter((f) => f.endsWith('.json')).sort();

describe('replay of recorded histories', () => {
  it('has recorded histories to replay', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it.each(files)('%s replays deterministically', async (file) => {
    installQuietRuntime();
    const history = historyFromJSON(JSON.parse(await readFile(path.join(historiesDir, file), 'utf8')));
    const workflowId = path.basename(file, '.json');
    // Throws DeterminismViolationError (or another replay error) when the code no longer matches.
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId);
  });
});
