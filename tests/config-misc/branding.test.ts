/**
 * Branding (spec, Configuration and Other named resources): public read, writes need
 * access_config_panel, strict bodies (422), logos checked from their bytes (415), capped (413),
 * versioned URLs that change with every upload, served with cache headers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import type { OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startMiscStack } from './support.js';

let s: OidcStack;
let stack: Stack;
let admin: string;
let member: string;

/** A 1×1 PNG's leading bytes: signature and IHDR (enough for the byte check). */
function png(extra = 0): Buffer {
  const ihdr = Buffer.alloc(25);
  ihdr.writeUInt32BE(13, 0);
  ihdr.write('IHDR', 4, 'latin1');
  ihdr.writeUInt32BE(1, 8);
  ihdr.writeUInt32BE(1, 12);
  ihdr.set([8, 6, 0, 0, 0], 16);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ihdr, Buffer.alloc(extra, 7)]);
}
const jpeg = () => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64, 1)]);

async function upload(type: string, bytes: Buffer | null, contentType: string, token = admin, field = 'file') {
  const form = new FormData();
  if (bytes) form.append(field, new Blob([new Uint8Array(bytes)], { type: contentType }), 'logo.bin');
  else form.append('note', 'no file');
  const res = await fetch(`${stack.url}/api/config/branding/logo/${type}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const logoRows = () =>
  query(stack.db.url, 'select logo_type, version, media_type from branding_logos order by logo_type');

beforeAll(async () => {
  s = await startMiscStack();
  stack = s.stack;
  ({ admin, member } = s.tokens);
});
afterAll(() => s?.close());

describe('branding fields', () => {
  it('are readable without a credential (the sign-in page shows them)', async () => {
    const res = await http(stack.url, 'GET', '/api/config/branding');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ product_name: null, square_logo_url: null, updated_at: null });
  });

  it('PUT takes any subset, keeps the other fields, and null clears one', async () => {
    const first = await http(stack.url, 'PUT', '/api/config/branding', {
      token: admin,
      body: { product_name: 'Acme Data', primary_color: '#112233' },
    });
    expect(first.status, first.text).toBe(200);
    const second = await http(stack.url, 'PUT', '/api/config/branding', {
      token: admin,
      body: {
        accent_color: '#AABBCC',
        support_url: 'https://help.acme.example/desk',
        support_email: 'help@acme.example',
      },
    });
    expect(second.body.data).toMatchObject({
      product_name: 'Acme Data',
      primary_color: '#112233',
      accent_color: '#AABBCC',
      support_url: 'https://help.acme.example/desk',
      support_email: 'help@acme.example',
      updated_by: 'root',
    });
    const cleared = await http(stack.url, 'PUT', '/api/config/branding', {
      token: admin,
      body: { primary_color: null },
    });
    expect(cleared.body.data.primary_color).toBeNull();
    expect(cleared.body.data.product_name).toBe('Acme Data');
  });

  it('refuses undeclared fields (logo URLs are read-only) with 422 and bad values with 400, writing nothing', async () => {
    const before = await query(stack.db.url, `select value from deployment_settings where key = 'branding'`);
    const undeclared = await http(stack.url, 'PUT', '/api/config/branding', {
      token: admin,
      body: { product_name: 'X', square_logo_url: '/evil.png' },
    });
    expect(undeclared.status).toBe(422);
    expect(undeclared.body.payload.fields).toEqual(['body.square_logo_url']);
    for (const body of [
      { primary_color: 'red' },
      { accent_color: '#12345' },
      { support_url: 'javascript:alert(1)' },
      { support_url: 'http://plain.example' },
      { support_email: 'not-an-address' },
      { product_name: '' },
    ]) {
      const res = await http(stack.url, 'PUT', '/api/config/branding', { token: admin, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error_type).toBe('bad_request');
    }
    expect(await query(stack.db.url, `select value from deployment_settings where key = 'branding'`)).toEqual(before);
  });

  it('writes need access_config_panel (403) and a credential (401)', async () => {
    const forbidden = await http(stack.url, 'PUT', '/api/config/branding', {
      token: member,
      body: { product_name: 'Y' },
    });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.payload.required_permission).toBe('access_config_panel');
    expect((await http(stack.url, 'PUT', '/api/config/branding', { body: { product_name: 'Y' } })).status).toBe(401);
    const upload403 = await upload('square', png(), 'image/png', member);
    expect(upload403.status).toBe(403);
    expect(await logoRows()).toEqual([]);
  });
});

describe('logo upload', () => {
  it('refuses bytes that are not an accepted image with 415, whatever the declared type', async () => {
    const text = await upload('square', Buffer.from('hello, I am text pretending to be a PNG'), 'image/png');
    expect(text.status).toBe(415);
    expect(text.body.error_type).toBe('unsupported_media_type');
    expect(text.body.payload.reason).toBe('not_an_image');
    const svg = await upload(
      'wide',
      Buffer.from('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
      'image/svg+xml',
    );
    expect(svg.status).toBe(415);
    expect(svg.body.payload.reason).toBe('svg_not_accepted');
    const mismatch = await upload('square', jpeg(), 'image/png');
    expect(mismatch.status).toBe(415);
    expect(mismatch.body.payload).toMatchObject({
      reason: 'content_type_mismatch',
      declared_media_type: 'image/png',
      detected_media_type: 'image/jpeg',
    });
    // A PNG signature without its IHDR chunk is not a PNG.
    const truncated = await upload('square', png().subarray(0, 20), 'image/png');
    expect(truncated.status).toBe(415);
    expect(await logoRows()).toEqual([]);
  });

  it('refuses an oversize file with 413, a missing or empty file with 400, an unknown type with 400', async () => {
    const big = await upload('square', png(1024 * 1024), 'image/png');
    expect(big.status).toBe(413);
    expect(big.body.error_type).toBe('payload_too_large');
    const missing = await upload('square', null, 'image/png');
    expect(missing.status).toBe(400);
    expect(missing.body.payload.fields[0].code).toBe('file_required');
    const empty = await upload('square', Buffer.alloc(0), 'image/png');
    expect(empty.status).toBe(400);
    expect(empty.body.payload.fields[0].code).toBe('file_empty');
    const unknownType = await upload('banner', png(), 'image/png');
    expect(unknownType.status).toBe(400);
    expect(unknownType.body.payload.fields[0].field).toBe('params.logo_type');
    expect(await logoRows()).toEqual([]);
  });

  it('answers success and a logo URL whose version changes with every upload; the branding view shows it', async () => {
    const first = await upload('square', png(10), 'image/png');
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      success: true,
      logo_url: '/api/branding/logos/square?v=1',
      logo_type: 'square',
      version: 1,
      media_type: 'image/png',
    });
    // Same bytes again is still a new upload: a new version.
    const second = await upload('square', png(10), 'application/octet-stream');
    expect(second.body.logo_url).toBe('/api/branding/logos/square?v=2');
    const wide = await upload('wide', jpeg(), 'image/jpeg');
    expect(wide.body.logo_url).toBe('/api/branding/logos/wide?v=1');
    const view = await http(stack.url, 'GET', '/api/config/branding');
    expect(view.body.data).toMatchObject({
      square_logo_url: '/api/branding/logos/square?v=2',
      wide_logo_url: '/api/branding/logos/wide?v=1',
      header_light_logo_url: null,
      header_dark_logo_url: null,
    });
    expect(await logoRows()).toEqual([
      { logo_type: 'square', version: 2, media_type: 'image/png' },
      { logo_type: 'wide', version: 1, media_type: 'image/jpeg' },
    ]);
  });
});

describe('logo serving', () => {
  it('serves the current version publicly with its content type, an ETag and an immutable cache policy', async () => {
    const res = await fetch(`${stack.url}/api/branding/logos/square?v=2`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"[0-9a-f]{32}-v2"$/);
    expect(Buffer.from(await res.arrayBuffer()).equals(png(10))).toBe(true);

    const stale = await fetch(`${stack.url}/api/branding/logos/square?v=1`);
    expect(stale.status).toBe(200);
    expect(stale.headers.get('cache-control')).toBe('public, no-cache');
    await stale.arrayBuffer();

    const revalidated = await fetch(`${stack.url}/api/branding/logos/square`, { headers: { 'if-none-match': etag! } });
    expect(revalidated.status).toBe(304);

    const jpegRes = await fetch(`${stack.url}/api/branding/logos/wide?v=1`);
    expect(jpegRes.headers.get('content-type')).toBe('image/jpeg');
    await jpegRes.arrayBuffer();
  });

  it('answers 404 for a type never uploaded', async () => {
    const res = await http(stack.url, 'GET', '/api/branding/logos/header_dark');
    expect(res.status).toBe(404);
    expect(res.body.error_type).toBe('not_found');
  });
});
