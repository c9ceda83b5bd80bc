import { z } from 'zod';
import {
  DOCS_LOGIN_TTL_SECONDS,
  DOCS_PATH_PATTERN,
  MAX_DOCS_PATH_LENGTH,
  startDocsSession,
} from '../../shared/docs/docs-session.js';
import { defineRoute, errorResponse, successEnvelope } from '../http/route.js';

export const docsSessionRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/docs/session',
    operationId: 'createDocsSession',
    summary: 'A sign-in link into the hosted documentation, carrying a login JWT valid 10 seconds',
    description:
      'People only (identity-provider sign-in or their own personal access token); agents, apps and the service identity answer 403. `path` is a page relative to the docs tree (letters, digits, `._~-` segments not starting with a dot, optional leading `/` and `#fragment`); absolute URLs, schemes, `//host`, `..`, backslashes, queries and %-encoding answer 400 (invalid redirect). 503 when the setting `docs.base_url` (env PLATFORM_DOCS_BASE_URL; changeable at run time through the configuration apply) or PLATFORM_SIGNING_KEY is unset. The JWT (HS256, PLATFORM_SIGNING_KEY, `aud` `platform-docs`) names the person, the page (`redirect`) and `session_max_seconds` 3600.',
    tags: ['docs'],
    access: { kind: 'authenticated', permission: null, principalKinds: ['person'] },
    body: z
      .object({
        path: z
          .string()
          .max(MAX_DOCS_PATH_LENGTH)
          .regex(DOCS_PATH_PATTERN, 'invalid redirect: a relative path inside the docs tree')
          .describe('Page relative to the docs tree, e.g. `guides/connections.html#crm`; empty: the docs home'),
      })
      .strict(),
    bodyKind: 'config',
    responses: {
      200: {
        description: 'Sign-in link',
        schema: successEnvelope(
          z.object({
            url: z.string(),
            expires_at: z.string(),
            expires_in: z.literal(DOCS_LOGIN_TTL_SECONDS),
            redirect: z.string(),
          }),
        ),
      },
      503: errorResponse('Hosted documentation is not configured'),
    },
    handler: async ({ em, deps, body, principal }) => ({
      success: true,
      data: await startDocsSession(deps, em, principal, body.path),
    }),
  }),
];
