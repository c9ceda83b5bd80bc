import type { UpdateDefinition } from '@temporalio/common';
import { REFUSAL_CODES, REFUSAL_FAILURE_TYPE, type Refusal, type RefusalCode } from './refusals.js';
import type { PlatformError } from '../errors.js';
import { proposalWorkflowId } from '../../workflows/action-review-definitions.js';
import type { AppDeps } from '../app-deps.js';
import {
  refusalToHttp,
  sendRefusableUpdate,
  type RefusableAnswer,
  type RefusalTable,
} from '../temporal/refusable-update.js';

export { isClosedWorkflow, UPDATE_OUTLIVED_WORKFLOW_TYPE } from '../temporal/refusable-update.js';

/** Action Review's refusals: the code table and failure type the proposal workflow's validators use. */
export const ACTION_REVIEW_REFUSALS: RefusalTable<RefusalCode> = {
  failureType: REFUSAL_FAILURE_TYPE,
  statuses: REFUSAL_CODES,
};

/** An update's answer: its value, the workflow's refusal, or "the lifecycle already ended". */
export type UpdateAnswer<T> = RefusableAnswer<T, RefusalCode>;

/** Sends one update to the proposal's workflow and turns the validator's refusal into data. */
export function sendUpdate<T, A>(
  deps: AppDeps,
  proposalId: string,
  update: UpdateDefinition<T, [A]>,
  arg: A,
): Promise<UpdateAnswer<T>> {
  return sendRefusableUpdate(deps, ACTION_REVIEW_REFUSALS, proposalWorkflowId(proposalId), update, arg);
}

/** A proposal refusal as an HTTP error (routes whose refusals are not answered in the body). */
export function refusalError(refusal: Refusal): PlatformError {
  return refusalToHttp(ACTION_REVIEW_REFUSALS, refusal, { refusal_reason: refusal.code, decided: false });
}
