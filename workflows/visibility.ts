import { ContinueAsNew, isCancellation, patched, upsertSearchAttributes } from '@temporalio/workflow';
import type { SearchAttributePair } from '@temporalio/common';
import {
  LIFECYCLE_VISIBILITY,
  lifecycleSearchAttributes,
  lifecycleStatusPair,
  type LifecycleName,
  type LifecycleStatus,
} from '../shared/temporal/lifecycle-visibility.js';

/**
 * The status upserts every lifecycle makes for the Temporal UI. An upsert is a command, so histories
 * recorded before them replay without them: one patch for all (patches are per execution).
 */
export const LIFECYCLE_STATUS_PATCH = 'lifecycle-status';

/** Upserts the lifecycle's status (`PlatformStatus` or its area's key); nothing in a history recorded before. */
export function setLifecycleStatus<N extends LifecycleName>(name: N, status: LifecycleStatus<N>): void {
  if (patched(LIFECYCLE_STATUS_PATCH)) upsertSearchAttributes([lifecycleStatusPair(name, status)]);
}

/** A child's start attributes (guarded like the status: older histories started it without them). */
export function childSearchAttributes<N extends LifecycleName>(
  name: N,
  ids: { tenant: string; resourceId: string; status: LifecycleStatus<N> },
): { typedSearchAttributes?: SearchAttributePair[] } {
  return patched(LIFECYCLE_STATUS_PATCH) ? { typedSearchAttributes: lifecycleSearchAttributes(name, ids) } : {};
}

/**
 * Runs a lifecycle's body; an exception that ends it sets `failed` (a cancellation sets `cancelled` where
 * the lifecycle has that status; Temporal's own status says `Canceled` anyway) before the workflow
 * fails. Continue-as-new passes through untouched.
 */
/**
 * A lifecycle whose result names its end status: {@link trackFailure} around the body, then the status
 * `statusOf` reads from the result, or the result itself when it is the status (an outcome such as a
 * failed job included: the workflow completes).
 */
export function trackOutcome<N extends LifecycleName, S extends LifecycleStatus<N>>(
  name: N,
  body: () => Promise<S>,
): Promise<S>;
export function trackOutcome<N extends LifecycleName, T>(
  name: N,
  body: () => Promise<T>,
  statusOf: (result: T) => LifecycleStatus<N>,
): Promise<T>;
export function trackOutcome<N extends LifecycleName, T>(
  name: N,
  body: () => Promise<T>,
  statusOf: (result: T) => LifecycleStatus<N> = (result) => result as LifecycleStatus<N>,
): Promise<T> {
  return trackFailure(name, async () => {
    const result = await body();
    setLifecycleStatus(name, statusOf(result));
    return result;
  });
}

export async function trackFailure<N extends LifecycleName, T>(name: N, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    const status = err instanceof ContinueAsNew ? null : isCancellation(err) ? 'cancelled' : 'failed';
    const statuses: readonly string[] = LIFECYCLE_VISIBILITY[name].statuses;
    if (status && statuses.includes(status)) setLifecycleStatus(name, status as LifecycleStatus<N>);
    throw err;
  }
}
