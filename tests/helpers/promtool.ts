import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { toolsDir } from '../../scripts/lib/paths.js';
import { aptGet, runToEnd } from './run-to-end.js';

/**
 * Prometheus's `promtool`, for checking the compose stack's Prometheus configuration: `PROMTOOL_PATH`, else
 * `promtool` on the PATH, else the one `ensurePromtool` unpacked into the tools folder.
 */
const UNPACKED = path.join(toolsDir, 'promtool', 'usr', 'bin', 'promtool');

const INSTALL_HINT =
  'The compose check runs `promtool check config`. Install it with `sudo apt-get update && sudo apt-get ' +
  'install -y prometheus` (Debian/Ubuntu; only its promtool is used), or set PROMTOOL_PATH to a promtool ' +
  'executable.';

/** Long enough for `apt-get update` and a 20 MB download on a fresh machine. */
export const PROMTOOL_INSTALL_TIMEOUT_MS = 10 * 60_000;

const works = (command: string) => spawnSync(command, ['--version'], { timeout: 30_000 }).status === 0;

/**
 * A working `promtool`. When there is none and this process is root with apt-get, the Debian package
 * `prometheus` is downloaded (not installed: no service is set up or started) and unpacked into the
 * git-ignored tools folder, `apt-get update` first only when apt does not know the package yet; otherwise
 * fails with exactly what to install. Never skips.
 */
export async function ensurePromtool(): Promise<string> {
  const named = process.env.PROMTOOL_PATH;
  if (named) {
    if (works(named)) return named;
    throw new Error(`PROMTOOL_PATH=${named} does not run. ${INSTALL_HINT}`);
  }
  if (works('promtool')) return 'promtool';
  if (existsSync(UNPACKED) && works(UNPACKED)) return UNPACKED;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt =
    spawnSync('sh', ['-c', 'command -v apt-get && command -v dpkg-deb && command -v flock'], { encoding: 'utf8' })
      .status === 0;
  if (!root || !apt) throw new Error(`promtool was not found. ${INSTALL_HINT}`);
  await mkdir(toolsDir, { recursive: true });
  const work = await mkdtemp(path.join(toolsDir, 'promtool-'));
  try {
    let download = await aptGet(['download', 'prometheus'], work);
    if (download.code !== 0) {
      const update = await aptGet(['update'], work);
      if (update.code !== 0)
        throw new Error(`apt-get update failed (exit ${update.code}): ${update.tail}\n${INSTALL_HINT}`);
      download = await aptGet(['download', 'prometheus'], work);
    }
    const deb = (await readdir(work)).find((f) => f.endsWith('.deb'));
    if (download.code !== 0 || !deb)
      throw new Error(`apt-get download prometheus failed (exit ${download.code}): ${download.tail}\n${INSTALL_HINT}`);
    const unpacked = path.join(work, 'root');
    const extract = await runToEnd('dpkg-deb', ['-x', deb, unpacked], work);
    if (extract.code !== 0) throw new Error(`dpkg-deb -x ${deb} failed (exit ${extract.code}): ${extract.tail}`);
    // Moved into place whole, so a run stopped midway leaves no half-unpacked tool behind.
    await rm(path.join(toolsDir, 'promtool'), { recursive: true, force: true });
    await rename(unpacked, path.join(toolsDir, 'promtool'));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  if (!works(UNPACKED)) throw new Error(`The unpacked ${UNPACKED} does not run. ${INSTALL_HINT}`);
  return UNPACKED;
}
