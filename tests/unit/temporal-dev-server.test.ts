/**
 * The Temporal dev server's launcher (`scripts/lib/temporal-dev-server.ts`) when the server does not stay up: a
 * server that ends during start-up is reported with its last output (kept in memory when it has no log file), and
 * a running one says so until it ends. A stand-in CLI (a shell script) plays the server, so no Temporal runs here.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/lib/net.js';
import { startTemporalDevServer } from '../../scripts/lib/temporal-dev-server.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** The error `startTemporalDevServer` fails with for a stand-in CLI (a shell script of `body`); null if it started. */
async function startFailure(body: string): Promise<Error | null> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'fake-temporal-'));
  dirs.push(dir);
  const cli = path.join(dir, 'temporal');
  await writeFile(cli, `#!/bin/sh\n${body}\n`);
  await chmod(cli, 0o755);
  return startTemporalDevServer({ cliPath: cli, port: await freePort(), uiPort: null }).then(
    () => null,
    (err: Error) => err,
  );
}

describe.runIf(process.platform !== 'win32')('startTemporalDevServer', () => {
  it('reports a server that ends during start-up with its exit and its last output', async () => {
    const error = await startFailure(
      'echo "starting the frontend"\necho "listen tcp 127.0.0.1:7234: bind: address already in use" >&2\nexit 1',
    );
    expect(error?.message).toContain('the Temporal dev server exited during start-up');
    expect(error?.message).toContain('starting the frontend');
    expect(error?.message).toContain('bind: address already in use');
  });

  it('keeps only the end of a long output', async () => {
    // About 20 KB of lines, then the reason: the message holds the reason and at most the kept tail.
    const error = await startFailure(
      'i=0\nwhile [ $i -lt 400 ]; do echo "line $i of the server\'s chatty output padding"; i=$((i+1)); done\necho "the reason" >&2\nexit 3',
    );
    expect(error?.message).toContain('the reason');
    expect(error?.message).not.toContain('line 0 of');
    expect(error!.message.length).toBeLessThan(8_192 + 500);
  });
});
