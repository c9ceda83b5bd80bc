import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowsPath } from '../../worker/index.js';

/** Bundles the workflows once into `dir` for worker processes (`WORKFLOW_BUNDLE_PATH`); answers the file's path. */
export async function writeWorkflowBundle(dir: string): Promise<string> {
  const bundle = await bundleWorkflowCode({
    workflowsPath,
    logger: { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} } as never,
  });
  const bundlePath = path.join(dir, 'workflow-bundle.js');
  await writeFile(bundlePath, bundle.code);
  return bundlePath;
}
