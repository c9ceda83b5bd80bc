import { z } from 'zod';
import { activateHostedAi, hostedAiCredit, hostedAiStatus } from '../../shared/demo/hosted-ai.js';
import { defineRoute, errorResponse, queryBoolean, successEnvelope } from '../http/route.js';
import { CreditReadingSchema } from './credit-schema.js';

/**
 * Hosted AI of the hosted demo (spec: "Hosted … status, activation and credit routes", paths not
 * shown there, ours here). Rules in shared/demo/hosted-ai.ts.
 */
const tags = ['hosted-ai'];
const NOT_PROVISIONED =
  'Not a provisioned hosted instance: no hosted AI provisioner is configured (`not_found`, `payload.code` `hosted_ai_not_provisioned`)';
const PROVISIONER_DOWN =
  'The hosted AI provisioner failed or is unreachable (`service_unavailable`, `payload.dependency` `hosted_ai_provisioner`)';

const Status = z.object({
  available: z.boolean().describe('A hosted AI provisioner is configured (a provisioned instance)'),
  configured: z.boolean().describe('The AI key has been issued and stored'),
  active: z.boolean().describe('Available, configured, and the last credit reading is not exhausted'),
  ai_only: z.boolean().describe('The demo uses only the hosted AI (`PLATFORM_HOSTED_AI_ONLY`)'),
  activated_at: z.string().nullable(),
});

export const hostedAiRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/hosted-ai/status',
    operationId: 'getHostedAiStatus',
    summary: "The hosted demo AI's status: available, configured, active and the AI-only flag",
    tags,
    access: { kind: 'authenticated', permission: null },
    responses: { 200: { description: 'Status', schema: successEnvelope(Status) } },
    handler: async ({ deps, em }) => ({ success: true, data: await hostedAiStatus(deps, em) }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/hosted-ai/activate',
    operationId: 'activateHostedAi',
    summary: "Issue the hosted demo's AI key; the demo owner's bearer token only; idempotent once configured",
    description:
      'Needs the demo owner (set by `PUT /api/internal/demo-access/owner`) signed in, whose token carried an e-mail address and a name. Already configured: answers the same status and issues no second key. Key issuance: at most 10 provisioner requests per minute (429 with `Retry-After`).',
    tags,
    access: { kind: 'authenticated', permission: null },
    responses: {
      200: { description: 'Status after activation', schema: successEnvelope(Status) },
      403: errorResponse(
        'Not the demo owner (`payload.code` `not_demo_owner`), profile incomplete (`profile_incomplete`, `payload.missing`), or the demo gate (`demo_access_denied`)',
      ),
      404: errorResponse(NOT_PROVISIONED),
      429: errorResponse('Key issuance rate reached (`too_many_requests`); `Retry-After` gives the seconds to wait'),
      503: errorResponse(PROVISIONER_DOWN),
    },
    handler: async ({ deps, em, principal }) => ({
      success: true,
      data: await activateHostedAi(deps, em, principal),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/hosted-ai/credit',
    operationId: 'getHostedAiCredit',
    summary: "The hosted AI key's credit reading (cached up to 180 s; `fresh` refreshes one older than 15 s)",
    tags,
    access: { kind: 'authenticated', permission: null },
    query: z.object({ fresh: queryBoolean(false) }),
    responses: {
      200: { description: 'Credit (`available` false until activated)', schema: successEnvelope(CreditReadingSchema) },
      404: errorResponse(NOT_PROVISIONED),
      503: errorResponse(PROVISIONER_DOWN),
    },
    handler: async ({ deps, em, query }) => ({ success: true, data: await hostedAiCredit(deps, em, query.fresh) }),
  }),
];
