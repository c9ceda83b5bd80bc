import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { NotFoundError } from '../errors.js';

/** A standalone built job unzipped in `jobs_dir`: its launcher script `<Name>_run.sh`. */
export interface BuiltJob {
  name: string;
  /** From the build's `jobInfo.properties` (`jobVersion`), when present. */
  version: string | null;
  /** The launcher, relative to `jobs_dir`. */
  launcher: string;
}

const LAUNCHER = /^(.+)_run\.sh$/;
/** A built job zip unzips to `<Name>/`, sometimes inside a `<Name>_<version>/` folder: three levels cover both. */
const MAX_DEPTH = 3;

async function versionOf(dir: string): Promise<string | null> {
  try {
    const text = await readFile(path.join(dir, 'jobInfo.properties'), 'utf8');
    return /^jobVersion=(.+)$/m.exec(text)?.[1]?.trim() ?? null;
  } catch {
    return null;
  }
}

async function walk(dir: string, base: string, depth: number, out: BuiltJob[]): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (e.name.startsWith('.')) continue;
    const full = path.join(dir, e.name);
    const m = LAUNCHER.exec(e.name);
    if (e.isFile() && m) {
      out.push({
        name: m[1]!,
        version: await versionOf(dir),
        launcher: path.relative(base, full).split(path.sep).join('/'),
      });
    } else if (e.isDirectory() && depth < MAX_DEPTH) {
      await walk(full, base, depth + 1, out);
    }
  }
}

/** The built jobs under `jobsDir` (one per name: the first launcher found in path order). */
export async function listBuiltJobs(jobsDir: string): Promise<BuiltJob[]> {
  const found: BuiltJob[] = [];
  await walk(jobsDir, jobsDir, 1, found);
  const seen = new Set<string>();
  return found.filter((j) => (seen.has(j.name) ? false : (seen.add(j.name), true)));
}

/** The built job named `name`, with its launcher's absolute path and folder; 404 when there is none. */
export async function findBuiltJob(
  jobsDir: string,
  name: string,
): Promise<{ job: BuiltJob; launcherPath: string; dir: string }> {
  const job = (await listBuiltJobs(jobsDir)).find((j) => j.name === name);
  if (!job)
    throw new NotFoundError(
      `No built job named ${name}; run_etl_job runs built jobs only (list_etl_jobs shows them).`,
      {
        reason: 'etl_built_job_not_found',
        job_name: name,
      },
    );
  const launcherPath = path.join(jobsDir, job.launcher);
  return { job, launcherPath, dir: path.dirname(launcherPath) };
}
