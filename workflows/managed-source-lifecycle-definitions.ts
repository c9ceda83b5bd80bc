// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Managed-source lifecycles besides the sync (issue 12): deletion (`source-delete/<source_id>`) and
 * the auto-sync check the Temporal Schedule starts every 300 s. The API imports this module only.
 */

export const sourceDeleteWorkflowId = (sourceId: string) => `source-delete/${sourceId}`;

export interface SourceDeleteInput {
  sourceId: string;
  tenant: string;
}

export interface SourceDeleteResult {
  source_id: string;
  deleted: true;
  removed_agents: number;
  removed_roles: number;
}

/** The auto-sync schedule: its id and the spec's default interval ("about every 300 s"). */
export const AUTO_SYNC_SCHEDULE_ID = 'managed-source-auto-sync';
export const AUTO_SYNC_INTERVAL_SECONDS = 300;

export interface AutoSyncInput {
  /** Only this tenant's sources (tests); all tenants when absent. */
  tenant?: string;
}

/** One source the check looked at. */
export interface AutoSyncCandidate {
  sourceId: string;
  tenant: string;
  eligible: boolean;
  /** Why a source is not eligible (`pending_deletion`, `moved_tag_unacknowledged`). */
  ineligibleReason: string | null;
}

export interface AutoSyncSummary {
  checked: number;
  synced: number;
  skipped: number;
  not_eligible: number;
}
