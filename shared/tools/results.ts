/**
 * What each tool answers (the `result` of `POST /api/tool_call`), in one place: the OpenAPI document
 * publishes these as `Tool_<name>_Result`. They describe the handlers' results as they are; a change
 * to a result's shape changes its schema here. Views that a REST route answers too are that route's schema.
 */
import { z } from 'zod';
import { ProposalRowViewSchema, ProverSubjectViewSchema } from '../action-review/views.js';
import { WizardResult } from '../blueprints/wizard.js';
import { ExecuteResponse as ProposalExecuteResponse } from '../action-review/views.js';
import {
  Detail as BlueprintDetail,
  Summary as BlueprintSummary,
  WipCommitView,
  WipSessionView,
} from '../blueprints/views.js';
import { ExecuteResponse as MergeExecuteResponse, PreviewSchema as MergePreview } from '../crm/approval-views.js';
import { ApprovalViewSchema } from '../crm/approval-views.js';
import { ChunkConfig, IndexStats } from '../document-index/views.js';
import { Note, ServerRecord } from '../missions/record-views.js';
import { AnswersResult, ProjectView, StatusResult } from '../missions/views.js';
import type { EtlJobList } from '../etl/service.js';
import type { JobDescription } from '../etl/project.js';
import { ETL_RUN_STATUSES, type EtlRunView as EtlRunViewType } from '../etl/runs.js';

/** One action's result: the union's branches say which action answers them. */
const answer = <S extends z.ZodType>(actions: string, schema: S) => schema.describe(actions);
const Json = z.record(z.string(), z.unknown());

