import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { aptGet } from './run-to-end.js';

/** The system Chromium (Debian package `chromium`); CHROMIUM_PATH overrides. No browser is downloaded. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const INSTALL_HINT =
  'The console browser tests drive the system Chromium through playwright-core. Install it with ' +
  '`sudo apt-get update && sudo apt-get install -y chromium` (Debian/Ubuntu package "chromium"), ' +
  'or set CHROMIUM_PATH to a Chromium or Chrome executable.';

/** Long enough for `apt-get update && apt-get install chromium` on a fresh machine (give it to the hook). */
export const CHROMIUM_INSTALL_TIMEOUT_MS = 20 * 60_000;

/**
 * Makes sure the system Chromium exists: when it is missing and this process is root with apt-get,
 * installs the Debian package `chromium`; otherwise fails with exactly what to install. Never skips.
 */
export async function ensureChromium(): Promise<string> {
  if (existsSync(CHROMIUM_PATH)) return CHROMIUM_PATH;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get && command -v flock'], { encoding: 'utf8' }).status === 0;
  if (!root || !apt || process.env.CHROMIUM_PATH)
    throw new Error(`Chromium was not found at ${CHROMIUM_PATH}. ${INSTALL_HINT}`);
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'chromium']]) {
    const result = await aptGet(args);
    if (result.code !== 0)
      throw new Error(`apt-get ${args.join(' ')} failed (exit ${result.code}): ${result.tail}\n${INSTALL_HINT}`);
  }
  if (!existsSync(CHROMIUM_PATH))
    throw new Error(`apt-get installed chromium, yet ${CHROMIUM_PATH} is missing. ${INSTALL_HINT}`);
  return CHROMIUM_PATH;
}

/** Headless system Chromium (no sandbox when running as root, which Chromium otherwise refuses). */
export async function launchChromium(): Promise<Browser> {
  const executablePath = await ensureChromium();
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  return chromium.launch({
    executablePath,
    headless: true,
    args: root ? ['--no-sandbox', '--disable-dev-shm-usage'] : ['--disable-dev-shm-usage'],
  });
}
