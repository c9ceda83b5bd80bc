import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import type { ManagedSourceRow } from '../db/entities/index.js';
import { ConflictError } from '../errors.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import {
  sourceDeleteWorkflowId,
  type SourceDeleteResult,
} from '../../workflows/managed-source-lifecycle-definitions.js';
import { runningJobs } from './sync-job-store.js';
import { waitAtMost } from './sync-start.js';
import { ManagedSourceCodes } from './error-codes.js';

/**
 * Deleting a managed source: the source is pending deletion at once, workflow
 * `source-delete/<source_id>` cleans up what it imported (retried until it succeeds), then removes
 * the row, its jobs and its files (`deletion-cleanup.ts`). The caller waits up to 10 s for the end.
 */
const DELETE_WAIT_MS = 10_000;

/** Marks the source pending deletion and starts its deletion workflow; its result, or `'pending'` after 10 s. */
export async function requestSourceDeletion(
  em: EntityManager,
  deps: AppDeps,
  principal: Principal,
  row: ManagedSourceRow,
): Promise<SourceDeleteResult | 'pending'> {
  if (await runningJobs(em, row.id))
    throw new ConflictError(`A sync of managed source ${row.id} is running; delete it when the sync ends.`, {
      code: ManagedSourceCodes.MANAGED_SOURCE_SYNC_IN_PROGRESS,
    });
  if (!row.deletionState) {
    const requested_at = new Date().toISOString();
    row.deletionState = { state: 'pending_deletion', requested_at, requested_by: principal.id, attempts: 0 };
    row.updatedAt = new Date();
    await em.flush();
  }
  const workflowId = sourceDeleteWorkflowId(row.id);
  await deps.temporal.workflow.start(workflowRef('sourceDeleteWorkflow'), {
    taskQueue: deps.config.temporal.taskQueue,
    workflowId,
    args: [{ sourceId: row.id, tenant: principal.tenant }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: lifecycleSearchAttributes('sourceDeleteWorkflow', {
      tenant: principal.tenant,
      resourceId: row.id,
      status: 'deleting',
    }),
    memo: { requested_by: principal.id, kind: 'source-delete' },
  });
  const result = deps.temporal.workflow.getHandle(workflowId).result() as Promise<SourceDeleteResult>;
  return waitAtMost(result, DELETE_WAIT_MS);
}
