import { codeAgentRunIdFor, startCodeAgentRun } from '../../code-agent/start.js';
import { notApplied, type Executor } from './types.js';
import { ActionReviewCodes } from '../refusals.js';

/**
 * An approved `code_agent.start.v1` (an agent asked to launch a coding agent that writes to a
 * repository): starts workflow `code-agent/<run_id>` as the approver would, with the run id derived
 * from the proposal id so executing twice finds the same run. Starting writes only our row and the
 * workflow; what the run does after is followed on the run (`GET_CODE_AGENT_STATUS`).
 */
export const codeAgentStartExecutor: Executor<'code_agent.start.v1'> = {
  actionType: 'code_agent.start.v1',
  async execute(payload, ctx) {
    if (!ctx.temporal || !ctx.settings)
      return notApplied(
        ActionReviewCodes.temporal_unavailable,
        'This worker has no Temporal client or settings to start the run; nothing started.',
      );
    const started = await startCodeAgentRun(
      { em: ctx.em, settings: ctx.settings, temporal: ctx.temporal, config: ctx.config },
      {
        runId: codeAgentRunIdFor(`proposal:${ctx.proposalId}`),
        tenant: ctx.tenant,
        requestedBy: `proposal:${ctx.proposalId}`,
      },
      payload,
    );
    if ('unsupported' in started) return notApplied(started.unsupported.code, started.unsupported.message);
    return {
      outcome: 'executed',
      result: { run_id: started.row.runId, adapter: started.row.adapter, status: started.row.status },
    };
  },
};
