/**
 * The `stack` project runs its files one after another in one process per worker, each with its own
 * database. Two apps started one after another in this process, with `resetProcessState()` between
 * them as `tests/setup/fresh-process.ts` runs it between files, answer as two fresh processes would:
 * the second seeds its own database's built-in agents (the registry remembers seeded tenants), and
 * does not accept a download link the first signed (each is a deployment with its own secrets key, from
 * which the link key is derived; the derived keys are remembered per configuration, and forgotten).
 * `tests/unit/process-state.test.ts` checks that every piece of module state can be forgotten.
 */
import { describe, expect, it } from 'vitest';
import { signDownload, verifyDownloadToken } from '../../shared/downloads/signed-urls.js';
import type { PlatformError } from '../../shared/errors.js';
import { resetProcessState } from '../../shared/process-state.js';
import { http, startStack } from '../helpers/stack.js';

interface Session {
  agents: string[];
  ownLink: string;
  /** How this app answers the link the previous app signed (undefined when there was none). */
  previousLink: string | undefined;
  link: string;
}

const tokenOf = (url: string) => url.slice(url.lastIndexOf('/') + 1);

async function session(secretsKey: string, previousLink?: string): Promise<Session> {
  const stack = await startStack({ worker: false, env: { PLATFORM_SECRETS_KEY: secretsKey } });
  try {
    const res = await http(stack.url, 'GET', '/api/agents');
    expect(res.status).toBe(200);
    const link = await signDownload(stack.config, {
      fileId: 'file_reuse',
      tenant: 'default',
      ttlSeconds: 300,
      log: stack.log,
    });
    const answer = (url: string) =>
      verifyDownloadToken(stack.config, tokenOf(url)).then(
        (claims) => `valid:${claims.fileId}`,
        (err: PlatformError) => `refused:${String(err.payload?.reason ?? err.message)}`,
      );
    return {
      agents: (res.body.data.agents as { name: string; source: string }[]).map((a) => `${a.name}:${a.source}`),
      ownLink: await answer(link),
      previousLink: previousLink === undefined ? undefined : await answer(previousLink),
      link,
    };
  } finally {
    await stack.close();
  }
}

describe('two apps one after another in one process', () => {
  it('answer alike once the process state is reset between them, as between test files', async () => {
    const first = await session('first-deployment-secrets-key-0123456789');
    resetProcessState();
    const second = await session('second-deployment-secrets-key-0123456789', first.link);
    expect(first.agents).toEqual(['Adam:builtin', 'Eve:builtin']);
    expect(second.agents).toEqual(first.agents);
    expect(first.ownLink).toBe('valid:file_reuse');
    expect(second.ownLink).toBe('valid:file_reuse');
    expect(second.previousLink).toBe('refused:invalid_link');
  });
});
