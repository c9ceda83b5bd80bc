import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, type UpdateDefinition } from '@temporalio/common';
import { ConflictError, ForbiddenError, PlatformError, type ErrorCode } from '../errors.js';
import type { AppDeps } from '../app-deps.js';

/**
 * One helper for a refusable Update (Action Review proposals, CRM merge approvals): the workflow's
 * validator refuses with an ApplicationFailure of a known type whose `details[0]` is a code from a
 * table of codes to HTTP statuses; the route turns it into data or, through `refusalToHttp`, an error.
 */
export interface RefusalTable<C extends ErrorCode> {
  /** The ApplicationFailure type the workflow's refusals carry. */
  failureType: string;
  /** Code → HTTP status for routes that answer a refusal as an error. */
  statuses: Readonly<Record<C, number>>;
}

export interface RefusalOf<C extends ErrorCode> {
  code: C;
  message: string;
}

/** An update's answer: its value, the workflow's refusal, or "the workflow already ended". */
export type RefusableAnswer<T, C extends ErrorCode> =
  { ok: true; value: T } | { ok: false; refusal: RefusalOf<C> } | { ok: false; closed: true };

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

/** Sends one update to a workflow and turns its validator's refusal, or "already ended", into data. */
export async function sendRefusableUpdate<T, A, C extends ErrorCode>(
  deps: AppDeps,
  table: RefusalTable<C>,
  workflowId: string,
  update: UpdateDefinition<T, [A]>,
  arg: A,
): Promise<RefusableAnswer<T, C>> {
  try {
    return {
      ok: true,
      value: await deps.temporal.workflow.getHandle(workflowId).executeUpdate(update, { args: [arg] }),
    };
  } catch (err) {
    if (
      err instanceof WorkflowUpdateFailedError &&
      err.cause instanceof ApplicationFailure &&
      err.cause.type === table.failureType
    ) {
      const code: unknown = err.cause.details?.[0];
      if (typeof code === 'string' && Object.hasOwn(table.statuses, code))
        return { ok: false, refusal: { code: code as C, message: err.cause.message } };
    }
    if (isClosedWorkflow(err)) return { ok: false, closed: true };
    throw err;
  }
}

/** The one place a refusal becomes an HTTP error (routes whose refusals are not answered in the body). */
export function refusalToHttp<C extends ErrorCode>(
  table: RefusalTable<C>,
  refusal: RefusalOf<C>,
  payload: Record<string, unknown> = {},
): PlatformError {
  const body = { code: refusal.code, ...payload };
  const status = table.statuses[refusal.code];
  if (status === 403) return new ForbiddenError(refusal.message, body);
  if (status === 410) return new PlatformError('gone', refusal.message, body);
  return new ConflictError(refusal.message, body);
}
