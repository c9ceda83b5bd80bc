import type { ActionType } from '../action-types.js';
import { PayloadSchemas } from '../payloads.js';
import type { EffectOutcome } from '../types.js';
import { crmMergeExecutor } from './crm-merge.js';
import { learningAdoptExecutor, proverExecutors } from './internal.js';
import { localCliExecutor } from './local-cli.js';
import { ticketWriteExecutor } from './ticket.js';
import { codeAgentStartExecutor } from './code-agent.js';
import { kbPullRequestExecutor } from './kb-pull-request.js';
import { notApplied, type Executor, type ExecutorContext } from './types.js';
import { ActionReviewCodes } from '../refusals.js';

/** One registered executor per action type; a missing one fails the type check. */
const executors: { [T in ActionType]: Executor<T> } = {
  'crm.merge.v1': crmMergeExecutor,
  'learning.adopt.v1': learningAdoptExecutor,
  'local_cli.run.v1': localCliExecutor,
  'ticket.write.v1': ticketWriteExecutor,
  'code_agent.start.v1': codeAgentStartExecutor,
  'kb.pull_request.v1': kbPullRequestExecutor,
  ...proverExecutors,
};

/** Re-checks the payload against its schema, then applies the effect. */
export async function runExecutor(
  actionType: ActionType,
  payload: unknown,
  ctx: ExecutorContext,
): Promise<EffectOutcome> {
  const parsed = PayloadSchemas[actionType].safeParse(payload);
  if (!parsed.success)
    return notApplied(
      ActionReviewCodes.invalid_payload,
      parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  const executor = executors[actionType] as Executor<ActionType>;
  return executor.execute(parsed.data as never, ctx);
}

export type { ExecutorContext } from './types.js';
