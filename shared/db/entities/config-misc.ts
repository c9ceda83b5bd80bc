import { column, table, type Row } from './table.js';

/** One uploaded branding logo; `version` grows with every upload of its type (the URL's `v`). */
export const BrandingLogoEntity = table('BrandingLogo', 'branding_logos', {
  logoType: column.string().primary(),
  mediaType: column.string(),
  content: column.blob(),
  sha256: column.string(),
  version: column.integer(),
  uploadedAt: column.date(),
  uploadedBy: column.string(),
});
export type BrandingLogo = Row<typeof BrandingLogoEntity>;

/** An external access integration recorded for a reference name (nothing to apply on PostgreSQL). */
export const EaiAssignmentEntity = table('EaiAssignment', 'eai_assignments', {
  referenceName: column.string().primary(),
  integrationType: column.string(),
  assignedAt: column.date(),
  assignedBy: column.string(),
});
export type EaiAssignment = Row<typeof EaiAssignmentEntity>;
