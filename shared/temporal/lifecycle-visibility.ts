// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import type { SearchAttributePair } from '@temporalio/common';
import { PROPOSAL_STATUSES } from '../action-review/types.js';
import { SearchAttributes } from './search-attributes.js';
import type { WorkflowName } from './workflow-refs.js';

/**
 * What every lifecycle shows operators in the Temporal UI: `PlatformTenant`, `PlatformResourceId` and
 * a status attribute whose value a failure changes (even a failure that is a business outcome and lets
 * the workflow complete normally). One entry per workflow type of workflows/index.ts (the type below
 * and tests/observability/visibility.test.ts keep the two in step); README "Finding lifecycles in the
 * Temporal UI" documents the same table.
 */
export interface LifecycleVisibility {
  /** `caller`: the tenant of whoever started it; `deployment`: PLATFORM_TENANT; `all`: a sweep over every tenant (`*`). */
  tenant: 'caller' | 'deployment' | 'all';
  /** What `PlatformResourceId` holds. */
  resourceId: string;
  /** The attribute the status goes to: `PlatformStatus`, or the area's own. */
  statusKey: 'PlatformStatus' | 'ProposalStatus' | 'MissionStatus';
  statuses: readonly string[];
  /** The statuses that mean it failed (an operator's `PlatformStatus = "failed"` finds these). */
  failures: readonly string[];
}

/** `PlatformTenant` of a sweep that spans every tenant (schedules of the worker). */
export const ALL_TENANTS = '*';

/** Set when a workflow ends with an exception (its Temporal status is then `Failed` too). */
const FAILED = 'failed';

