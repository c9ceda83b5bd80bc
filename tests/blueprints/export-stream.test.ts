import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import yauzl from 'yauzl';
import { parse } from 'yaml';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { zip } from '../helpers/zip.js';

let stack: Stack;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'bp-export-'));
  stack = await startStack({ worker: false, env: { PLATFORM_BLUEPRINTS_DIR: root } });
});
afterAll(async () => {
  await stack?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** Members in archive order. */
function readZip(buf: Buffer): Promise<Array<[string, Buffer]>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buf, { lazyEntries: true }, (err, zf) => {
      if (err || !zf) return reject(err);
      const out: Array<[string, Buffer]> = [];
      zf.on('entry', (e: yauzl.Entry) => {
        zf.openReadStream(e, (e2, s) => {
          if (e2 || !s) return reject(e2);
          const chunks: Buffer[] = [];
          s.on('data', (c: Buffer) => chunks.push(c));
          s.on('end', () => {
            out.push([e.fileName, Buffer.concat(chunks)]);
            zf.readEntry();
          });
        });
      });
      zf.on('end', () => resolve(out));
      zf.readEntry();
    });
  });
}

async function importZip(archive: Buffer, fields: Record<string, string> = {}) {
  const form = new FormData();
  form.append('file', new Blob([archive], { type: 'application/zip' }), 'bp.zip');
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  const res = await fetch(`${stack.url}/api/blueprints/import`, { method: 'POST', body: form });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const manifest = (description: string) =>
  `schema_version: 1\nname: streamed\nblueprint:\n  short_description: ${description}\nphases: []\n`;

describe('export streams from the commit pinned under the lock', () => {
  const files = new Map<string, Buffer>();

  beforeAll(async () => {
    files.set('blueprint_manifest.yaml', Buffer.from(manifest('first')));
    for (let i = 0; i < 40; i++) files.set(`data/part-${String(i).padStart(2, '0')}/blob.bin`, randomBytes(20_000 + i));
    files.set('prompts/readme.md', Buffer.from('# Prompts\n'));
    const r = await importZip(zip([...files].map(([name, data]) => ({ name, data }))));
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ import_action: 'created', blueprint_name: 'streamed' });
  });

  it('answers every file byte for byte, the sidecar last, with the fingerprint of the working copy', async () => {
    const res = await fetch(`${stack.url}/api/blueprints/streamed/export`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/zip');
    const head = await http(stack.url, 'GET', '/api/blueprints/streamed/history');
    expect(res.headers.get('x-blueprint-commit')).toBe(head.body.data.commits[0].commit_id);
    const members = await readZip(Buffer.from(await res.arrayBuffer()));
    const names = members.map(([n]) => n);
    expect(names.at(-1)).toBe('blueprint_export_manifest.yaml');
    const got = new Map(members);
    const expected = [...files.keys()].sort();
    expect(names.slice(0, -1)).toEqual(expected);
    for (const f of expected) {
      if (f === 'blueprint_manifest.yaml') continue; // re-serialised on import
      expect(sha(got.get(f)!), f).toBe(sha(files.get(f)!));
    }
    const fp = createHash('sha256');
    for (const f of expected) fp.update(`${f}\0${sha(got.get(f)!)}\n`);
    const side = parse(got.get('blueprint_export_manifest.yaml')!.toString());
    expect(side).toMatchObject({ manifest_version: 2, blueprint_name: 'streamed' });
    expect(side.working_copy_fingerprint).toBe(fp.digest('hex'));
  });

  it('a write after the export began does not change the streamed archive', async () => {
    const res = await fetch(`${stack.url}/api/blueprints/streamed/export`);
    expect(res.status).toBe(200);
    const pinned = res.headers.get('x-blueprint-commit');
    // The body is not read yet: this commit lands while the archive is still to be streamed.
    const patch = await http(stack.url, 'PATCH', '/api/blueprints/streamed', { body: { short_description: 'second' } });
    expect(patch.status).toBe(200);
    const commits = (await http(stack.url, 'GET', '/api/blueprints/streamed/history')).body.data.commits;
    expect(commits[0].commit_id).not.toBe(pinned);
    expect(commits[1].commit_id).toBe(pinned);
    const archive = Buffer.from(await res.arrayBuffer());
    const got = new Map(await readZip(archive));
    expect(parse(got.get('blueprint_manifest.yaml')!.toString()).blueprint.short_description).toBe('first');

    // The earlier archive replaces the working copy back (one commit); its own export round-trips as no_change.
    const back = await importZip(archive, { collision_strategy: 'replace' });
    expect(back.body.data).toMatchObject({ import_action: 'replaced', no_change: false });
    const again = Buffer.from(await (await fetch(`${stack.url}/api/blueprints/streamed/export`)).arrayBuffer());
    const same = await importZip(again, { collision_strategy: 'replace' });
    expect(same.body.data).toMatchObject({ import_action: 'replaced', no_change: true });
  });
});
