// The wire shapes of a blueprint, shared by the blueprint routes and the `blueprints` tool.
import { z } from 'zod';
import { DefaultMode, ManifestSchema, OriginSchema, PhaseSchema } from './manifest.js';

export const Flags = z.object({
  is_owner: z.boolean(),
  can_view: z.boolean(),
  can_edit: z.boolean(),
  can_manage: z.boolean(),
});
export const Summary = z.object({
  blueprint_name: z.string(),
  blueprint_id: z.string(),
  short_description: z.string(),
  default_mode: DefaultMode,
  is_default: z.boolean(),
  mode: z.enum(['standard', 'versioned']),
  owner: z.string().nullable(),
  phase_count: z.number().int(),
  origin: OriginSchema,
  access: Flags,
});
export const SourceView = z.object({
  source_type: z.enum(['builtin', 'local', 'managed_source']),
  source_id: z.string().nullable(),
  repo_id: z.string().nullable(),
  path: z.string().nullable(),
  commit_sha: z.string().nullable().optional().describe('managed_source: the commit last synced'),
  read_only: z.boolean(),
});
export const PullRequestView = z.object({
  url: z.string(),
  number: z.number().int(),
  branch: z.string(),
  base_branch: z.string(),
  commit_sha: z.string(),
});
export const PendingRenameView = z
  .object({
    new_name: z.string(),
    new_path: z.string(),
    old_path: z.string(),
    pull_request: PullRequestView,
    requested_by: z.string(),
    requested_at: z.string(),
    expires_at: z.string(),
    workflow_id: z.string(),
  })
  .meta({ id: 'BlueprintPendingRename' });
export const Detail = Summary.extend({
  hidden: z.boolean(),
  manifest: ManifestSchema,
  phases: z.array(PhaseSchema.extend({ missing_files: z.array(z.string()) })),
  files: z.array(z.string()),
  missing_files: z.array(z.string()),
  source_selection: z.object({
    source_type: z.enum(['builtin', 'local', 'managed_source']),
    selected: z.literal('working_copy'),
    editable: z.boolean(),
  }),
  pending_rename: PendingRenameView.nullable().describe(
    'A remote-backed blueprint rename waiting for its pull request to be merged and the source synced',
  ),
  blueprint: z.object({
    short_description: z.string(),
    default_mode: DefaultMode,
    created_by: z.string().nullable(),
    origin: OriginSchema,
    source_view: SourceView,
  }),
  updated_at: z.string().nullable(),
});

export const WipSessionView = z.object({
  session_id: z.string(),
  blueprint_name: z.string(),
  blueprint_id: z.string(),
  branch: z.string().describe('The branch of the blueprint repository holding the edits: wip/<session_id>'),
  workflow_id: z.string().describe('The workflow keeping the TTL: blueprint-wip/<session_id>'),
  status: z.enum(['open', 'committed', 'discarded', 'expired']),
  active: z.boolean().describe('open and not past expires_at: blocks rename and create_version import'),
  opened_by: z.string(),
  note: z.string().nullable(),
  base_commit: z.string().describe('The working-copy commit the session started from'),
  head_commit: z.string().nullable().describe('The session branch tip (null once closed)'),
  edit_count: z.number().int(),
  expires_at: z.string(),
  created_at: z.string(),
  closed_at: z.string().nullable(),
  closed_by: z.string().nullable(),
  commit_sha: z.string().nullable().describe('The working-copy commit a committed session made (null otherwise)'),
});
/** What a commit answers (the route and the `blueprints` tool's WIP_COMMIT). */
export const WipCommitView = z.object({
  session: WipSessionView,
  commit_sha: z.string().nullable(),
  changed_files: z.array(z.string()),
  removed_files: z.array(z.string()),
});
