import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ManagedSourceSettings } from '../db/entities/index.js';
import { isBlueprintManifest } from '../blueprints/remote.js';
import { SKILL_FILE } from '../skills/packages.js';
import { APP_FILE } from './apps.js';
import { MISSION_FILE } from './missions.js';
import { checkoutFiles, checkoutState, walkOrder } from './checkout.js';
import { gitignoreMatcher, listFiles } from './git.js';

/**
 * The scan of a synced working tree: the files under `include`/`exclude`, counted, and per enabled
 * scan type its artifact candidates (the manifests hydration reads).
 */
export interface ScanSummary {
  files_scanned: number;
  candidates: Record<string, number>;
  /** Manifest paths for hydration (enabled types only; absent in histories recorded before hydration). */
  agent_files?: string[];
  role_files?: string[];
  /** `skills/<name>/SKILL.md` paths (scan type `skills`). */
  skill_files?: string[];
  /** `blueprints/<name>/blueprint_manifest.yaml` paths (scan type `blueprints`). */
  blueprint_files?: string[];
  /** `apps/<name>/app.yaml` paths (scan type `apps`). */
  app_files?: string[];
  /** `missions/<key>/mission.yaml` paths (scan type `missions`). */
  mission_files?: string[];
}

/** The scan types whose candidates are counted (the others count none). */
const COUNTED = ['agents', 'roles', 'skills', 'document_indexes', 'blueprints', 'apps', 'missions'];

/** Files under `root` (default `fallback`; `''` or `/`: every file). */
function under(root: string | null, fallback: string) {
  const r = (root ?? fallback).replace(/^\/+|\/+$/g, '');
  return (file: string) => r === '' || file.startsWith(`${r}/`);
}

/** Per scan type, whether a (scanned) file is one of its manifests and where its path is listed. */
function manifestKinds(s: ManagedSourceSettings) {
  const inAgents = under(s.agents_root, 'agents');
  const inDocs = under(s.documents_root, 'docs');
  const base = (file: string) => file.slice(file.lastIndexOf('/') + 1);
  return [
    { type: 'agents', list: 'agent_files', test: (f: string) => inAgents(f) && /^agent\.ya?ml$/.test(base(f)) },
    { type: 'roles', list: 'role_files', test: (f: string) => /^roles\/[^/]+\/role\.ya?ml$/.test(f) },
    { type: 'skills', list: 'skill_files', test: (f: string) => SKILL_FILE.test(f) },
    { type: 'blueprints', list: 'blueprint_files', test: (f: string) => isBlueprintManifest(f) },
    { type: 'apps', list: 'app_files', test: (f: string) => APP_FILE.test(f) },
    { type: 'missions', list: 'mission_files', test: (f: string) => MISSION_FILE.test(f) },
    { type: 'document_indexes', list: null, test: (f: string) => inDocs(f) && /\.(md|markdown)$/i.test(base(f)) },
  ] as const;
}

/**
 * Walks the working tree; `progress(files)` is awaited every 200 scanned files at most once a second
 * (heartbeat and the job's phase).
 */
export async function scanWorkingTree(
  workdir: string,
  s: ManagedSourceSettings,
  progress: (files: number) => Promise<void>,
): Promise<ScanSummary> {
  return scanFiles(listFiles(workdir), s, progress);
}

/** Between two `progress` calls of a scan. */
const PROGRESS_EVERY_MS = 1_000;

/**
 * The scan of a list of working-tree files (`/`-separated, any order): the manifest lists come out in
 * `listFiles` order (only they are sorted, not every file).
 */
async function scanFiles(
  paths: AsyncIterable<string> | Iterable<string>,
  s: ManagedSourceSettings,
  progress: (files: number) => Promise<void>,
): Promise<ScanSummary> {
  const included = s.include.length ? gitignoreMatcher(s.include) : () => true;
  const excluded = gitignoreMatcher(s.exclude);
  const types = new Set(s.scan_types_enabled);
  const kinds = manifestKinds(s).filter((k) => types.has(k.type));
  const candidates: Record<string, number> = {};
  for (const t of types) if (COUNTED.includes(t)) candidates[t] = 0;
  const lists = {
    agent_files: [],
    role_files: [],
    skill_files: [],
    blueprint_files: [],
    app_files: [],
    mission_files: [],
  } as Record<
    'agent_files' | 'role_files' | 'skill_files' | 'blueprint_files' | 'app_files' | 'mission_files',
    string[]
  >;
  let files = 0;
  let reported = Date.now();
  for await (const file of paths) {
    if (!included(file) || excluded(file)) continue;
    files++;
    for (const k of kinds) {
      if (!k.test(file)) continue;
      candidates[k.type] = (candidates[k.type] ?? 0) + 1;
      if (k.list) lists[k.list].push(file);
    }
    if (files % 200 === 0 && Date.now() - reported >= PROGRESS_EVERY_MS) {
      await progress(files);
      reported = Date.now();
    }
  }
  for (const list of Object.values(lists)) list.sort(walkOrder);
  return { files_scanned: files, candidates, ...lists };
}

/** Bumped when what a scan records changes, so saved scans of older code are not reused. */
const SCAN_FORMAT = 1;

/** What a scan's result depends on: the working tree's commit and rules, and the settings the scan reads. */
function scanKey(state: string, s: ManagedSourceSettings): string {
  const read = [SCAN_FORMAT, s.include, s.exclude, s.scan_types_enabled, s.agents_root, s.documents_root];
  return createHash('sha256')
    .update(JSON.stringify([state, read]))
    .digest('hex');
}

/**
 * The scan of a synced working tree, remembered beside it (`scan.json`) for the commit and settings it
 * was made with: a resync that finds the same commit answers the saved scan; another lists the files
 * from the commit's trees (or takes `written`, the paths the checkout just wrote). Neither walks the folder.
 */
export async function scanCheckout(
  paths: { workdir: string; gitdir: string },
  s: ManagedSourceSettings,
  progress: (files: number) => Promise<void>,
  written: readonly string[] | null = null,
): Promise<ScanSummary> {
  const { workdir, gitdir } = paths;
  const file = path.join(path.dirname(workdir), 'scan.json');
  const state = await checkoutState(workdir);
  const key = state ? scanKey(state, s) : null;
  if (key) {
    const saved = await readFile(file, 'utf8').then(
      (text) => JSON.parse(text) as { key: string; scan: ScanSummary },
      () => null,
    );
    if (saved?.key === key) return saved.scan;
  }
  // The files the checkout wrote come from the commit's trees (no walk of the folder) when it is known.
  const files = written ?? (await checkoutFiles(workdir, gitdir, s.checkout_exclude));
  const scan = await scanFiles(files ?? listFiles(workdir), s, progress);
  if (key) await writeFile(file, JSON.stringify({ key, scan }));
  return scan;
}
