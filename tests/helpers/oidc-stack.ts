import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeIdp, type FakeIdp } from './fake-idp.js';
import { startStack, type Stack, type StackOptions } from './stack.js';

/** A stack that authenticates with OIDC tokens from a local fake identity provider. */
export interface OidcStack {
  idp: FakeIdp;
  stack: Stack;
  /** The stack's `PLATFORM_DATA_DIR` (a fresh temporary folder, removed by `close`). */
  dataDir: string;
  /** Stops the stack, then the identity provider, and removes the data folder. */
  close(): Promise<void>;
}

/** The `AUTH_*` settings that point a deployment at `idp`. */
export function oidcEnv(idp: FakeIdp): Record<string, string> {
  return { AUTH_PROVIDER: 'oidc', AUTH_JWKS_URL: idp.jwksUrl, AUTH_ISSUER: idp.issuer, AUTH_AUDIENCE: idp.audience };
}

/**
 * Starts a fake identity provider and a stack trusting it, with its own data folder (`dataDirPrefix`
 * names it; `env` adds to or overrides the defaults).
 */
export async function startOidcStack(options: StackOptions & { dataDirPrefix?: string } = {}): Promise<OidcStack> {
  const idp = await startFakeIdp();
  const dataDir = mkdtempSync(path.join(tmpdir(), options.dataDirPrefix ?? 'oidc-stack-'));
  try {
    const stack = await startStack({
      ...options,
      env: { ...oidcEnv(idp), PLATFORM_DATA_DIR: dataDir, ...options.env },
    });
    return {
      idp,
      stack,
      dataDir,
      async close() {
        try {
          await stack.close();
        } finally {
          await idp.close();
          rmSync(dataDir, { recursive: true, force: true });
        }
      },
    };
  } catch (err) {
    await idp.close();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}
