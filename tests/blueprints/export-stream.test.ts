import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { http, type Stack } from '../helpers/stack.js';
import { zip } from '../helpers/zip.js';
import { readZipMembers as readZip, startBlueprintStack, type BlueprintStack } from './support.js';

let bp: BlueprintStack;
let stack: Stack;

beforeAll(async () => {
  bp = await startBlueprintStack({ dataDirPrefix: 'bp-export-' });
  stack = bp.stack;
});
afterAll(async () => bp?.close());

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const importZip = (archive: Buffer, fields: Record<string, string> = {}) =>
  bp.upload('/api/blueprints/import', undefined, archive, fields);

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

describe('round trip: an Info-ZIP archive imported, exported, and checked by the system unzip', () => {
  it('unzip -t accepts the export, and every file comes back byte for byte', async () => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'bp-round-trip-'));
    try {
      const files = new Map<string, Buffer>([
        ['blueprint_manifest.yaml', Buffer.from(`schema_version: 1\nname: round-trip\nphases: []\n`)],
        ['prompts/text.md', Buffer.from('# A prompt that compresses\n'.repeat(400))],
        ['data/random.bin', randomBytes(90_000)],
        ['data/empty.txt', Buffer.alloc(0)],
      ]);
      const src = path.join(work, 'src');
      for (const [rel, data] of files) {
        mkdirSync(path.dirname(path.join(src, rel)), { recursive: true });
        writeFileSync(path.join(src, rel), data);
      }
      // Through a pipe: Info-ZIP writes data descriptors; the text is deflated, the random bytes too (it cannot go back).
      execFileSync('sh', ['-c', `zip -q -r - . | cat > '${path.join(work, 'in.zip')}'`], { cwd: src });
      const r = await importZip(readFileSync(path.join(work, 'in.zip')));
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ import_action: 'created', blueprint_name: 'round-trip' });
      const res = await fetch(`${stack.url}/api/blueprints/round-trip/export`);
      expect(res.status).toBe(200);
      const out = path.join(work, 'out.zip');
      writeFileSync(out, Buffer.from(await res.arrayBuffer()));
      expect(execFileSync('unzip', ['-t', out], { encoding: 'utf8' })).toMatch(/No errors detected/);
      execFileSync('unzip', ['-q', out, '-d', path.join(work, 'out')]);
      for (const [rel, data] of files) {
        if (rel === 'blueprint_manifest.yaml') continue; // re-serialised on import
        expect(readFileSync(path.join(work, 'out', rel)).equals(data), rel).toBe(true);
      }
      expect(parse(readFileSync(path.join(work, 'out', 'blueprint_export_manifest.yaml'), 'utf8'))).toMatchObject({
        blueprint_name: 'round-trip',
      });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
