import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { BrandingLogoEntity, type BrandingLogo } from '../db/entities/index.js';
import { toIso } from '../dates.js';
import { readSettingRow, writeSettingRow } from '../deployment/settings-rows.js';
import type { LogoMediaType } from './image-type.js';

/**
 * Deployment-wide branding (spec, Other named resources): writable fields in `deployment_settings`
 * (`branding`), logos in `branding_logos`. Branding is shown on the sign-in page, so it is read
 * without a credential; it is one per deployment, not per tenant.
 */
export const LOGO_TYPES = ['square', 'wide', 'header_light', 'header_dark'] as const;
export type LogoType = (typeof LOGO_TYPES)[number];

/** Largest logo accepted, in bytes. */
export const MAX_LOGO_BYTES = 1024 * 1024;

export const BRANDING_KEY = 'branding';

export interface BrandingFields {
  product_name: string | null;
  primary_color: string | null;
  accent_color: string | null;
  support_url: string | null;
  support_email: string | null;
  sign_in_message: string | null;
}

export const BRANDING_FIELD_NAMES: readonly (keyof BrandingFields)[] = [
  'product_name',
  'primary_color',
  'accent_color',
  'support_url',
  'support_email',
  'sign_in_message',
];

const EMPTY: BrandingFields = {
  product_name: null,
  primary_color: null,
  accent_color: null,
  support_url: null,
  support_email: null,
  sign_in_message: null,
};

/** The public path a logo is served at; `v` changes with every upload, so the URL can be cached forever. */
export function logoUrl(type: LogoType, version: number): string {
  return `/api/branding/logos/${type}?v=${version}`;
}

export interface BrandingView extends BrandingFields {
  square_logo_url: string | null;
  wide_logo_url: string | null;
  header_light_logo_url: string | null;
  header_dark_logo_url: string | null;
  updated_at: string | null;
  updated_by: string | null;
}

export async function readBranding(em: EntityManager): Promise<BrandingView> {
  const row = await readSettingRow<Partial<BrandingFields>>(em, BRANDING_KEY);
  const logos = await em
    .getConnection()
    .execute<Array<{ logo_type: LogoType; version: number }>>('select logo_type, version from branding_logos');
  const url = (type: LogoType) => {
    const logo = logos.find((l) => l.logo_type === type);
    return logo ? logoUrl(type, Number(logo.version)) : null;
  };
  const fields = { ...EMPTY };
  for (const name of BRANDING_FIELD_NAMES) {
    const v = row?.value?.[name];
    if (typeof v === 'string') fields[name] = v;
  }
  return {
    ...fields,
    square_logo_url: url('square'),
    wide_logo_url: url('wide'),
    header_light_logo_url: url('header_light'),
    header_dark_logo_url: url('header_dark'),
    updated_at: toIso(row?.updatedAt),
    updated_by: row?.updatedBy ?? null,
  };
}

/** Merges the given fields (null clears one) into the stored branding; fields not given stay. */
export async function updateBranding(
  em: EntityManager,
  patch: Partial<BrandingFields>,
  updatedBy: string,
): Promise<BrandingView> {
  await em.transactional(async (tx) => {
    const row = await readSettingRow<Partial<BrandingFields>>(tx as EntityManager, BRANDING_KEY, { forUpdate: true });
    const next: Partial<BrandingFields> = { ...(row?.value ?? {}) };
    for (const name of BRANDING_FIELD_NAMES) if (patch[name] !== undefined) next[name] = patch[name];
    await writeSettingRow(tx as EntityManager, BRANDING_KEY, next, updatedBy);
  });
  return readBranding(em);
}

/** Stores a logo (already checked) and bumps its version; answers the new version. */
export async function storeLogo(
  em: EntityManager,
  type: LogoType,
  mediaType: LogoMediaType,
  content: Buffer,
  uploadedBy: string,
  now = new Date(),
): Promise<number> {
  const sha256 = createHash('sha256').update(content).digest('hex');
  const rows = await em.getConnection().execute<Array<{ version: number }>>(
    `insert into branding_logos (logo_type, media_type, content, sha256, version, uploaded_at, uploaded_by)
     values (?, ?, ?, ?, 1, ?, ?)
     on conflict (logo_type) do update set media_type = excluded.media_type, content = excluded.content,
       sha256 = excluded.sha256, version = branding_logos.version + 1,
       uploaded_at = excluded.uploaded_at, uploaded_by = excluded.uploaded_by
     returning version`,
    [type, mediaType, content, sha256, now, uploadedBy],
  );
  return Number(rows[0]!.version);
}

export async function findLogo(em: EntityManager, type: LogoType): Promise<BrandingLogo | null> {
  return em.fork().findOne(BrandingLogoEntity, { logoType: type });
}