/** Compile-time check that a schema describes exactly the TypeScript type its handler returns. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const describes = <_S extends z.ZodType, _T>(check: Same<z.output<_S>, _T>) => check;

export const ActionReviewResult = z.union([
  answer(
    'CREATE_PROPOSAL',
    z.object({
      proposal: ProposalRowViewSchema,
      handback: z
        .enum(['conversation', 'poll_request_status'])
        .describe('conversation: the decision comes back into the thread; otherwise poll GET_REQUEST_STATUS'),
    }),
  ),
  answer('GET_REQUEST_STATUS', z.object({ proposal: ProposalRowViewSchema })),
  answer('EXECUTE_PROPOSAL', ProposalExecuteResponse),
  answer('GET_PROVER_SUBJECT', z.object({ subject: ProverSubjectViewSchema })),
]);

export const AgentFilesResult = answer(
  'WRITE_FILE',
  z.object({
    file_id: z.string().describe('A single-use signed download, handed to the person with the reply'),
    name: z.string(),
    content_type: z.string(),
    bytes: z.number().int(),
  }),
);

export const CrmConnectorResult = z.union([
  answer('preview_merge', MergePreview),
  answer(
    'request_merge_approval',
    z.object({
      approval_id: z.string(),
      expires_at: z.string(),
      digest: z.string(),
      approval: ApprovalViewSchema,
      preview: MergePreview,
    }),
  ),
  answer('execute_merge', MergeExecuteResponse),
  answer(
    'query',
    z.object({
      total_size: z.number().int(),
      returned: z.number().int(),
      truncated: z.boolean().describe('More records matched than max_rows'),
      max_rows: z.number().int(),
      records: z.array(Json),
    }),
  ),
  answer('get_record', z.object({ id: z.string(), last_modified: z.string(), fields: Json })),
  answer(
    'update_record',
    z.object({
      updated: z.literal(true),
      record_kind: z.string(),
      record_id: z.string(),
      fields: z.array(z.string()),
    }),
  ),
]);

const EtlRunView = z.object({
  run_id: z.string(),
  job_name: z.string(),
  status: z.enum(ETL_RUN_STATUSES),
  context: z.string().nullable(),
  context_params: z.array(z.string()).describe('Names only: values may carry credentials'),
  timeout_seconds: z.number().int(),
  exit_code: z.number().int().nullable(),
  error: z.string().nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  output: z.object({
    text: z.string(),
    offset: z.number().int(),
    next_offset: z.number().int().nullable(),
    total_chars: z.number().int(),
    bytes_seen: z.number().int(),
    truncated: z.boolean(),
  }),
});
const StringList = z.array(z.string());

export const ListEtlJobsResult = z.object({
  project_jobs: z.array(z.object({ name: z.string(), version: z.string(), folder: z.string(), path: z.string() })),
  built_jobs: z.array(z.object({ name: z.string(), version: z.string().nullable(), launcher: z.string() })),
});

export const DescribeEtlJobResult = z.object({
  name: z.string(),
  version: z.string(),
  path: z.string(),
  purpose: z.string().nullable(),
  description: z.string().nullable(),
  contexts: z.array(
    z.object({
      name: z.string(),
      parameters: z.array(
        z.object({ name: z.string(), type: z.string(), value: z.string(), prompt: z.string().nullable() }),
      ),
    }),
  ),
  components: z.array(
    z.object({
      name: z.string(),
      component: z.string(),
      role: z.enum(['input', 'output', 'transform', 'other']),
      reads: StringList,
      writes: StringList,
      settings: z.record(z.string(), z.string()),
      context_refs: StringList,
    }),
  ),
  connections: z.array(
    z.object({ source: z.string(), target: z.string(), kind: z.string(), label: z.string().nullable() }),
  ),
  reads: StringList,
  writes: StringList,
  writes_to_customer_systems: z.boolean().describe('A component writes outside the job’s local files'),
});

describes<typeof EtlRunView, EtlRunViewType>(true);
describes<typeof ListEtlJobsResult, EtlJobList>(true);
describes<typeof DescribeEtlJobResult, JobDescription>(true);

export const RunEtlJobResult = EtlRunView;
export const GetEtlRunResult = EtlRunView;

const Warnings = StringList.describe('Warnings');
const Paged = {
  start: z.number().int(),
  count: z.number().int(),
  actual_count: z.number().int(),
  has_more: z.boolean(),
};
const Source = {
  index_name: z.string(),
  filepath: z.string(),
  file_id: z.string(),
  chunk_index: z.number().int(),
  score: z.number(),
  snippet: z.string(),
};
const KbStatus = z.enum(['A', 'M', 'D', 'R']);
const KbPendingReview = z.object({
  Success: z.literal(true),
  status: z.literal('pending_review'),
  source_id: z.string(),
  changed_files: z.array(z.object({ path: z.string(), status: KbStatus, previous_path: z.string().optional() })),
  proposal: ProposalRowViewSchema,
});

export const DocumentIndexResult = z.union([
  answer(
    'CREATE_INDEX',
    z.object({ Success: z.literal(true), index_name: z.string(), chunk_config: ChunkConfig.optional() }),
  ),
  answer('RENAME_INDEX', z.object({ Success: z.literal(true), index_name: z.string(), previous_name: z.string() })),
  answer(
    'DELETE_INDEX',
    z.object({
      Success: z.boolean(),
      Message: z.string().optional().describe('Index deleted successfully'),
      Error: z.string().optional().describe('Surviving collections; retry DELETE_INDEX'),
    }),
  ),
  answer(
    'LIST_INDICES',
    z.object({ Success: z.literal(true), Indices: StringList, IndexDetails: z.array(IndexStats) }),
  ),
  answer(
    'ADD_DOCUMENTS',
    z.object({
      Success: z.literal(true),
      index_name: z.string(),
      added: z.array(
        z.object({
          file_id: z.string(),
          filepath: z.string(),
          status: z.enum(['added', 'updated', 'unchanged']),
          chunks: z.number().int(),
        }),
      ),
      skipped: z.array(z.object({ filepath: z.string(), reason: z.string() })),
      Warnings,
      workflow_id: z.string().optional(),
      chunk_config: ChunkConfig.optional(),
    }),
  ),
  answer(
    'ADD_TEXT',
    z.object({
      Success: z.literal(true),
      file_id: z.string(),
      filepath: z.string(),
      chunks: z.number().int(),
      status: z.enum(['added', 'updated', 'unchanged']),
      Warnings,
    }),
  ),
  answer(
    'LIST_DOCUMENTS',
    z.object({
      Success: z.literal(true),
      TotalCount: z.number().int(),
      ...Paged,
      next_start: z.number().int().nullable(),
      Message: z.string().optional(),
      Documents: z.array(Json).describe('Files (show_files_only) or chunks with a preview'),
    }),
  ),
  answer(
    'GET_DOCUMENT',
    z.object({
      Success: z.literal(true),
      file_id: z.string(),
      filepath: z.string(),
      pagination_mode: z.enum(['lines', 'chars']).nullable(),
      ...Paged,
      total: z.number().int(),
      content: z.string().optional().describe('lines and chars modes'),
      chunks: z
        .array(z.object({ chunk_index: z.number().int(), text: z.string() }))
        .optional()
        .describe('chunk mode (pagination_mode null)'),
    }),
  ),
  answer(
    'DELETE_DOCUMENT',
    z.object({ Success: z.literal(true), file_id: z.string(), filepath: z.string(), Message: z.string() }),
  ),
  answer(
    'RENAME_DOCUMENT',
    z.object({ Success: z.literal(true), file_id: z.string(), filepath: z.string(), previous_filepath: z.string() }),
  ),
  answer(
    'SEARCH',
    z.object({
      Success: z.literal(true),
      query: z.string(),
      index_name: z.string().nullable(),
      ranking: z.string(),
      results: z.array(
        z.object({
          ...Source,
          chunk_id: z.string(),
          lexical_rank: z.number().int().nullable(),
          vector_rank: z.number().int().nullable(),
        }),
      ),
    }),
  ),
  answer(
    'ASK',
    z.object({
      Success: z.literal(true),
      answer: z.string(),
      answer_type: z.enum(['generated', 'extractive', 'none']),
      model: z.string().optional(),
      sources: z.array(z.object({ n: z.number().int(), ...Source })),
      footnotes: StringList,
    }),
  ),
  answer('GET_INDICES_STATS', z.object({ Success: z.literal(true), Indices: z.array(IndexStats) })),
  answer(
    'RECHUNK',
    z.object({
      Success: z.boolean(),
      Error: z.string().optional(),
      index_name: z.string(),
      docs_rechunked: z.number().int(),
      chunks_before: z.number().int(),
      chunks_after: z.number().int(),
      chunk_config: ChunkConfig,
      Warnings,
      approximate_reassembly_notes: StringList,
    }),
  ),
  answer(
    'propose_kb_edit',
    z.object({
      Success: z.literal(true),
      staged: z.literal(true),
      operation: z.enum(['write', 'delete', 'rename']),
      source_id: z.string(),
      base_commit: z.string(),
      next_steps: StringList,
      path: z.string(),
      relative_path: z.string(),
      previous_path: z.string().optional(),
      status: KbStatus,
      diff_summary: z.string(),
    }),
  ),
  answer('open_kb_pull_request', KbPendingReview),
]);

const CodeAgentRun = Json.describe(
  'run_id, adapter, status, ticket_key, target_repo_url, target_base_ref, auto_create_pr, pr_url, branch, outcome, summary, exit_code, error, steps, output, requested_by, created_at, started_at, finished_at, live',
);

export const EnhancementActionResult = z.union([
  answer('START_CODE_AGENT (person)', z.object({ success: z.literal(true), run: CodeAgentRun })),
  answer(
    'START_CODE_AGENT (agent)',
    z.object({ success: z.literal(true), status: z.literal('pending_review'), proposal: ProposalRowViewSchema }),
  ),
  answer(
    'START_CODE_AGENT without a usable adapter',
    z.object({
      success: z.literal(false),
      error: z.object({
        code: z.string(),
        message: z.string(),
        missing: StringList.describe('Settings that would make a run possible'),
      }),
    }),
  ),
  answer('GET_CODE_AGENT_STATUS', z.object({ success: z.literal(true), run: CodeAgentRun })),
  answer(
    'CANCEL_CODE_AGENT',
    z.object({ success: z.literal(true), cancel_requested: z.literal(true), run: CodeAgentRun }),
  ),
]);

export const BlueprintsResult = z.union([
  answer('LIST', z.object({ blueprints: z.array(BlueprintSummary) })),
  answer('GET', BlueprintDetail),
  answer('RECOMMEND', WizardResult),
  answer('WIP_LIST', z.object({ sessions: z.array(WipSessionView) })),
  answer('WIP_OPEN, WIP_EDIT, WIP_DISCARD', WipSessionView),
  answer('WIP_COMMIT', WipCommitView),
]);

export const MissionResult = z.union([
  answer('START, STATUS', ProjectView),
  answer('ANSWER', AnswersResult),
  answer('SET_STATUS', StatusResult),
  answer('RECORD_NOTE', Note),
  answer('RECORD_SERVER_RECORD', ServerRecord.extend({ goal: z.string() })),
]);
