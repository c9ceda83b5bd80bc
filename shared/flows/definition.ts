// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * What a flow says and how a run of it is laid out (issue 31, item 3). The spec names only
 * `run_concurrently` (default false; a batch of consecutive true steps runs at most 8 at once); the
 * rest of the step format is ours, documented in docs/architecture.md ("Flow runs"):
 *
 * ```yaml
 * steps:
 *   - name: index            # optional; default `step-<n>` (1-based)
 *     tool: _document_index  # a platform tool (the registry of POST /api/tool_call), run as the starter
 *     arguments: { action: ADD_TEXT, index_name: kb, text: "…" }
 *     run_concurrently: true # optional, default false
 * ```
 *
 * A step naming anything else (`agent:`, `prompt:`, `http:`, …) or nothing (a bare string) is kept
 * with its kind; this backend cannot execute it, so running it fails the step with a recorded error.
 */

export const FLOW_RUN_STATUSES = ['running', 'succeeded', 'failed', 'cancelled'] as const;
export type FlowRunStatus = (typeof FLOW_RUN_STATUSES)[number];
export const FLOW_STEP_STATUSES = ['pending', 'running', 'succeeded', 'failed', 'skipped', 'cancelled'] as const;
export type FlowStepStatus = (typeof FLOW_STEP_STATUSES)[number];

/** Steps of one concurrent batch running at the same time, at most (spec, limits). */
export const FLOW_MAX_CONCURRENT_STEPS = 8;
/** Steps one flow may have. */
export const FLOW_MAX_STEPS = 500;

/** The step kinds this backend executes. */
export const EXECUTABLE_STEP_KINDS = ['tool'] as const;
/** Keys that name a step kind this backend recognises but cannot execute. */
const OTHER_KINDS = ['agent', 'prompt', 'skill', 'job', 'etl_job', 'flow', 'http', 'webhook', 'run', 'script', 'shell'];

export interface FlowStep {
  index: number;
  name: string;
  /** `tool`, another kind's key, or `unspecified` (the step names nothing to run). */
  kind: string;
  runConcurrently: boolean;
  definition: Record<string, unknown>;
}

const isMapping = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

function stepOf(raw: unknown, index: number): FlowStep | string {
  const where = `step ${index + 1}`;
  if (typeof raw === 'string') return { index, name: raw, kind: 'unspecified', runConcurrently: false, definition: {} };
  if (!isMapping(raw)) return `${where} is neither a mapping nor a name`;
  if (raw.name !== undefined && (typeof raw.name !== 'string' || !raw.name.trim()))
    return `${where}: name must be a non-empty string`;
  if (raw.run_concurrently !== undefined && typeof raw.run_concurrently !== 'boolean')
    return `${where}: run_concurrently must be true or false`;
  if (raw.tool !== undefined && (typeof raw.tool !== 'string' || !raw.tool))
    return `${where}: tool must be a tool name`;
  if (raw.arguments !== undefined && !isMapping(raw.arguments)) return `${where}: arguments must be a mapping`;
  const kind = raw.tool !== undefined ? 'tool' : (OTHER_KINDS.find((k) => k in raw) ?? 'unspecified');
  return {
    index,
    name: (raw.name as string | undefined)?.trim() ?? `step-${index + 1}`,
    kind,
    runConcurrently: raw.run_concurrently === true,
    definition: raw,
  };
}

/** The steps of a parsed manifest, or why it cannot run. */
export function flowSteps(manifest: unknown): { steps: FlowStep[] } | { problem: string } {
  if (!isMapping(manifest)) return { problem: 'the flow manifest is not a mapping' };
  if (!Array.isArray(manifest.steps)) return { problem: 'the flow manifest has no `steps` list' };
  if (manifest.steps.length > FLOW_MAX_STEPS) return { problem: `a flow has at most ${FLOW_MAX_STEPS} steps` };
  const steps: FlowStep[] = [];
  for (const [i, raw] of (manifest.steps as unknown[]).entries()) {
    const step = stepOf(raw, i);
    if (typeof step === 'string') return { problem: step };
    steps.push(step);
  }
  return { steps };
}

/** The run's batches in order: a step alone, or a run of consecutive `run_concurrently` steps. */
export function flowBatches(steps: ReadonlyArray<{ index: number; runConcurrently: boolean }>): number[][] {
  const batches: number[][] = [];
  let open: number[] | null = null;
  for (const s of steps) {
    if (!s.runConcurrently) {
      open = null;
      batches.push([s.index]);
    } else if (open) open.push(s.index);
    else batches.push((open = [s.index]));
  }
  return batches;
}
