import { column, table, type Row } from './table.js';
import type { FlowRunStatus, FlowStepStatus } from '../../flows/definition.js';

/** A flow of a managed source as last promoted (issue 12): the content hash and commit it was promoted at. */
export const ManagedFlowEntity = table('ManagedFlowRow', 'managed_flows', {
  sourceId: column.string().primary(),
  flowName: column.string().primary(),
  tenant: column.string(),
  contentHash: column.string(),
  commitSha: column.string(),
  manifestPath: column.text(),
  promotedAt: column.date(),
  promotedBy: column.string(),
  /** The manifest's text as promoted (what a run executes); null for flows promoted before flow runs. */
  definition: column.text().nullable(),
});
export type ManagedFlowRow = Row<typeof ManagedFlowEntity>;

/** One run of a promoted flow (workflow `flow-run/<run_id>`, issue 31). */
export const FlowRunEntity = table('FlowRunRow', 'flow_runs', {
  runId: column.string().primary(),
  tenant: column.string(),
  sourceId: column.string(),
  flowName: column.string(),
  commitSha: column.string(),
  contentHash: column.string(),
  status: column.string<FlowRunStatus>(),
  /** The person who started it; tool steps run as them, with these roles (as of the start). */
  startedBy: column.string(),
  startedByRoles: column.json<string[]>(),
  error: column.text().nullable(),
  createdAt: column.date(),
  finishedAt: column.date().nullable(),
});
export type FlowRunRow = Row<typeof FlowRunEntity>;

/** One step of a flow run and its outcome. */
export const FlowRunStepEntity = table('FlowRunStepRow', 'flow_run_steps', {
  runId: column.string().primary(),
  stepIndex: column.integer().primary(),
  name: column.string(),
  kind: column.string(),
  definition: column.json<Record<string, unknown>>(),
  runConcurrently: column.boolean(),
  status: column.string<FlowStepStatus>(),
  attempts: column.integer(),
  result: column.json<unknown>().nullable(),
  error: column.json<{ error: string; error_type: string; payload?: unknown } | null>().nullable(),
  startedAt: column.date().nullable(),
  finishedAt: column.date().nullable(),
});
export type FlowRunStepRow = Row<typeof FlowRunStepEntity>;
