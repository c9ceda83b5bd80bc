// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * The rename of a remote-backed blueprint through a pull request (issue 14): ids, input and result
 * shared by the API (which opens the pull request and starts the workflow), the sync activity (which
 * signals it) and the workflow.
 */

/** One workflow per blueprint: at most one pending rename each. */
export const blueprintRenameWorkflowId = (blueprintId: string) => `blueprint-rename/${blueprintId}`;

/** Sent by a source sync that saw the renamed directory with the same blueprint_id. */
export const BLUEPRINT_RENAME_SYNCED_SIGNAL = 'blueprintRenameSourceSynced';

/** How long a rename waits for its merge and sync before it is dropped (30 days). */
export const BLUEPRINT_RENAME_TIMEOUT_SECONDS = 30 * 24 * 3600;
/** The backstop poll between signals (a lost signal only delays the rename). */
export const BLUEPRINT_RENAME_POLL_SECONDS = 3600;

export interface BlueprintRenameInput {
  tenant: string;
  blueprintId: string;
  oldName: string;
  newName: string;
  /** The directory the pull request renames to (`blueprints/<new_name>`). */
  newPath: string;
  /** Epoch milliseconds after which the rename is dropped (set by the API; kept across continue-as-new). */
  deadlineMs: number;
}

export type BlueprintRenameCheck =
  /** The sync has not seen the new directory yet (or the rename is blocked for now, e.g. in-flight missions). */
  | { status: 'waiting'; reason: string | null }
  | { status: 'applied'; blueprint_name: string }
  /** The blueprint or its pending rename is gone (deleted, source removed): nothing to do. */
  | { status: 'gone' };

export type BlueprintRenameResult =
  { status: 'applied'; blueprint_name: string } | { status: 'gone' } | { status: 'expired'; reason: string | null };
