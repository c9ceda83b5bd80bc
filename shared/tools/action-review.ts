import { z } from 'zod';
import { ACTION_TYPES, ACTION_TYPE_DESCRIPTION } from '../action-review/action-types.js';
import { ForbiddenError } from '../errors.js';
import { createProposal } from '../action-review/create.js';
import { executeProposal } from '../action-review/execute.js';
import { rowView } from '../action-review/views.js';
import { withStatements } from '../action-review/statements.js';
import { findVisibleProposal } from '../action-review/subject-probes.js';
import { PROVER_KINDS, readProverSubject } from '../action-review/prover-subjects.js';
import { defineTool } from './registry.js';
import { ActionReviewResult } from './results.js';
import { uuidFromKey } from '../ids.js';

const ProposalId = z.string().min(1).max(100);

const ActionReviewToolInput = z.discriminatedUnion('action', [
  z.strictObject({
    action: z.literal('CREATE_PROPOSAL'),
    action_type: z.enum(ACTION_TYPES).describe(ACTION_TYPE_DESCRIPTION),
    payload: z.record(z.string(), z.unknown()),
    expected_effect: z.string().trim().min(1).max(20_000),
    requested_statement: z.string().max(100_000).optional(),
    subject: z.strictObject({ kind: z.string().min(1).max(100), id: z.string().min(1).max(200) }).optional(),
    execution_origin: z.enum(['any', 'proposal_thread']).optional(),
  }),
  z.strictObject({ action: z.literal('GET_REQUEST_STATUS'), proposal_id: ProposalId }),
  z.strictObject({ action: z.literal('EXECUTE_PROPOSAL'), proposal_id: ProposalId }),
  z.strictObject({
    action: z.literal('GET_PROVER_SUBJECT'),
    kind: z.enum(PROVER_KINDS),
    subject_id: z.string().min(1).max(200),
  }),
]);

/**
 * The `action_review` tool group. An agent (its `gsk_` token fixes bot and thread) raises
 * proposals, polls their status, and executes approved ones from its thread. A person may use it
 * too (with APPROVE_AGENT_ACTION), outside any conversation: no hand-back, poll the status.
 */
export const actionReviewTool = defineTool({
  name: 'action_review',
  description:
    'Propose a governed action for a person to decide (CREATE_PROPOSAL), poll it (GET_REQUEST_STATUS), execute it once approved (EXECUTE_PROPOSAL); read the state of a Prover subject you requested on (GET_PROVER_SUBJECT).',
  input: ActionReviewToolInput,
  result: ActionReviewResult,
  principalKinds: ['agent', 'person'],
  permission: 'APPROVE_AGENT_ACTION',
  async handler({ input, principal, deps, em, idempotencyKey }) {
    switch (input.action) {
      case 'CREATE_PROPOSAL': {
        const agent = principal.kind === 'agent';
        if (agent && (!principal.botId || !principal.threadId))
          throw new ForbiddenError('This sandbox token is not bound to a bot and thread.');
        const row = await createProposal(deps, em, principal, {
          actionType: input.action_type,
          payload: input.payload,
          expectedEffect: input.expected_effect,
          requestedStatement: input.requested_statement ?? null,
          botId: agent ? principal.botId! : null,
          threadId: agent ? principal.threadId! : null,
          subject: input.subject ?? null,
          executionOrigin: input.execution_origin ?? null,
          proposalId: idempotencyKey ? uuidFromKey(idempotencyKey) : undefined,
        });
        const [withText] = await withStatements(em, [row]);
        return {
          proposal: rowView(withText!, { scope: 'full', includeStatement: true }),
          handback: row.threadId ? 'conversation' : 'poll_request_status',
        };
      }
      case 'GET_REQUEST_STATUS': {
        const [row] = await withStatements(em, [await findVisibleProposal(em, principal, input.proposal_id)]);
        return { proposal: rowView(row!, { scope: 'full', includeStatement: true }) };
      }
      case 'GET_PROVER_SUBJECT':
        return { subject: await readProverSubject(em, principal, { kind: input.kind, id: input.subject_id }) };
      case 'EXECUTE_PROPOSAL':
        return executeProposal(deps, em, principal, input.proposal_id, {
          surface: 'tool_call',
          threadId: principal.threadId ?? null,
        });
    }
  },
});
