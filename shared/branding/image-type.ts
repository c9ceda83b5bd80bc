/**
 * What an uploaded logo is, judged from its bytes alone (the declared content type and file name are
 * hints the client controls). Raster formats only: PNG, JPEG, WebP and GIF. SVG is refused: it is a
 * document that can carry script and external references, and serving one safely needs a sanitiser.
 */
export type LogoMediaType = 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif';
export const LOGO_MEDIA_TYPES: readonly LogoMediaType[] = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];

export type Sniffed = { kind: 'image'; mediaType: LogoMediaType } | { kind: 'svg' } | { kind: 'unknown' };

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function sniffImage(bytes: Buffer): Sniffed {
  // PNG: signature, then the IHDR chunk (length 13) with a non-zero width and height.
  if (bytes.length >= 33 && bytes.subarray(0, 8).equals(PNG_SIGNATURE)) {
    const ihdr = bytes.readUInt32BE(8) === 13 && bytes.toString('latin1', 12, 16) === 'IHDR';
    if (ihdr && bytes.readUInt32BE(16) > 0 && bytes.readUInt32BE(20) > 0)
      return { kind: 'image', mediaType: 'image/png' };
    return { kind: 'unknown' };
  }
  // JPEG: SOI followed by a marker.
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) {
    return { kind: 'image', mediaType: 'image/jpeg' };
  }
  // WebP: RIFF container of form WEBP with a VP8 / VP8L / VP8X first chunk.
  if (
    bytes.length >= 16 &&
    bytes.toString('latin1', 0, 4) === 'RIFF' &&
    bytes.toString('latin1', 8, 12) === 'WEBP' &&
    ['VP8 ', 'VP8L', 'VP8X'].includes(bytes.toString('latin1', 12, 16))
  ) {
    return { kind: 'image', mediaType: 'image/webp' };
  }
  if (bytes.length >= 10 && ['GIF87a', 'GIF89a'].includes(bytes.toString('latin1', 0, 6))) {
    return { kind: 'image', mediaType: 'image/gif' };
  }
  // SVG, possibly behind a BOM, XML declaration, comments or a doctype.
  const head = bytes
    .subarray(0, 4096)
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart()
    .toLowerCase();
  if (head.startsWith('<svg') || (head.startsWith('<') && head.includes('<svg'))) return { kind: 'svg' };
  return { kind: 'unknown' };
}
