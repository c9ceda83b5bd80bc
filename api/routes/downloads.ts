import { z } from 'zod';
import { redeemDownload } from '../../shared/downloads/signed-urls.js';
import { defineRoute, errorResponse } from '../http/route.js';

/** `attachment; filename="<ascii>"; filename*=UTF-8''<utf-8>` so any browser saves it under its name. */
function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

export const downloadRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/downloads/:token',
    operationId: 'getSignedDownload',
    summary: 'Download a file an agent produced, through a short-lived single-use signed link',
    description:
      'The link itself is the credential (HS256 JWT signed with PLATFORM_SIGNING_KEY, else a key derived from the secrets root key). It works once: a second use or an expired link answers 410 `gone` (payload.reason `used` or `expired`); a forged or malformed link, or one for a missing file, answers 404 `not_found` (payload.reason `invalid_link`) so nothing about it is confirmed.',
    tags: ['downloads'],
    access: { kind: 'public' },
    params: z.object({ token: z.string().min(1).max(4096) }),
    responses: {
      200: { description: 'The file (its own content type), as an attachment' },
      404: errorResponse('Forged, malformed, or the file is gone'),
      410: errorResponse('Expired or already used'),
    },
    handler: async ({ params, em, deps, koa }) => {
      const file = await redeemDownload(em, deps.config, params.token);
      koa.set('Cache-Control', 'no-store');
      koa.set('X-Content-Type-Options', 'nosniff');
      koa.set('Content-Disposition', contentDisposition(file.fileName));
      koa.type = file.contentType;
      koa.body = file.content;
    },
  }),
];
