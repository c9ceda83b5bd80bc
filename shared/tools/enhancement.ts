import { z } from 'zod';
import { codeAgentRunIdFor, codeAgentRunView, startCodeAgentRun } from '../code-agent/start.js';
import { CodeAgentRunEntity } from '../db/entities/index.js';
import { WorkflowNotFoundError } from '@temporalio/client';
import { CODE_AGENT_TERMINAL } from '../code-agent/runs.js';
import { ConflictError, ForbiddenError, NotFoundError, PlatformError } from '../errors.js';
import { codeAgentCancelSignal, codeAgentWorkflowId } from '../../workflows/code-agent-definitions.js';
import { uuidFromKey } from '../ids.js';
import { createProposal } from '../action-review/create.js';
import { rowView } from '../action-review/views.js';
import { defineTool } from './registry.js';
import { EnhancementActionResult } from './results.js';

const EnhancementInput = z.discriminatedUnion('action', [
  z
    .object({
      action: z.literal('START_CODE_AGENT'),
      prompt: z
        .string()
        .trim()
        .min(1)
        .max(20_000)
        .describe('What the coding agent should change (e.g. from the ticket)'),
      ticket_key: z.string().trim().min(1).max(200).optional().describe('The ticket the run comes from'),
    })
    .strict(),
  z
    .object({
      action: z.literal('GET_CODE_AGENT_STATUS'),
      run_id: z.string().regex(/^car_[0-9a-f]{24}$/, 'a run id from START_CODE_AGENT'),
    })
    .strict(),
  z
    .object({
      action: z.literal('CANCEL_CODE_AGENT'),
      run_id: z.string().regex(/^car_[0-9a-f]{24}$/, 'a run id from START_CODE_AGENT'),
    })
    .strict(),
]);

/**
 * The group `enhancement_tools` (spec, "Code-agent connection"): `START_CODE_AGENT` launches a coding
 * agent (workflow `code-agent/<run_id>`, cloud or local runner per `enhancements.code_agent.*`);
 * `GET_CODE_AGENT_STATUS` answers status, steps and outcome while it runs. A person starts the run
 * at once; an agent's start writes to a repository on its behalf, so it raises an Action Review
 * proposal (`code_agent.start.v1`) and the run starts when a person approves and it is executed.
 * `CANCEL_CODE_AGENT` (same permission as START, taken at once for agents too: it only stops writes)
 * signals `cancel` to the run's workflow; a run that already ended answers 409 `code_agent_run_not_cancellable`.
 * Runs have no REST routes; these tool actions are the interface.
 * Without a usable adapter START_CODE_AGENT is refused 501 `not_available_here` with `payload.code`
 * `CODING_AGENT_UNSUPPORTED` and `payload.missing` (the settings to set), writing nothing.
 */
export const enhancementActionTool = defineTool({
  name: 'enhancement_action',
  description:
    'Code-agent runs: START_CODE_AGENT (prompt, ticket_key?) launches a coding agent on the configured repository (agents: an Action Review proposal a person approves); GET_CODE_AGENT_STATUS (run_id) answers status, steps, pull-request URL; CANCEL_CODE_AGENT (run_id) stops a run that has not ended (it ends cancelled).',
  input: EnhancementInput,
  result: EnhancementActionResult,
  principalKinds: ['agent', 'person'],
  permission: (input) => (input.action === 'GET_CODE_AGENT_STATUS' ? 'view_connections' : 'manage_all_connections'),
  async handler({ input, principal, deps, em, idempotencyKey }) {
    if (input.action === 'GET_CODE_AGENT_STATUS') {
      const row = await em.findOne(
        CodeAgentRunEntity,
        { runId: input.run_id, tenant: principal.tenant },
        { refresh: true },
      );
      if (!row) throw new NotFoundError(`No code-agent run ${input.run_id}.`, { reason: 'code_agent_run_not_found' });
      return { success: true, run: await codeAgentRunView(row, deps.temporal) };
    }
    if (input.action === 'CANCEL_CODE_AGENT') {
      const row = await em.findOne(
        CodeAgentRunEntity,
        { runId: input.run_id, tenant: principal.tenant },
        { refresh: true },
      );
      if (!row) throw new NotFoundError(`No code-agent run ${input.run_id}.`, { reason: 'code_agent_run_not_found' });
      if (CODE_AGENT_TERMINAL.includes(row.status))
        throw new ConflictError(`The code-agent run ${input.run_id} already ended (${row.status}).`, {
          reason: 'code_agent_run_not_cancellable',
          status: row.status,
        });
      await deps.temporal.workflow
        .getHandle(codeAgentWorkflowId(row.runId))
        .signal(codeAgentCancelSignal)
        .catch((err: unknown) => {
          // The workflow closed meanwhile: the run ended on its own; the row says how.
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        });
      return { success: true, cancel_requested: true, run: await codeAgentRunView(row, deps.temporal) };
    }
    const request = { prompt: input.prompt, ...(input.ticket_key ? { ticket_key: input.ticket_key } : {}) };
    if (principal.kind === 'agent') {
      if (!principal.botId || !principal.threadId)
        throw new ForbiddenError('This sandbox token is not bound to a bot and thread.');
      const proposal = await createProposal(deps, em, principal, {
        actionType: 'code_agent.start.v1',
        payload: request,
        expectedEffect: `Launch a coding agent on the configured repository${input.ticket_key ? ` for ${input.ticket_key}` : ''}; it may push a branch and open a pull request.`,
        requestedStatement: null,
        botId: principal.botId,
        threadId: principal.threadId,
        subject: null,
        executionOrigin: null,
        proposalId: idempotencyKey ? uuidFromKey(`code-agent:${idempotencyKey}`) : undefined,
      });
      return {
        success: true,
        status: 'pending_review',
        proposal: rowView(proposal, { scope: 'full', includeStatement: true }),
      };
    }
    const started = await startCodeAgentRun(
      { em, settings: deps.settings, temporal: deps.temporal, config: deps.config },
      {
        runId: codeAgentRunIdFor(idempotencyKey),
        tenant: principal.tenant,
        requestedBy: `${principal.kind}:${principal.id}`,
      },
      request,
    );
    if ('unsupported' in started) {
      const { message, ...detail } = started.unsupported;
      throw new PlatformError('not_available_here', message, detail);
    }
    return { success: true, run: await codeAgentRunView(started.row) };
  },
});
