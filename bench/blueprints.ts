/**
 * Blueprint ZIP import and export (issue 14) of a 2,000-file, 60 MiB blueprint through the HTTP API,
 * against baselines on the same files in the same run: the system `unzip`/`zip` and yauzl/yazl alone
 * (no API, no Git). The HTTP client is `curl` in its own process, so the API process (this one: the
 * bench stack runs the API in-process) holds only the server's share. Peak memory of the API process
 * is its VmHWM reset before each operation (`/proc/self/clear_refs` 5) minus its RSS at the start;
 * the system tools' peak is `/usr/bin/time -f %M` of their process. Medians of `rounds` for time,
 * the largest peak for memory. Knobs: BENCH_BLUEPRINT_FILES (2000), BENCH_BLUEPRINT_MIB (60),
 * BENCH_BLUEPRINT_CONTENT (`random`: members stored; `text`: members deflated).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';
import yazl from 'yazl';
import type { BenchStack } from './lib/stack.js';

const FILES = Number(process.env.BENCH_BLUEPRINT_FILES ?? 2000);
const TOTAL = Number(process.env.BENCH_BLUEPRINT_MIB ?? 60) * 1024 * 1024;
/** `text`: compressible files (the archive's members deflated); default random bytes (members stored). */
const CONTENT = process.env.BENCH_BLUEPRINT_CONTENT === 'text' ? 'text' : 'random';

/** Words drawn at random from a small vocabulary: deflates about 2.5:1, like prose or YAML. */
const WORDS =
  'the of and to in is for on with as by at from phase prompt agent data file step run check when then'.split(' ');

