/**
 * A logo upload (`POST /api/branding/logos/{logo_type}`): the format is judged from the bytes (PNG,
 * JPEG, WebP or GIF; SVG refused, since it can carry script), and a declared part type that contradicts
 * the bytes is refused too.
 */
import { readFile } from 'node:fs/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import { BadRequestError, PlatformError } from '../errors.js';
import { logoUrl, storeLogo, type LogoType } from './branding.js';
import { LOGO_MEDIA_TYPES, sniffImage } from './image-type.js';
import { RequestCodes } from '../http/error-codes.js';

/** Declared part types that say nothing about the format. */
const UNINFORMATIVE_TYPES = new Set(['application/octet-stream', 'binary/octet-stream']);
const TYPE_ALIASES: Record<string, string> = { 'image/jpg': 'image/jpeg', 'image/pjpeg': 'image/jpeg' };

function unsupported(message: string, reason: string, extra: Record<string, unknown> = {}) {
  return new PlatformError('unsupported_media_type', message, {
    reason,
    accepted_media_types: LOGO_MEDIA_TYPES,
    ...extra,
  });
}

/** Stores the uploaded logo; 400 without a file or for an empty one, 415 for anything but an accepted image. */
export async function uploadLogo(
  em: EntityManager,
  type: LogoType,
  file: { path: string; size: number; mediaType: string | null } | undefined,
  by: string,
) {
  if (!file) {
    throw new BadRequestError('Send the logo as the multipart file field `file`.', {
      fields: [{ field: 'body.file', message: 'required', code: RequestCodes.file_required }],
    });
  }
  if (file.size === 0) {
    throw new BadRequestError('The uploaded file is empty.', {
      fields: [{ field: 'body.file', message: 'empty file', code: RequestCodes.file_empty }],
    });
  }
  const bytes = await readFile(file.path);
  const sniffed = sniffImage(bytes);
  if (sniffed.kind === 'svg') {
    throw unsupported(
      'SVG logos are not accepted (an SVG can carry script); upload a PNG, JPEG, WebP or GIF.',
      'svg_not_accepted',
    );
  }
  if (sniffed.kind === 'unknown') {
    throw unsupported('The file is not a PNG, JPEG, WebP or GIF image.', 'not_an_image');
  }
  const declared = file.mediaType?.toLowerCase().split(';')[0]!.trim();
  const normalised = declared ? (TYPE_ALIASES[declared] ?? declared) : undefined;
  if (normalised && !UNINFORMATIVE_TYPES.has(normalised) && normalised !== sniffed.mediaType) {
    throw unsupported(
      `The file is declared as ${declared} but its bytes are ${sniffed.mediaType}.`,
      'content_type_mismatch',
      { declared_media_type: declared, detected_media_type: sniffed.mediaType },
    );
  }
  const version = await storeLogo(em, type, sniffed.mediaType, bytes, by);
  return {
    logo_url: logoUrl(type, version),
    logo_type: type,
    version,
    media_type: sniffed.mediaType,
  };
}
