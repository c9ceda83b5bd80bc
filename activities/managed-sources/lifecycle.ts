import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import {
  autoSyncCandidates,
  autoSyncJobId,
  recordAutoSyncCheck,
  startAutoSyncJob,
  type AutoSyncCheck,
} from '../../shared/managed-sources/auto-sync.js';
import { cleanupSourceArtifacts, removeSource } from '../../shared/managed-sources/deletion-cleanup.js';
import { pollSourceReleases, type PollSummary } from '../../shared/managed-sources/release-poll.js';
import type {
  AutoSyncCandidate,
  AutoSyncInput,
  SourceDeleteInput,
} from '../../workflows/managed-source-lifecycle-definitions.js';
import type { ManagedSourceDeps } from './deps.js';

/**
 * The activities of the `source-delete` workflow (cleanup, then removal) and of the auto-sync check
 * (candidates, job rows, the recorded check, release polling); the logic is in shared/managed-sources.
 */

/** Deletion cleanup: removes the agents and roles the source imported; a failure is recorded, then retried. */
export function managedDeleteCleanup(deps: ManagedSourceDeps, input: SourceDeleteInput) {
  const source = { id: input.sourceId, tenant: input.tenant };
  return cleanupSourceArtifacts(deps.orm.em.fork(), source, Context.current().info.attempt);
}

/** Removes the source row (its jobs cascade) and its files; idempotent. */
export function managedDeleteRemove(deps: ManagedSourceDeps, input: SourceDeleteInput): Promise<void> {
  return removeSource(deps.orm.em.fork(), deps.config, { id: input.sourceId, tenant: input.tenant });
}

/** Sources with `auto_sync` on and whether each may sync now. */
export function autoSyncList(deps: ManagedSourceDeps, input: AutoSyncInput): Promise<AutoSyncCandidate[]> {
  return autoSyncCandidates(deps.orm.em.fork(), input.tenant);
}

/** A job row for the schedule's sync (null when a sync of the source is already running: skipped). */
export function autoSyncStartJob(deps: ManagedSourceDeps, c: AutoSyncCandidate): Promise<string | null> {
  // One job id per activity (not per attempt): a retry after a lost answer finds its own row again.
  const info = Context.current().info;
  const jobId = autoSyncJobId(`${info.workflowExecution?.runId ?? randomUUID()}/${info.activityId}`);
  return startAutoSyncJob(deps.orm.em.fork(), jobId, c.sourceId);
}

/** Records the check on the source as `auto_sync_state` (the spec's fields). */
export function autoSyncRecord(deps: ManagedSourceDeps, input: AutoSyncCheck): Promise<void> {
  return recordAutoSyncCheck(deps.orm.em.fork(), input);
}

/** Release polling (part of the auto-sync check): see `pollSourceReleases`. */
export function managedReleasePoll(deps: ManagedSourceDeps, input: AutoSyncInput): Promise<PollSummary> {
  return pollSourceReleases(deps.orm.em.fork(), deps.config, input.tenant);
}
