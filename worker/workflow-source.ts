import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode, Runtime, type WorkerOptions } from '@temporalio/worker';
import type { Logger } from '../shared/log.js';
import { workflowsPath } from './workflows-path.js';

type WorkflowSource = Pick<WorkerOptions, 'workflowsPath' | 'workflowBundle'>;

/**
 * Where the worker's workflow code comes from. Without a cache file, the entry file (Worker.create
 * bundles it, 5 to 20 s of CPU). With one (`TEMPORAL_WORKER_BUNDLE_CACHE`, set by `npm start` to a
 * fresh file per start), the bundle in that file when it exists, else a bundle made here (with the
 * plugins' workflow interceptors, as Worker.create would) and written there through a temporary name,
 * so a worker killed mid-write leaves no partial file and the next worker of the same start reuses it.
 */
export async function workflowSource(
  cacheFile: string | undefined,
  plugins: NonNullable<WorkerOptions['plugins']>,
  log: Logger,
): Promise<WorkflowSource> {
  if (!cacheFile) return { workflowsPath };
  const cached = await readFile(cacheFile, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (cached) {
    log.info('workflow bundle reused', { path: cacheFile });
    return { workflowBundle: { code: cached } };
  }
  const { code } = await bundleWorkflowCode({ workflowsPath, plugins, logger: Runtime.instance().logger });
  const partial = `${cacheFile}.${process.pid}.partial`;
  try {
    await mkdir(path.dirname(cacheFile), { recursive: true });
    await writeFile(partial, code);
    await rename(partial, cacheFile);
  } catch (err) {
    // The worker still runs from the bundle in memory; only a restart will bundle again.
    await rm(partial, { force: true });
    log.warn('workflow bundle not cached', { path: cacheFile, error: (err as Error).message });
  }
  return { workflowBundle: { code } };
}
