/**
 * `create_version` import reads the extracted archive lazily (one member in memory at a time) instead of
 * building a file map of the whole archive (issue 14). Memory is not asserted; behaviour is: a large member
 * (20 MiB, under the 32 MiB member cap) lands byte-exact in the saved version (PostgreSQL and the Git tag),
 * a repeat answers no_change, and the ZIP limits still refuse an oversized member before anything is written.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import git from 'isomorphic-git';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { query } from '../helpers/db.js';
import type { Stack } from '../helpers/stack.js';
import { zip } from '../helpers/zip.js';
import { startBlueprintStack, type BlueprintStack } from './support.js';

let bp: BlueprintStack;
let stack: Stack;
let root: string;

beforeAll(async () => {
  bp = await startBlueprintStack();
  ({ stack, root } = bp);
});
afterAll(async () => bp?.close());

const api = (method: string, p: string, body?: unknown) => bp.api(method, p, undefined, body);
const upload = (archive: Buffer, fields: Record<string, string>) =>
  bp.upload('/api/blueprints/import', undefined, archive, fields);

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('create_version import of a large archive member', () => {
  let id: string;
  let manifest: string;
  const big = randomBytes(20 * 1024 * 1024);

  beforeAll(async () => {
    id = await bp.createBlueprint('stream-ver');
    expect((await api('POST', '/api/blueprints/stream-ver/versioning/enable')).status).toBe(200);
    const res = await fetch(`${stack.url}/api/blueprints/stream-ver/files/blueprint_manifest.yaml`);
    manifest = await res.text();
  });

  const sidecar = () =>
    stringify({ manifest_version: 2, blueprint_name: 'stream-ver', blueprint_id: id, source_identity: {} });

  it('stores the large member byte-exact in the saved version, and a repeat answers no_change', async () => {
    const archive = zip([
      { name: 'blueprint_manifest.yaml', data: manifest },
      { name: 'blueprint_export_manifest.yaml', data: sidecar() },
      { name: 'data/big.bin', data: big },
      { name: 'prompts/a.md', data: 'Prompt A\n', deflate: true },
    ]);
    const r = await upload(archive, { collision_strategy: 'create_version' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      import_action: 'version_created',
      created_version_number: 1,
      no_change: false,
    });

    // PostgreSQL holds the member's exact bytes.
    const rows = (await query(
      stack.db.url,
      `select f.path, b.size, encode(sha256(b.content), 'hex') as digest from blueprint_version_files f
         join blueprint_blobs b on b.sha256 = f.blob_sha256 where f.version_id = $1 order by f.path`,
      [r.body.data.created_version_id],
    )) as Array<{ path: string; size: number; digest: string }>;
    expect(rows.map((x) => x.path)).toEqual(['blueprint_manifest.yaml', 'data/big.bin', 'prompts/a.md']);
    const bigRow = rows.find((x) => x.path === 'data/big.bin')!;
    expect(Number(bigRow.size)).toBe(big.length);
    expect(bigRow.digest).toBe(sha(big));

    // So does the tagged Git commit; the working copy is untouched.
    const dir = path.join(root, 'default', id);
    const tagged = await git.resolveRef({ fs, dir, ref: 'refs/tags/version/1' });
    const { blob } = await git.readBlob({ fs, dir, oid: tagged, filepath: 'data/big.bin' });
    expect(sha(Buffer.from(blob))).toBe(sha(big));
    expect(fs.existsSync(path.join(dir, 'data', 'big.bin'))).toBe(false);

    // The saved fingerprint is the one a save of identical content computes: a repeat adds nothing.
    const again = await upload(archive, { collision_strategy: 'create_version' });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ no_change: true, created_version_number: null });
    const s = await api('GET', '/api/blueprints/stream-ver/versioning/summary');
    expect(s.body.data.versions).toHaveLength(1);
  });

  it('still refuses a member over the 32 MiB cap before writing anything', async () => {
    const archive = zip([
      { name: 'blueprint_manifest.yaml', data: manifest },
      { name: 'blueprint_export_manifest.yaml', data: sidecar() },
      { name: 'data/huge.bin', data: Buffer.alloc(33 * 1024 * 1024), deflate: true },
    ]);
    const r = await upload(archive, { collision_strategy: 'create_version' });
    expect(r.status).toBe(400);
    expect(r.body.payload).toMatchObject({ code: 'UNSAFE_ZIP', reason: 'member_too_large', member: 'data/huge.bin' });
    const s = await api('GET', '/api/blueprints/stream-ver/versioning/summary');
    expect(s.body.data.versions).toHaveLength(1);
  });
});
