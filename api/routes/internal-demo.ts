import { z } from 'zod';
import { demoBudgetAggregate, setDemoBudgetCap } from '../../shared/deployment/demo-budget.js';
import { defineRoute, successEnvelope } from '../http/route.js';

const AggregateSchema = z.object({
  spend_usd: z.number(),
  cap_usd: z.number().nullable(),
  remaining_usd: z.number().nullable(),
  exhausted: z.boolean(),
  llm_call_count: z.number().int(),
  latest_llm_call_at: z.string().nullable().describe('Null when unreadable or no call yet'),
  latest_sign_in_at: z.string().nullable().describe('Null when unreadable or no sign-in yet'),
});

export const internalDemoRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/internal/demo-budget/aggregate',
    operationId: 'getDemoBudgetAggregate',
    summary: 'Deployment language-model spend versus cap, with the latest call and sign-in times',
    tags: ['internal'],
    access: { kind: 'internal' },
    responses: { 200: { description: 'Aggregate', schema: successEnvelope(AggregateSchema) } },
    handler: async ({ em }) => ({ success: true, data: await demoBudgetAggregate(em) }),
  }),
  defineRoute({
    method: 'put',
    path: '/api/internal/demo-budget/cap',
    operationId: 'setDemoBudgetCap',
    summary: 'Set the effective spend cap immediately; the response echoes it',
    tags: ['internal'],
    access: { kind: 'internal' },
    body: z.object({ cap_usd: z.number().finite().min(0).max(1_000_000) }).strict(),
    bodyKind: 'config',
    responses: {
      200: {
        description: 'Stored',
        schema: successEnvelope(z.object({ cap_usd: z.number(), updated_at: z.string() })),
      },
    },
    handler: async ({ body, em }) => ({
      success: true,
      data: await setDemoBudgetCap(em, body.cap_usd, 'internal-token'),
    }),
  }),
];
