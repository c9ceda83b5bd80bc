import { z } from 'zod';
import { demoBudgetAggregate, setDemoBudgetCap } from '../../shared/deployment/demo-budget.js';
import { setDemoOwner } from '../../shared/deployment/demo-owner.js';
import { defineRoute, errorResponse, successEnvelope } from '../http/route.js';

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
  defineRoute({
    method: 'put',
    path: '/api/internal/demo-access/owner',
    operationId: 'setDemoAccessOwner',
    summary: "Set the hosted demo's owner; 409 when a different owner exists and `force` is not set",
    description:
      'The address must be verified: the caller attests it with `email_verified: true` (the identity provider verified it). `sub` may be empty (the owner has not signed in yet; answered as null). The same address with no conflicting `sub` is the same owner (`changed` false unless a new `sub` or display name is recorded); a different owner answers 409 `DEMO_OWNER_EXISTS` unless `force` is true. The display name comes from the signed-in user with that `sub` (else that address).',
    tags: ['internal'],
    access: { kind: 'internal' },
    body: z
      .object({
        email: z
          .string()
          .min(1)
          .max(254)
          .regex(/^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+$/, 'an e-mail address'),
        email_verified: z.literal(true).describe('The identity provider verified this address'),
        sub: z.string().max(256).default(''),
        force: z.boolean().default(false),
      })
      .strict(),
    bodyKind: 'config',
    responses: {
      200: {
        description: 'Owner',
        schema: successEnvelope(
          z.object({
            owner_sub: z.string().nullable(),
            owner_email: z.string(),
            owner_display_name: z.string().nullable(),
            changed: z.boolean(),
          }),
        ),
      },
      409: errorResponse('A different owner exists (send `force: true`)'),
    },
    handler: async ({ body, em }) => ({
      success: true,
      data: await setDemoOwner(em, body, 'internal-token'),
    }),
  }),
];