function content(size: number): Buffer {
  if (CONTENT === 'random') return randomBytes(size);
  const picks = randomBytes(size);
  let text = '';
  for (let i = 0; text.length < size; i++) text += WORDS[picks[i]! % WORDS.length] + (i % 12 === 11 ? '\n' : ' ');
  return Buffer.from(text).subarray(0, size);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
const goal = (v: number, max: number, unit = 'x') =>
  `${unit === 'x' ? v.toFixed(2) : v.toFixed(0)}${unit} ${v <= max ? 'MET' : 'NOT MET'}`;
const mib = (kb: number) => `${(kb / 1024).toFixed(0)} MiB`;

function status(): { hwm: number; rss: number } {
  const s = readFileSync('/proc/self/status', 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
  return { hwm: kb('VmHWM'), rss: kb('VmRSS') };
}

/** Wall time and the API process's peak RSS above its level at the start (kB). */
async function measured(fn: () => Promise<unknown>): Promise<{ ms: number; peakKb: number }> {
  writeFileSync('/proc/self/clear_refs', '5'); // resets VmHWM to the current RSS
  const before = status().rss;
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  return { ms, peakKb: Math.max(0, status().hwm - before) };
}

function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { cwd, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} failed: ${stderr || err.message}`)) : resolve(stdout + stderr),
    ),
  );
}

/** A system tool under `/usr/bin/time`: wall time and its own peak RSS (kB). */
async function timedTool(cmd: string, args: string[], cwd?: string): Promise<{ ms: number; peakKb: number }> {
  const t0 = performance.now();
  const out = await run('/usr/bin/time', ['-f', 'MAXRSS=%M', cmd, ...args], cwd);
  return { ms: performance.now() - t0, peakKb: Number(/MAXRSS=(\d+)/.exec(out)?.[1] ?? 0) };
}

/** 2,000 files (random bytes, sizes varying around 30 KiB) summing to 60 MiB, plus the manifest. */
async function buildBlueprint(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(
    path.join(dir, 'blueprint_manifest.yaml'),
    'schema_version: 1\nname: bench-large\nblueprint:\n  short_description: Benchmark blueprint\nphases: []\n',
  );
  const base = Math.floor(TOTAL / FILES);
  let left = TOTAL;
  for (let i = 0; i < FILES; i++) {
    const size = i === FILES - 1 ? left : base + ((i * 7919) % 2001) - 1000;
    left -= size;
    const rel = path.join(`part-${String(i % 40).padStart(2, '0')}`, `file-${i}.bin`);
    await mkdir(path.join(dir, path.dirname(rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content(size));
  }
}

async function walk(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(dir, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await walk(dir, p)));
    else out.push(p);
  }
  return out.sort();
}

/** yauzl alone: every member streamed to a file under `dest` (no checks, no Git). */
async function yauzlExtract(archive: string, dest: string): Promise<void> {
  const zf = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(archive, { lazyEntries: true }, (err, z) => (err || !z ? reject(err) : resolve(z))),
  );
  await new Promise<void>((resolve, reject) => {
    zf.on('error', reject);
    zf.on('end', resolve);
    zf.on('entry', (e: yauzl.Entry) => {
      if (e.fileName.endsWith('/')) return zf.readEntry();
      zf.openReadStream(e, (err, s) => {
        if (err || !s) return reject(err ?? new Error('no stream'));
        const target = path.join(dest, e.fileName);
        mkdir(path.dirname(target), { recursive: true })
          .then(() => pipeline(s, createWriteStream(target)))
          .then(() => zf.readEntry(), reject);
      });
    });
    zf.readEntry();
  });
  zf.close();
}

/** yazl alone: the same files from disk into a ZIP file. */
async function yazlZip(dir: string, files: string[], out: string): Promise<void> {
  const z = new yazl.ZipFile();
  for (const f of files) z.addFile(path.join(dir, f), f, { mode: 0o100644 });
  z.end();
  await pipeline(z.outputStream, createWriteStream(out));
}

export async function benchBlueprints(stack: BenchStack, rounds: number): Promise<string> {
  const work = await mkdtemp(path.join(os.tmpdir(), 'bench-blueprints-'));
  try {
    const src = path.join(work, 'src');
    const t0 = performance.now();
    await buildBlueprint(src);
    const files = await walk(src);
    const archive = path.join(work, 'bench-large.zip');
    await run('zip', ['-q', '-r', archive, '.'], src);
    const archiveBytes = (await stat(archive)).size;
    const built = performance.now() - t0;
    const url = stack.api.url;

    const r = {
      apiImport: [] as Array<{ ms: number; peakKb: number }>,
      apiExport: [] as Array<{ ms: number; peakKb: number }>,
      unzip: [] as Array<{ ms: number; peakKb: number }>,
      zip: [] as Array<{ ms: number; peakKb: number }>,
      yauzl: [] as Array<{ ms: number; peakKb: number }>,
      yazl: [] as Array<{ ms: number; peakKb: number }>,
    };
    let exportBytes = 0;
    let name = '';
    for (let i = 0; i < rounds; i++) {
      r.apiImport.push(
        await measured(async () => {
          const out = await run('curl', ['-sS', '-f', '-F', `file=@${archive}`, `${url}/api/blueprints/import`]);
          name = (JSON.parse(out) as { data: { blueprint_name: string } }).data.blueprint_name;
        }),
      );
      const zipOut = path.join(work, `export-${i}.zip`);
      r.apiExport.push(
        await measured(() => run('curl', ['-sS', '-f', '-o', zipOut, `${url}/api/blueprints/${name}/export`])),
      );
      exportBytes = (await stat(zipOut)).size;
      await rm(zipOut);
      const u = path.join(work, `unzip-${i}`);
      r.unzip.push(await timedTool('unzip', ['-q', archive, '-d', u]));
      await rm(u, { recursive: true, force: true });
      const y = path.join(work, `yauzl-${i}`);
      await mkdir(y);
      r.yauzl.push(await measured(() => yauzlExtract(archive, y)));
      await rm(y, { recursive: true, force: true });
      const z = path.join(work, `zip-${i}.zip`);
      r.zip.push(await timedTool('zip', ['-q', '-r', z, '.'], src));
      await rm(z);
      const yz = path.join(work, `yazl-${i}.zip`);
      r.yazl.push(await measured(() => yazlZip(src, files, yz)));
      await rm(yz);
    }
    const m = (xs: Array<{ ms: number }>) => median(xs.map((x) => x.ms));
    const p = (xs: Array<{ peakKb: number }>) => Math.max(...xs.map((x) => x.peakKb));
    const row = (op: string, api: typeof r.apiImport, base: typeof r.apiImport, baseName: string) =>
      `| ${op} | ${fmt(m(api))} | ${baseName} ${fmt(m(base))} | ${(m(api) / m(base)).toFixed(2)}x | ${mib(p(api))} | ${mib(p(base))} |`;
    return [
      `## Blueprint ZIP import and export: ${files.length} files, ${(TOTAL / 1048576).toFixed(0)} MiB (archive ${(archiveBytes / 1048576).toFixed(1)} MiB, export ${(exportBytes / 1048576).toFixed(1)} MiB; built in ${fmt(built)}), median of ${rounds} rounds`,
      '',
      '| operation (curl → API) | API | baseline | ratio API / baseline | API peak RSS above start | baseline peak RSS |',
      '|-|-|-|-|-|-|',
      row('import (checks, extract, git commit)', r.apiImport, r.unzip, '`unzip`'),
      row('import', r.apiImport, r.yauzl, 'yauzl extract alone'),
      row('export (stream from the commit)', r.apiExport, r.zip, '`zip -r`'),
      row('export', r.apiExport, r.yazl, 'yazl alone'),
      '',
      'Baseline peak RSS: the tool process for `zip`/`unzip`, the rise of this process for yauzl/yazl.',
      '',
      `Goals (issue 34): import ≤ 2x \`unzip\`: ${goal(m(r.apiImport) / m(r.unzip), 2)}; import peak ≤ 32 MiB above start: ${goal(p(r.apiImport) / 1024, 32, ' MiB')}; export ≤ 2x \`zip -r\`: ${goal(m(r.apiExport) / m(r.zip), 2)}; export peak ≤ 32 MiB: ${goal(p(r.apiExport) / 1024, 32, ' MiB')}. Members: ${CONTENT === 'random' ? 'random bytes (stored)' : 'text (deflated)'}.`,
      '',
    ].join('\n');
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