export const LIFECYCLE_VISIBILITY = {
  echoWorkflow: {
    tenant: 'caller',
    resourceId: 'job id',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'completed', FAILED],
    failures: [FAILED],
  },
  actionReviewProposalWorkflow: {
    tenant: 'caller',
    resourceId: 'proposal id',
    statusKey: 'ProposalStatus',
    statuses: PROPOSAL_STATUSES,
    failures: ['not_applied', 'reconciliation_required'],
  },
  actionReviewHandbackWorkflow: {
    tenant: 'caller',
    resourceId: 'proposal id',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'delivered', 'pending', FAILED],
    failures: ['pending', FAILED],
  },
  actionReviewHandbackSweepWorkflow: {
    tenant: 'all',
    resourceId: 'schedule id (action-review-handback-sweep)',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'completed', 'completed_with_failures', FAILED],
    failures: ['completed_with_failures', FAILED],
  },
  threadWorkflow: {
    tenant: 'caller',
    resourceId: 'thread id',
    statusKey: 'PlatformStatus',
    statuses: ['idle', 'responding', 'turn_failed', 'closed', FAILED],
    failures: ['turn_failed', FAILED],
  },
  crmMergeApprovalWorkflow: {
    tenant: 'caller',
    resourceId: 'approval id',
    statusKey: 'PlatformStatus',
    statuses: [
      'open',
      'executing',
      'settled',
      'executed',
      'not_applied',
      'reconciliation_required',
      'rejected',
      'expired',
      FAILED,
    ],
    failures: ['not_applied', 'reconciliation_required', FAILED],
  },
  secretResealWorkflow: {
    tenant: 'all',
    resourceId: 'rotation id',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'completed', FAILED],
    failures: [FAILED],
  },
  embeddingReindexWorkflow: {
    tenant: 'caller',
    resourceId: 'reindex run id',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'completed', 'superseded', FAILED],
    failures: [FAILED],
  },
  sourceSyncWorkflow: {
    tenant: 'caller',
    resourceId: 'managed source id',
    statusKey: 'PlatformStatus',
    statuses: [
      'running',
      'up_to_date',
      'updated',
      'updated_awaiting_promotion',
      'updated_with_errors',
      'not_eligible',
      FAILED,
    ],
    failures: ['updated_with_errors', FAILED],
  },
  etlRunWorkflow: {
    tenant: 'caller',
    resourceId: 'ETL run id',
    statusKey: 'PlatformStatus',
    statuses: ['queued', 'running', 'succeeded', 'timed_out', 'interrupted', FAILED],
    failures: ['timed_out', 'interrupted', FAILED],
  },
  flowRunWorkflow: {
    tenant: 'caller',
    resourceId: 'flow run id',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'succeeded', 'failed', 'cancelled'],
    failures: [FAILED],
  },
  sourceDeleteWorkflow: {
    tenant: 'caller',
    resourceId: 'managed source id',
    statusKey: 'PlatformStatus',
    statuses: ['deleting', 'deleted', FAILED],
    failures: [FAILED],
  },
  managedSourceAutoSyncWorkflow: {
    tenant: 'all',
    resourceId: 'schedule id (managed-source-auto-sync)',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'completed', 'completed_with_failures', FAILED],
    failures: ['completed_with_failures', FAILED],
  },
  rechunkWorkflow: {
    tenant: 'caller',
    resourceId: 'document index name',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'completed', FAILED],
    failures: [FAILED],
  },
  vectorIndexBuildWorkflow: {
    tenant: 'caller',
    resourceId: 'document index name',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'completed', FAILED],
    failures: [FAILED],
  },
  ingestWorkflow: {
    tenant: 'caller',
    resourceId: 'document index name',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'completed', FAILED],
    failures: [FAILED],
  },
  desktopDiagnosticsWorkflow: {
    tenant: 'deployment',
    resourceId: 'schedule id (desktop-diagnostics-auto)',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'desktop_off', 'disabled', 'not_activated', 'too_soon', 'unchanged', 'sent', FAILED],
    failures: [FAILED],
  },
  codeAgentRunWorkflow: {
    tenant: 'caller',
    resourceId: 'code-agent run id',
    statusKey: 'PlatformStatus',
    statuses: ['queued', 'creating', 'running', 'finished', 'expired', 'cancelled', 'timed_out', 'interrupted', FAILED],
    failures: ['expired', 'timed_out', 'interrupted', FAILED],
  },
  missionWorkflow: {
    tenant: 'caller',
    resourceId: 'project id',
    statusKey: 'MissionStatus',
    statuses: ['running', 'paused', 'completed', 'cancelled', 'closed', FAILED],
    // A phase that cannot run (no agent, agent gone, no model provider, model failure) ends the mission failed.
    failures: [FAILED],
  },
  trackerPollWorkflow: {
    tenant: 'deployment',
    resourceId: 'schedule id (tracker-poll-issue-tracker, tracker-poll-service-desk)',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'completed', FAILED],
    failures: [FAILED],
  },
  demoVersionWorkflow: {
    tenant: 'caller',
    resourceId: 'demo version id',
    statusKey: 'PlatformStatus',
    statuses: ['draft', 'validating', 'ready', FAILED],
    failures: [FAILED],
  },
  demoRunWorkflow: {
    tenant: 'caller',
    resourceId: 'demo run id',
    statusKey: 'PlatformStatus',
    statuses: ['prepared', 'running', 'completed', 'incomplete', FAILED],
    failures: [FAILED],
  },
  ticketRcaWorkflow: {
    tenant: 'caller',
    resourceId: 'presenter session id',
    statusKey: 'PlatformStatus',
    statuses: ['idle', 'preparing', 'running', 'completed', 'cancelled', FAILED],
    failures: [FAILED],
  },
  blueprintRenameWorkflow: {
    tenant: 'caller',
    resourceId: 'blueprint id',
    statusKey: 'PlatformStatus',
    statuses: ['waiting', 'applied', 'gone', 'expired', FAILED],
    failures: ['expired', FAILED],
  },
  blueprintWipSessionWorkflow: {
    tenant: 'caller',
    resourceId: 'WIP session id',
    statusKey: 'PlatformStatus',
    statuses: ['open', 'committed', 'discarded', 'expired', 'closed', FAILED],
    failures: [FAILED],
  },
  blueprintHiddenPurgeWorkflow: {
    tenant: 'all',
    resourceId: 'schedule id (blueprint-hidden-purge)',
    statusKey: 'PlatformStatus',
    statuses: ['running', 'completed', FAILED],
    failures: [FAILED],
  },
} as const satisfies Record<WorkflowName, LifecycleVisibility>;

export type LifecycleName = keyof typeof LIFECYCLE_VISIBILITY;
/** The statuses a lifecycle may show (a value outside its entry does not compile). */
export type LifecycleStatus<N extends LifecycleName> = (typeof LIFECYCLE_VISIBILITY)[N]['statuses'][number];

const statusKeyOf = (name: LifecycleName) => {
  const key = LIFECYCLE_VISIBILITY[name].statusKey;
  if (key === 'ProposalStatus') return SearchAttributes.proposalStatus;
  if (key === 'MissionStatus') return SearchAttributes.missionStatus;
  return SearchAttributes.status;
};

/** The status attribute of a lifecycle with a value. */
export function lifecycleStatusPair<N extends LifecycleName>(name: N, status: LifecycleStatus<N>): SearchAttributePair {
  return { key: statusKeyOf(name), value: status };
}

/** The `typedSearchAttributes` a lifecycle starts with: tenant, resource id and its first status. */
export function lifecycleSearchAttributes<N extends LifecycleName>(
  name: N,
  ids: { tenant: string; resourceId: string; status: LifecycleStatus<N> },
): SearchAttributePair[] {
  return [
    { key: SearchAttributes.tenant, value: ids.tenant },
    { key: SearchAttributes.resourceId, value: ids.resourceId },
    lifecycleStatusPair(name, ids.status),
  ];
}
