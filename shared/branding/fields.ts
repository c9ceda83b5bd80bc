import { z } from 'zod';

/**
 * The writable branding fields and their one validator each, shared by `PUT /api/config/branding`
 * and the settings schema (`branding.<field>`), so both refuse the same values.
 */
export const BrandingColorSchema = z
  .string()
  .regex(/^#[0-9A-Fa-f]{6}$/, 'a colour as #rrggbb')
  .describe('#rrggbb');
export const BrandingHttpsUrlSchema = z
  .string()
  .max(2048)
  .regex(
    /^https:\/\/[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(?::[0-9]{1,5})?(?:\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$/,
    'an https:// URL',
  );
export const BrandingEmailSchema = z
  .string()
  .max(254)
  .regex(/^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+$/, 'an e-mail address');
const text = (max: number) => z.string().min(1).max(max);

export const BRANDING_FIELD_SCHEMAS = {
  product_name: text(80),
  primary_color: BrandingColorSchema,
  accent_color: BrandingColorSchema,
  support_url: BrandingHttpsUrlSchema,
  support_email: BrandingEmailSchema,
  sign_in_message: text(500),
} as const;

export type BrandingFieldName = keyof typeof BRANDING_FIELD_SCHEMAS;
export const BRANDING_FIELD_NAMES = Object.keys(BRANDING_FIELD_SCHEMAS) as BrandingFieldName[];
