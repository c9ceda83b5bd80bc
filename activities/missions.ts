import { createHash } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { createThread, findThread } from '../shared/threads/store.js';
import { applyMissionEvent } from '../shared/missions/store.js';
import { lifecycleSearchAttributes } from '../shared/temporal/lifecycle-visibility.js';
import { workflowRef } from '../shared/temporal/workflow-refs.js';
import type { MissionEventInput } from '../workflows/mission-definitions.js';
import { postMessageUpdate, threadWorkflowId } from '../workflows/thread-definitions.js';
import { withHeartbeat } from './heartbeat.js';
import type { ActivityDeps } from './deps.js';
import { sql } from '../shared/db/sql.js';

/** What one phase prompt led to: the reply's message id (the phase's evidence), or the model's failure. */
export type PromptOutcome =
  { ok: true; messageId: string; empty: boolean } | { ok: false; failure: { kind: string; message: string } };

/** The thread a mission opens for one agent: derived from both ids, so a retry finds the same thread. */
export const missionThreadId = (projectId: string, agentId: string) =>
  `mcp_${createHash('sha256').update(`${projectId}\0${agentId}`).digest('hex').slice(0, 32)}`;

/** The mission's I/O: projections (row + event), opening agent threads, posting phase prompts. */
export function createMissionActivities(deps: ActivityDeps) {
  return {
    async missionProject(input: { projectId: string; event: MissionEventInput }): Promise<void> {
      await applyMissionEvent(deps.orm.em.fork(), input.projectId, input.event);
    },

    async missionOpenThread(input: {
      projectId: string;
      tenant: string;
      ownerId: string;
      agentId: string;
    }): Promise<{ threadId: string }> {
      const em = deps.orm.em.fork();
      const threadId = missionThreadId(input.projectId, input.agentId);
      if (await findThread(em, threadId)) return { threadId };
      const agent = await sql<{ id: string }>(em, 'select id from agents where tenant = ? and id = ?', [
        input.tenant,
        input.agentId,
      ]);
      if (!agent[0])
        throw ApplicationFailure.nonRetryable(
          `Agent ${input.agentId} does not exist in this tenant.`,
          'MissionAgentGone',
        );
      await createThread(em, {
        id: threadId,
        tenant: input.tenant,
        agentId: input.agentId,
        ownerId: input.ownerId,
        origin: 'mission',
        callerPersona: null,
        callerGoal: null,
        title: `Mission ${input.projectId}`,
      }).catch(async (err: unknown) => {
        // A concurrent attempt created it first: that is the same thread.
        if (!(await findThread(deps.orm.em.fork(), threadId))) throw err;
      });
      return { threadId };
    },

    /** Posts one phase prompt into a thread (update-with-start, as the threads route does) and waits for the reply. */
    async missionPostPrompt(input: {
      tenant: string;
      threadId: string;
      agentId: string;
      ownerId: string;
      messageId: string;
      content: string;
    }): Promise<PromptOutcome> {
      const temporal = deps.temporal;
      if (!temporal) throw ApplicationFailure.nonRetryable('The worker has no Temporal client.', 'MissionNoClient');
      const startWorkflowOperation = new WithStartWorkflowOperation(workflowRef('threadWorkflow'), {
        workflowId: threadWorkflowId(input.threadId),
        taskQueue: deps.config.temporal.taskQueue,
        args: [{ threadId: input.threadId, tenant: input.tenant, agentId: input.agentId }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: lifecycleSearchAttributes('threadWorkflow', {
          tenant: input.tenant,
          resourceId: input.threadId,
          status: 'idle',
        }),
        memo: { agent_id: input.agentId, owner: input.ownerId, origin: 'mission' },
      });
      // The turn is the thread's: a cancelled attempt (worker shutdown, heartbeat timeout) stops waiting
      // for it, and the retry finds the same turn by its message id.
      const ctx = Context.current();
      const result = await withHeartbeat(2000, () =>
        Promise.race([
          temporal.workflow.executeUpdateWithStart(postMessageUpdate, {
            args: [
              { messageId: input.messageId, content: input.content, authorKind: 'mission', authorId: input.ownerId },
            ],
            startWorkflowOperation,
          }),
          ctx.cancelled,
        ]),
      );
      // A model failure is shown in the thread too; the mission records it as why the phase could not run.
      if (!result.ok)
        return { ok: false, failure: { kind: result.llmFailure.kind, message: result.llmFailure.message } };
      return { ok: true, messageId: result.messageId, empty: !result.reply.trim() };
    },
  };
}

export type MissionActivities = ReturnType<typeof createMissionActivities>;
