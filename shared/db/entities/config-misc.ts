import { EntitySchema } from '@mikro-orm/core';

/** One uploaded branding logo; `version` grows with every upload of its type (the URL's `v`). */
export interface BrandingLogo {
  logoType: string;
  mediaType: string;
  content: Buffer;
  sha256: string;
  version: number;
  uploadedAt: Date;
  uploadedBy: string;
}

export const BrandingLogoEntity = new EntitySchema<BrandingLogo>({
  name: 'BrandingLogo',
  tableName: 'branding_logos',
  properties: {
    logoType: { type: 'string', primary: true },
    mediaType: { type: 'string' },
    content: { type: 'blob' },
    sha256: { type: 'string' },
    version: { type: 'integer' },
    uploadedAt: { type: 'Date' },
    uploadedBy: { type: 'string' },
  },
});

/** An external access integration recorded for a reference name (nothing to apply on PostgreSQL). */
export interface EaiAssignment {
  referenceName: string;
  integrationType: string;
  assignedAt: Date;
  assignedBy: string;
}

export const EaiAssignmentEntity = new EntitySchema<EaiAssignment>({
  name: 'EaiAssignment',
  tableName: 'eai_assignments',
  properties: {
    referenceName: { type: 'string', primary: true },
    integrationType: { type: 'string' },
    assignedAt: { type: 'Date' },
    assignedBy: { type: 'string' },
  },
});
