import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, type UpdateDefinition } from '@temporalio/common';
import {
  isRefusalCode,
  REFUSAL_CODES,
  REFUSAL_FAILURE_TYPE,
  type Refusal,
} from '../../shared/action-review/refusals.js';
import { ConflictError, ForbiddenError, type PlatformError } from '../../shared/errors.js';
import { proposalWorkflowId } from '../../workflows/action-review-definitions.js';
import type { AppDeps } from '../deps.js';

/** An update's answer: its value, the workflow's refusal, or "the lifecycle already ended". */
export type UpdateAnswer<T> = { ok: true; value: T } | { ok: false; refusal: Refusal } | { ok: false; closed: true };

/**
 * The server's failure for an Update the workflow accepted but had not finished when it closed
 * (terminated, or completed meanwhile): "Workflow Update failed because the Workflow completed
 * before the Update completed". The SDK has no constant for it; the type is the server's.
 */
export const UPDATE_OUTLIVED_WORKFLOW_TYPE = 'AcceptedUpdateCompletedWorkflow';

/** The server's answer to an update on a workflow that has completed, before or while the update ran. */
export function isClosedWorkflow(err: unknown): boolean {
  if (err instanceof WorkflowNotFoundError) return true;
  if (
    err instanceof WorkflowUpdateFailedError &&
    err.cause instanceof ApplicationFailure &&
    err.cause.type === UPDATE_OUTLIVED_WORKFLOW_TYPE
  )
    return true;
  const message = (err as { message?: unknown }).message;
  return typeof message === 'string' && /workflow execution already completed/i.test(message);
}

/** Sends one update to the proposal's workflow and turns the validator's refusal into data. */
export async function sendUpdate<T, A>(
  deps: AppDeps,
  proposalId: string,
  update: UpdateDefinition<T, [A]>,
  arg: A,
): Promise<UpdateAnswer<T>> {
  try {
    const value = await deps.temporal.workflow
      .getHandle(proposalWorkflowId(proposalId))
      .executeUpdate(update, { args: [arg] });
    return { ok: true, value };
  } catch (err) {
    if (
      err instanceof WorkflowUpdateFailedError &&
      err.cause instanceof ApplicationFailure &&
      err.cause.type === REFUSAL_FAILURE_TYPE
    ) {
      const code = err.cause.details?.[0];
      if (isRefusalCode(code)) return { ok: false, refusal: { code, message: err.cause.message } };
    }
    if (isClosedWorkflow(err)) return { ok: false, closed: true };
    throw err;
  }
}

/** The one place a refusal becomes an HTTP error (routes whose refusals are not answered in the body). */
export function refusalError(refusal: Refusal): PlatformError {
  const payload = { code: refusal.code, refusal_reason: refusal.code, decided: false };
  const status = REFUSAL_CODES[refusal.code];
  if (status === 403) return new ForbiddenError(refusal.message, payload);
  return new ConflictError(refusal.message, payload);
}
