import { z } from 'zod';
import type { AppConfig } from '../config.js';
import type { FlowRunRow, FlowRunStepRow } from '../db/entities/index.js';
import { toIso } from '../dates.js';
import { workflowUrl } from '../temporal/workflow-url.js';
import { flowRunWorkflowId } from '../../workflows/flow-run-definitions.js';
import { FLOW_RUN_STATUSES, FLOW_STEP_STATUSES } from './definition.js';

/** Wire shapes of flow runs (routes answer these). */
export const FlowRunStepView = z
  .object({
    index: z.number().describe('Position in the flow manifest `steps` list, from 0'),
    name: z.string(),
    kind: z
      .string()
      .describe('`tool`, or a kind this backend cannot execute (the step fails with `FLOW_STEP_UNSUPPORTED`)'),
    run_concurrently: z.boolean(),
    status: z.enum(FLOW_STEP_STATUSES),
    attempts: z.number().describe('Attempts started (more than 1 only after a worker stopped mid-step)'),
    result: z.unknown().describe('The tool result of a succeeded step; null otherwise'),
    error: z
      .object({ error: z.string(), error_type: z.string(), payload: z.unknown().optional() })
      .nullable()
      .describe('Why a failed step failed, in the error envelope shape'),
    started_at: z.string().nullable(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'FlowRunStep' });

export const FlowRunView = z
  .object({
    run_id: z.string(),
    workflow_id: z.string(),
    workflow_url: z.string().nullable(),
    source_id: z.string(),
    flow_name: z.string(),
    commit_sha: z.string().describe('The commit the flow was promoted at (what runs)'),
    content_hash: z.string(),
    status: z.enum(FLOW_RUN_STATUSES),
    started_by: z.string(),
    error: z.string().nullable(),
    created_at: z.string(),
    finished_at: z.string().nullable(),
    step_count: z.number(),
  })
  .meta({ id: 'FlowRun' });

export const FlowRunDetailView = FlowRunView.extend({ steps: z.array(FlowRunStepView) }).meta({ id: 'FlowRunDetail' });

export function flowRunView(config: AppConfig, run: FlowRunRow, stepCount: number): z.infer<typeof FlowRunView> {
  const workflowId = flowRunWorkflowId(run.runId);
  return {
    run_id: run.runId,
    workflow_id: workflowId,
    workflow_url: workflowUrl(config, workflowId),
    source_id: run.sourceId,
    flow_name: run.flowName,
    commit_sha: run.commitSha,
    content_hash: run.contentHash,
    status: run.status,
    started_by: run.startedBy,
    error: run.error,
    created_at: toIso(run.createdAt),
    finished_at: toIso(run.finishedAt),
    step_count: stepCount,
  };
}

export function flowRunStepView(s: FlowRunStepRow): z.infer<typeof FlowRunStepView> {
  return {
    index: s.stepIndex,
    name: s.name,
    kind: s.kind,
    run_concurrently: s.runConcurrently,
    status: s.status,
    attempts: s.attempts,
    result: s.result ?? null,
    error: s.error ?? null,
    started_at: toIso(s.startedAt),
    finished_at: toIso(s.finishedAt),
  };
}
