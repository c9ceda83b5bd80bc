import { z } from 'zod';

/**
 * The spec's Limits for the mesh egress list and advertise tags: one definition for the mesh routes
 * and the settings schema (`mesh.egress`, `mesh.advertise_tags`).
 */
export const DEFAULT_EGRESS = ['0.0.0.0:443'] as const;

const PORT = '(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
/** `host:port`: a DNS name or IPv4 address (`0.0.0.0` means any host), port 1 to 65535. */
export const EgressEntrySchema = z
  .string()
  .max(259)
  .regex(new RegExp(`^${LABEL}(?:\\.${LABEL})*:${PORT}$`), 'host:port with a port from 1 to 65535');
export const EgressListSchema = z.array(EgressEntrySchema).min(1).max(256);
/** `tag:<name>`: letters, digits and hyphens, starting alphanumeric. */
export const AdvertiseTagSchema = z
  .string()
  .max(512)
  .regex(/^tag:[A-Za-z0-9][A-Za-z0-9-]*$/, 'tag:<name> (letters, digits, hyphens; starting alphanumeric)');
export const MAX_TAGS = 32;
export const MAX_TAGS_TOTAL_LENGTH = 512;
export const AdvertiseTagsSchema = z.array(AdvertiseTagSchema).max(MAX_TAGS);
/** The tag list as a setting: the count limit, the total length limit, no repeats. */
export const AdvertiseTagsSettingSchema = AdvertiseTagsSchema.refine(
  (tags) => tags.join('').length <= MAX_TAGS_TOTAL_LENGTH,
  `at most ${MAX_TAGS_TOTAL_LENGTH} characters together`,
).refine((tags) => new Set(tags).size === tags.length, 'no tag twice');
/** The egress list as a setting: 1 to 256 entries, no repeats (hosts compared without case). */
export const EgressListSettingSchema = EgressListSchema.refine(
  (entries) => new Set(entries.map((e) => e.toLowerCase())).size === entries.length,
  'no entry twice',
);
