import { z } from 'zod';
import { PROVER_KINDS, readProverSubject } from '../../shared/action-review/prover-subjects.js';
import { ProverSubjectViewSchema } from '../../shared/action-review/views.js';
import { defineRoute, successEnvelope } from '../http/route.js';

/**
 * The effect of the `prover.*` action types, readable (the spec shows no route; this one is ours and in
 * the OpenAPI document). Agents read the same through the action_review tool's GET_PROVER_SUBJECT.
 */
export const proverRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/prover/subjects/:kind/:subject_id',
    operationId: 'getProverSubject',
    summary: 'A Prover subject’s state: the decisions Action Review executed on it (its owner or its requesting agent)',
    description:
      'A Prover subject is registered by the first prover.* proposal naming it (finding_id, view_id, package_id, bundle_id or entry_id), owned by its requester (a person) or, for an agent, by the owner of the thread it asked in, and tied to the requesting agent. Only they may see it: anyone else’s proposal naming it, and this read, answer 404 as for an unknown subject.',
    tags: ['action-review'],
    access: { kind: 'authenticated', permission: null },
    params: z.object({ kind: z.enum(PROVER_KINDS), subject_id: z.string().min(1).max(200) }),
    responses: {
      200: { description: 'The subject and its state', schema: successEnvelope(ProverSubjectViewSchema) },
      404: { description: 'Unknown, or not visible to the caller (hidden subjects answer as unknown)' },
    },
    handler: async ({ em, principal, params }) => ({
      success: true,
      data: await readProverSubject(em, principal, { kind: params.kind, id: params.subject_id }),
    }),
  }),
];
