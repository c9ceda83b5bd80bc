/** The wire shape of a personal access token (never the token itself) and its mapping from the stored row. */
import { z } from 'zod';
import type { PersonalAccessToken } from '../db/entities/index.js';
import { toIso } from '../dates.js';

export const PatSchema = z
  .object({
    id: z.string().uuid(),
    name: z.string(),
    token_prefix: z.string().describe('First characters of the token, to recognise it'),
    created_at: z.string(),
    expires_at: z.string().nullable(),
    last_used_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
  })
  .meta({ id: 'PersonalAccessToken' });

export const patView = (p: PersonalAccessToken) => ({
  id: p.id,
  name: p.name,
  token_prefix: p.tokenPrefix,
  created_at: toIso(p.createdAt),
  expires_at: toIso(p.expiresAt),
  last_used_at: toIso(p.lastUsedAt),
  revoked_at: toIso(p.revokedAt),
});
