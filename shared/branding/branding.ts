import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { BrandingLogoEntity, type BrandingLogo } from '../db/entities/index.js';
import { toIso } from '../dates.js';
import type { Settings } from '../settings/store.js';
import { BRANDING_FIELD_NAMES, type BrandingFieldName } from './fields.js';
import type { LogoMediaType } from './image-type.js';
import { sql } from '../db/sql.js';

/**
 * Deployment-wide branding (spec, Other named resources): writable fields are the settings
 * `branding.*` (shared/settings; `PUT /api/config/branding` saves them as a partial apply), logos
 * in `branding_logos`. Branding is shown on the sign-in page, so it is read
 * without a credential; it is one per deployment, not per tenant.
 */
export const LOGO_TYPES = ['square', 'wide', 'header_light', 'header_dark'] as const;
export type LogoType = (typeof LOGO_TYPES)[number];

/** Largest logo accepted, in bytes. */
export const MAX_LOGO_BYTES = 1024 * 1024;

export type BrandingFields = Record<BrandingFieldName, string | null>;

/** The setting path of a branding field: branding is part of the one settings store (saved, env, default). */
export const brandingPath = (field: BrandingFieldName) => `branding.${field}` as const;

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

/**
 * Effective branding fields (through the settings accessor, so the same values `GET
 * /api/config/setup/sources` reports), logo URLs, and who last changed a branding field (the latest
 * recorded apply that touched a `branding.*` path).
 */
export async function readBranding(em: EntityManager, settings: Settings): Promise<BrandingView> {
  const fields = {} as BrandingFields;
  await settings.catchUp();
  for (const name of BRANDING_FIELD_NAMES) fields[name] = await settings.get(brandingPath(name));
  const logos = await sql<{ logo_type: LogoType; version: number }>(
    em,
    'select logo_type, version from branding_logos',
  );
  const url = (type: LogoType) => {
    const logo = logos.find((l) => l.logo_type === type);
    return logo ? logoUrl(type, Number(logo.version)) : null;
  };
  const [last] = await sql<{ applied_at: Date; applied_by: string }>(
    em,
    `select applied_at, applied_by from platform_settings_applies a
     where exists (select 1 from jsonb_array_elements(a.changes) c where c->>'path' like 'branding.%')
     order by id desc limit 1`,
  );
  return {
    ...fields,
    square_logo_url: url('square'),
    wide_logo_url: url('wide'),
    header_light_logo_url: url('header_light'),
    header_dark_logo_url: url('header_dark'),
    updated_at: toIso(last?.applied_at),
    updated_by: last?.applied_by ?? null,
  };
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
  const rows = await sql<{ version: number }>(
    em,
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
