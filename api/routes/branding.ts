import { z } from 'zod';
import { findLogo, LOGO_TYPES, MAX_LOGO_BYTES, readBranding, brandingPath } from '../../shared/branding/branding.js';
import { BRANDING_FIELD_NAMES, BRANDING_FIELD_SCHEMAS as F } from '../../shared/branding/fields.js';
import type { SettingPath } from '../../shared/settings/definitions.js';
import { saveSettingValues } from '../../shared/settings/save-settings.js';
import { LOGO_MEDIA_TYPES } from '../../shared/branding/image-type.js';
import { NotFoundError } from '../../shared/errors.js';
import { uploadLogo } from '../../shared/branding/logo-upload.js';
import { defineRoute, errorResponse, successEnvelope } from '../http/route.js';

const tags = ['config'];
const LogoType = z.enum(LOGO_TYPES);
const BrandingSchema = z.object({
  product_name: z.string().nullable(),
  primary_color: z.string().nullable(),
  accent_color: z.string().nullable(),
  support_url: z.string().nullable(),
  support_email: z.string().nullable(),
  sign_in_message: z.string().nullable(),
  square_logo_url: z.string().nullable().describe('Read-only; `v` changes with each upload'),
  wide_logo_url: z.string().nullable().describe('Read-only; `v` changes with each upload'),
  header_light_logo_url: z.string().nullable().describe('Read-only; `v` changes with each upload'),
  header_dark_logo_url: z.string().nullable().describe('Read-only; `v` changes with each upload'),
  updated_at: z.string().nullable(),
  updated_by: z.string().nullable(),
});

const LOGO_DOC = `Logo types: ${LOGO_TYPES.join(', ')}. The file (multipart field \`file\`, at most ${MAX_LOGO_BYTES} bytes) must be ${LOGO_MEDIA_TYPES.join(', ')}, judged from its bytes; SVG is refused (it can carry script). A declared part content type that contradicts the bytes is refused too. Refusals: 400 no file or an empty one, 413 too large, 415 not an accepted image (payload.reason \`not_an_image\`, \`svg_not_accepted\`, \`content_type_mismatch\`).`;

export const brandingRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/config/branding',
    operationId: 'getBranding',
    summary: 'Deployment branding (public: the sign-in page shows it); logo URLs are read-only and versioned',
    tags,
    access: { kind: 'public' },
    responses: { 200: { description: 'Branding', schema: successEnvelope(BrandingSchema) } },
    handler: async ({ em, deps }) => ({ success: true, data: await readBranding(em, deps.settings) }),
  }),
  defineRoute({
    method: 'put',
    path: '/api/config/branding',
    operationId: 'updateBranding',
    summary: 'Change any subset of the writable branding fields; null clears a field',
    description:
      'Writable: product_name, primary_color and accent_color (#rrggbb), support_url (https), support_email, sign_in_message: the settings `branding.<field>` (the same values `GET /api/config/setup/sources` and the configuration apply see; a change is recorded as a partial apply). Logo URLs are read-only (upload with POST /api/config/branding/logo/{logo_type}); any other field answers 422 and nothing is written.',
    tags,
    access: { kind: 'authenticated', permission: 'access_config_panel' },
    body: z
      .object({
        product_name: F.product_name.nullable().optional(),
        primary_color: F.primary_color.nullable().optional(),
        accent_color: F.accent_color.nullable().optional(),
        support_url: F.support_url.nullable().optional(),
        support_email: F.support_email.nullable().optional(),
        sign_in_message: F.sign_in_message.nullable().optional(),
      })
      .strict(),
    bodyKind: 'config',
    responses: { 200: { description: 'Stored', schema: successEnvelope(BrandingSchema) } },
    handler: async ({ em, deps, body, principal }) => {
      const values: Partial<Record<SettingPath, unknown>> = {};
      for (const name of BRANDING_FIELD_NAMES) if (body[name] !== undefined) values[brandingPath(name)] = body[name];
      if (Object.keys(values).length > 0) await saveSettingValues(deps, em, principal, values);
      return { success: true, data: await readBranding(em, deps.settings) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/config/branding/logo/:logo_type',
    operationId: 'uploadBrandingLogo',
    summary: 'Upload a logo; answers its new URL, whose version parameter changes with every upload',
    description: LOGO_DOC,
    tags,
    access: { kind: 'authenticated', permission: 'access_config_panel' },
    params: z.object({ logo_type: LogoType }),
    body: z.object({}),
    bodyKind: 'multipart',
    multipart: { maxFileBytes: MAX_LOGO_BYTES, maxFiles: 1, maxFields: 4, fileFields: ['file'] },
    ownShape:
      'Configuration, secrets and providers: POST /api/config/branding/logo/{logo_type} responds `success`, `logo_url`',
    responses: {
      200: {
        description: 'Stored',
        schema: z.object({
          success: z.literal(true),
          logo_url: z.string(),
          logo_type: LogoType,
          version: z.number().int(),
          media_type: z.enum(LOGO_MEDIA_TYPES),
        }),
      },
      415: errorResponse('Not an accepted image, judged from its bytes'),
    },
    handler: async ({ em, params, files, principal }) => ({
      success: true,
      ...(await uploadLogo(
        em,
        params.logo_type,
        files.find((f) => f.field === 'file'),
        principal.id,
      )),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/branding/logos/:logo_type',
    operationId: 'getBrandingLogo',
    summary: 'A branding logo (public), with its own content type and cache headers',
    description:
      'With `v` equal to the current version the answer is cacheable for a year (`Cache-Control: public, max-age=31536000, immutable`); without it, or with an older one, the current logo is served with `no-cache` and the client revalidates with its ETag (304 when unchanged).',
    tags,
    access: { kind: 'public' },
    params: z.object({ logo_type: LogoType }),
    query: z.object({
      v: z
        .string()
        .regex(/^[0-9]{1,10}$/)
        .optional(),
    }),
    responses: {
      200: { description: 'The image (image/png, image/jpeg, image/webp or image/gif)' },
      304: { description: 'Not modified (If-None-Match matched the ETag)' },
      404: errorResponse('No logo of this type was uploaded'),
    },
    handler: async ({ em, params, query, koa }) => {
      const logo = await findLogo(em, params.logo_type);
      if (!logo) throw new NotFoundError(`No ${params.logo_type} logo has been uploaded.`);
      const etag = `"${logo.sha256.slice(0, 32)}-v${logo.version}"`;
      koa.set('ETag', etag);
      koa.set(
        'Cache-Control',
        query.v === String(logo.version) ? 'public, max-age=31536000, immutable' : 'public, no-cache',
      );
      koa.set('X-Content-Type-Options', 'nosniff');
      koa.set('Content-Security-Policy', "default-src 'none'; sandbox");
      const match = koa.get('if-none-match');
      if (match && match.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)) {
        koa.status = 304;
        koa.body = '';
        return;
      }
      koa.type = logo.mediaType;
      koa.body = Buffer.from(logo.content);
    },
  }),
];
