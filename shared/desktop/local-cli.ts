import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, constants, stat } from 'node:fs/promises';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError } from '../errors.js';
import type { DesktopDeps } from './setup.js';
import { sql } from '../db/sql.js';

/**
 * Coding CLIs installed on the laptop (laptop mode, issue 18). Detection looks for the known binaries
 * on the PATH (`PLATFORM_DESKTOP_CLI_PATH`, default the process PATH) and runs `<bin> --version`
 * (execFile, no shell, a scrubbed environment, a timeout). Each one found is a candidate in
 * `desktop_local_clis` (id from its name and path): importing it registers it as an agent-CLI
 * code-agent backend (`backend` `agent_cli`, `command` its argv), declining it stops detect offering it.
 */
export const KNOWN_CLIS = [
  { name: 'claude', label: 'Claude Code' },
  { name: 'codex', label: 'Codex CLI' },
  { name: 'gemini', label: 'Gemini CLI' },
  { name: 'aider', label: 'Aider' },
] as const;

export const VERSION_TIMEOUT_MS = 5000;
const MAX_VERSION_CHARS = 200;

export type CandidateState = 'new' | 'imported' | 'declined';

export interface LocalCliCandidate {
  id: string;
  name: string;
  label: string;
  path: string;
  version: string | null;
  state: CandidateState;
  backend: 'agent_cli';
  command: string[];
  detected_at: string;
  imported_at: string | null;
  declined_at: string | null;
}

interface Row {
  id: string;
  name: string;
  path: string;
  version: string | null;
  state: CandidateState;
  command: string[];
  detected_at: Date;
  imported_at: Date | null;
  declined_at: Date | null;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

function toCandidate(r: Row): LocalCliCandidate {
  return {
    id: r.id,
    name: r.name,
    label: KNOWN_CLIS.find((c) => c.name === r.name)?.label ?? r.name,
    path: r.path,
    version: r.version,
    state: r.state,
    backend: 'agent_cli',
    command: r.command,
    detected_at: iso(r.detected_at)!,
    imported_at: iso(r.imported_at),
    declined_at: iso(r.declined_at),
  };
}

export const candidateId = (name: string, file: string) =>
  `cli_${createHash('sha256').update(`${name}\0${file}`).digest('hex').slice(0, 24)}`;

async function searchPath(deps: DesktopDeps): Promise<string[]> {
  const value = (await deps.settings.get('desktop.cli_path')) ?? process.env.PATH ?? '';
  return value.split(path.delimiter).filter((d) => d && path.isAbsolute(d));
}

/** The first executable regular file named `name` in the folders. */
async function which(name: string, dirs: string[]): Promise<string | null> {
  for (const dir of dirs) {
    const file = path.join(dir, name);
    const info = await stat(file).catch(() => null);
    if (!info?.isFile()) continue;
    if (
      await access(file, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return file;
  }
  return null;
}

/** `<file> --version`'s first non-empty output line; null when it fails or times out. */
function versionOf(file: string, dirs: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      file,
      ['--version'],
      {
        shell: false,
        timeout: VERSION_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: 64 * 1024,
        env: { PATH: [...dirs, '/usr/bin', '/bin'].join(path.delimiter), LANG: 'C.UTF-8' },
      },
      (err, stdout, stderr) => {
        if (err) return resolve(null);
        const line = `${stdout}\n${stderr}`
          .split('\n')
          .map((l) => l.trim())
          .find(Boolean);
        resolve(line ? line.slice(0, MAX_VERSION_CHARS) : null);
      },
    );
  });
}

/**
 * Looks for the known CLIs and records each found one (a new candidate, or the same row with its
 * version and detection time refreshed; its state is kept). Answers the found ones not declined, and
 * separately the declined ones.
 */
export async function detectLocalClis(
  deps: DesktopDeps,
  em: EntityManager,
): Promise<{ candidates: LocalCliCandidate[]; declined: LocalCliCandidate[] }> {
  const dirs = await searchPath(deps);
  const found: Array<{ name: string; file: string; version: string | null }> = [];
  for (const cli of KNOWN_CLIS) {
    const file = await which(cli.name, dirs);
    if (file) found.push({ name: cli.name, file, version: await versionOf(file, dirs) });
  }
  const rows: Row[] = [];
  const now = new Date();
  for (const f of found) {
    const [row] = await sql<Row>(
      em,
      `insert into desktop_local_clis (id, name, path, version, state, command, detected_at, updated_at)
       values (?, ?, ?, ?, 'new', ?::jsonb, ?, ?)
       on conflict (id) do update set version = excluded.version, detected_at = excluded.detected_at,
         updated_at = excluded.updated_at
       returning id, name, path, version, state, command, detected_at, imported_at, declined_at`,
      [candidateId(f.name, f.file), f.name, f.file, f.version, JSON.stringify([f.file]), now, now],
    );
    rows.push(row!);
  }
  const all = rows.map(toCandidate);
  return { candidates: all.filter((c) => c.state !== 'declined'), declined: all.filter((c) => c.state === 'declined') };
}

/** Moves the candidates to `state` (all or none: an unknown id answers 404 and changes nothing). */
export async function setCandidateState(
  em: EntityManager,
  ids: string[],
  state: 'imported' | 'declined',
  actor: string | null,
): Promise<LocalCliCandidate[]> {
  const unique = [...new Set(ids)];
  return em.transactional(async (tx) => {
    const known = await sql<{ id: string }>(tx, `select id from desktop_local_clis where id in (?) for update`, [
      unique,
    ]);
    const missing = unique.filter((id) => !known.some((k) => k.id === id));
    if (missing.length)
      throw new NotFoundError('Unknown local CLI candidate ids (run detect first).', { candidate_ids: missing });
    const rows = await sql<Row>(
      tx,
      state === 'imported'
        ? `update desktop_local_clis set state = 'imported', imported_at = now(), imported_by = ?, declined_at = null,
             updated_at = now() where id in (?)
           returning id, name, path, version, state, command, detected_at, imported_at, declined_at`
        : `update desktop_local_clis set state = 'declined', declined_at = now(), imported_at = null, imported_by = null,
             updated_at = now() where id in (?)
           returning id, name, path, version, state, command, detected_at, imported_at, declined_at`,
      state === 'imported' ? [actor, unique] : [unique],
    );
    return rows.map(toCandidate).sort((a, b) => a.name.localeCompare(b.name) || a.path.localeCompare(b.path));
  });
}

/** The imported agent-CLI backends (for the code-agent launcher and the console). */
export async function importedLocalClis(em: EntityManager): Promise<LocalCliCandidate[]> {
  const rows = await sql<Row>(
    em,
    `select id, name, path, version, state, command, detected_at, imported_at, declined_at
       from desktop_local_clis where state = 'imported' order by name, path`,
  );
  return rows.map(toCandidate);
}

/**
 * The imported CLI the agent-CLI backend runs when CODE_AGENT_CLI_COMMAND is unset (desktop mode):
 * the most recently imported one; several imported together are ordered by name, then path.
 */
export async function latestImportedLocalCli(em: EntityManager): Promise<LocalCliCandidate | null> {
  const [row] = await sql<Row>(
    em,
    `select id, name, path, version, state, command, detected_at, imported_at, declined_at
       from desktop_local_clis where state = 'imported' order by imported_at desc, name, path limit 1`,
  );
  return row ? toCandidate(row) : null;
}
