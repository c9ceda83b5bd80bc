import type { EntityManager } from '@mikro-orm/postgresql';
import { ManagedSourceCodes } from '../shared/managed-sources/error-codes.js';
import type { FlowRunStatus, FlowStepStatus } from '../shared/flows/definition.js';
import {
  abandonStep,
  claimStep,
  finishRun,
  recordStepOutcome,
  starterPrincipal,
  type StepError,
} from '../shared/flows/store.js';
import type { FlowRunRow, FlowRunStepRow } from '../shared/db/entities/index.js';
import { describeError } from '../shared/log.js';
import type { ActivityDeps } from './deps.js';
import { withHeartbeat } from './heartbeat.js';

/** The activities of workflow `flow-run/<run_id>` (workflows/flow-run.ts). */
export function createFlowActivities(deps: ActivityDeps) {
  /** What a step does: a tool step calls the tool as the starter, under the step's idempotency key. */
  async function execute(
    em: EntityManager,
    run: FlowRunRow,
    step: FlowRunStepRow,
  ): Promise<{ ok: true; result: unknown } | { ok: false; error: StepError }> {
    if (step.kind !== 'tool')
      return {
        ok: false,
        error: {
          error: `Step ${step.stepIndex + 1} (${step.name}) is a \`${step.kind}\` step; this backend executes only \`tool\` steps (a tool of POST /api/tool_call with its \`arguments\`).`,
          error_type: 'not_available_here',
          payload: { code: ManagedSourceCodes.FLOW_STEP_UNSUPPORTED, kind: step.kind },
        },
      };
    if (!deps.toolbox)
      return { ok: false, error: { error: 'No tools are available in this deployment.', error_type: 'internal' } };
    const key = `flow-run/${run.runId}/step/${step.stepIndex}`;
    const tool = step.definition.tool as string;
    const outcome = await deps.toolbox.invoke(
      tool,
      step.definition.arguments ?? {},
      await starterPrincipal(em, run),
      key,
    );
    return outcome.ok ? { ok: true, result: outcome.result } : { ok: false, error: outcome.result as StepError };
  }

  return {
    /**
     * Runs one step once: a step whose outcome is recorded (an earlier attempt ended it before its
     * worker died) answers that outcome and runs nothing. Heartbeats while the step runs.
     */
    async flowRunStep(input: { runId: string; stepIndex: number }): Promise<FlowStepStatus> {
      const em = deps.orm.em.fork();
      const claimed = await claimStep(em, input.runId, input.stepIndex);
      if ('recorded' in claimed) return claimed.recorded;
      const outcome = await withHeartbeat(2_000, () =>
        execute(em, claimed.run, claimed.step).catch((err: unknown) => {
          deps.log.error('flow step failed unexpectedly', { run_id: input.runId, error: describeError(err) });
          return {
            ok: false as const,
            error: { error: `The step failed unexpectedly: ${String(err)}`, error_type: 'internal' },
          };
        }),
      );
      return recordStepOutcome(em, input, outcome);
    },

    async flowRunStepAbandoned(input: { runId: string; stepIndex: number; reason: string }): Promise<FlowStepStatus> {
      return abandonStep(deps.orm.em.fork(), input, input.reason);
    },

    async flowRunFinish(input: { runId: string; status: FlowRunStatus }): Promise<FlowRunStatus> {
      return finishRun(deps.orm.em.fork(), input.runId, input.status);
    },
  };
}

export type FlowActivities = ReturnType<typeof createFlowActivities>;
