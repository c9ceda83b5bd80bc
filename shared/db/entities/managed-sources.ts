import { EntitySchema } from '@mikro-orm/core';

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
export interface ManagedSourceRow {
  id: string;
  tenant: string;
  name: string;
  repoUrl: string;
  releaseRef: string | null;
  settings: ManagedSourceSettings;
  credentialKind: 'token' | 'basic' | 'oauth' | null;
  credentialUsername: string | null;
  /** OAuth grants: when the saved grant lapses (shown masked-side; the token itself is sealed). */
  credentialExpiresAt: Date | null;
  credentialsSealed: string | null;
  syncedCommitSha: string | null;
  /** Hash of the `checkout_exclude` rules the working tree was built with. */
  checkoutRulesHash: string | null;
  tagAnchor: TagAnchor | null;
  releasePoll: Record<string, unknown> | null;
  lastSync: Record<string, unknown> | null;
  /** Set when deletion starts (`{state: 'pending_deletion', requested_at, attempts, last_error}`); the row goes once cleanup succeeds. */
  deletionState: Record<string, unknown> | null;
  /** The auto-sync schedule's last check of this source (the spec's `auto_sync_state`). */
  autoSyncState: Record<string, unknown> | null;
  createdAt: Date;
  updatedAt: Date;
  createdBy: string;
}

export const ManagedSourceEntity = new EntitySchema<ManagedSourceRow>({
  name: 'ManagedSourceRow',
  tableName: 'managed_sources',
  properties: {
    id: { type: 'string', primary: true },
    tenant: { type: 'string' },
    name: { type: 'string' },
    repoUrl: { type: 'text' },
    releaseRef: { type: 'string', nullable: true },
    settings: { type: 'json' },
    credentialKind: { type: 'string', nullable: true },
    credentialUsername: { type: 'string', nullable: true },
    credentialExpiresAt: { type: 'Date', nullable: true },
    credentialsSealed: { type: 'text', nullable: true },
    syncedCommitSha: { type: 'string', nullable: true },
    checkoutRulesHash: { type: 'string', nullable: true },
    tagAnchor: { type: 'json', nullable: true },
    releasePoll: { type: 'json', nullable: true },
    lastSync: { type: 'json', nullable: true },
    deletionState: { type: 'json', nullable: true },
    autoSyncState: { type: 'json', nullable: true },
    createdAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
    createdBy: { type: 'string' },
  },
});

/** One sync of a managed source (workflow `source-sync/<source_id>/<job_id>`); readable while it runs and after a restart. */
export interface ManagedSourceSyncJobRow {
  jobId: string;
  sourceId: string;
  tenant: string;
  status: 'running' | 'complete' | 'error';
  phase: string;
  filesScanned: number;
  expectedReleaseCommit: string | null;
  result: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  requestedBy: string;
  startedAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

export const ManagedSourceSyncJobEntity = new EntitySchema<ManagedSourceSyncJobRow>({
  name: 'ManagedSourceSyncJobRow',
  tableName: 'managed_source_sync_jobs',
  properties: {
    jobId: { type: 'string', primary: true },
    sourceId: { type: 'string' },
    tenant: { type: 'string' },
    status: { type: 'string' },
    phase: { type: 'string' },
    filesScanned: { type: 'integer' },
    expectedReleaseCommit: { type: 'string', nullable: true },
    result: { type: 'json', nullable: true },
    error: { type: 'json', nullable: true },
    requestedBy: { type: 'string' },
    startedAt: { type: 'Date' },
    updatedAt: { type: 'Date' },
    finishedAt: { type: 'Date', nullable: true },
  },
});
