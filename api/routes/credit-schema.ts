import { z } from 'zod';

/**
 * The credit reading as the desktop and the hosted-AI credit routes answer it (spec: "Credit reading"):
 * one schema, so the two answers cannot drift apart. Views built in shared/desktop/service.ts (`creditView`).
 */
export const CreditReadingSchema = z.object({
  available: z.boolean().describe('Whether a reading exists'),
  model: z.string().nullable(),
  max_budget_usd: z.number().nullable(),
  spend_usd: z.number().nullable(),
  used_fraction: z.number().nullable(),
  exhausted: z.boolean().nullable(),
  heads_up_due: z.boolean().nullable().describe('At least 80 % used and not exhausted'),
  alternatives: z.array(z.string()),
  percent_used: z.number().nullable(),
  resets_at: z.string().nullable().describe('Monthly plan reset; null when no reading'),
  read_at: z.string().nullable().describe('When the provisioner gave this reading'),
});
