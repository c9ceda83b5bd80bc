import { column, table, type Row } from './table.js';

/** Settings of a managed source that hold no secret (the API's field names, stored as given). */
export interface ManagedSourceSettings {
  scan_types_enabled: string[];
  include: string[];
  exclude: string[];
  checkout_exclude: string[];
  agents_root: string | null;
  flows_root: string | null;
  documents_root: string | null;
  auto_sync: boolean;
  auto_promote_on_sync: boolean;
}

/** A release tag whose commit the source was synced at; a remote tag naming another commit is a moved tag. */
export interface TagAnchor {
  tag: string;
  commit_sha: string;
}

/** A Git repository whose artifacts the platform imports (issue 12). Credentials are one sealed JSON object. */
export const ManagedSourceEntity = table('ManagedSourceRow', 'managed_sources', {
  id: column.string().primary(),
  tenant: column.string(),
  name: column.string(),
  repoUrl: column.text(),
  releaseRef: column.string().nullable(),
  settings: column.json<ManagedSourceSettings>(),
  credentialKind: column.string<'token' | 'basic' | 'oauth'>().nullable(),
  credentialUsername: column.string().nullable(),
  /** OAuth grants: when the saved grant lapses (shown masked-side; the token itself is sealed). */
  credentialExpiresAt: column.date().nullable(),
  credentialsSealed: column.text().nullable(),
  syncedCommitSha: column.string().nullable(),
  /** Hash of the `checkout_exclude` rules the working tree was built with. */
  checkoutRulesHash: column.string().nullable(),
  tagAnchor: column.json<TagAnchor>().nullable(),
  releasePoll: column.json<Record<string, unknown>>().nullable(),
  lastSync: column.json<Record<string, unknown>>().nullable(),
  /** Set when deletion starts (`{state: 'pending_deletion', requested_at, attempts, last_error}`); the row goes once cleanup succeeds. */
  deletionState: column.json<Record<string, unknown>>().nullable(),
  /** The auto-sync schedule's last check of this source (the spec's `auto_sync_state`). */
  autoSyncState: column.json<Record<string, unknown>>().nullable(),
  createdAt: column.date(),
  updatedAt: column.date(),
  createdBy: column.string(),
});
export type ManagedSourceRow = Row<typeof ManagedSourceEntity>;

/** One sync of a managed source (workflow `source-sync/<source_id>/<job_id>`); readable while it runs and after a restart. */
export const ManagedSourceSyncJobEntity = table('ManagedSourceSyncJobRow', 'managed_source_sync_jobs', {
  jobId: column.string().primary(),
  sourceId: column.string(),
  tenant: column.string(),
  status: column.string<'running' | 'complete' | 'error'>(),
  phase: column.string(),
  filesScanned: column.integer(),
  expectedReleaseCommit: column.string().nullable(),
  result: column.json<Record<string, unknown>>().nullable(),
  error: column.json<Record<string, unknown>>().nullable(),
  requestedBy: column.string(),
  startedAt: column.date(),
  updatedAt: column.date(),
  finishedAt: column.date().nullable(),
});
export type ManagedSourceSyncJobRow = Row<typeof ManagedSourceSyncJobEntity>;
