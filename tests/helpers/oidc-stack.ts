import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { JWTPayload } from 'jose';
import { startFakeIdp, type FakeIdp } from './fake-idp.js';
import { startStack, type Stack, type StackOptions } from './stack.js';

/** A stack that authenticates with OIDC tokens from a local fake identity provider. */
export interface OidcStack<K extends string = People> {
  idp: FakeIdp;
  stack: Stack;
  /** The stack's `PLATFORM_DATA_DIR` (a fresh temporary folder removed by `close`, unless `env` named one). */
  dataDir: string;
  /** The tokens `tokens` asked for, signed by `idp` (by default `admin`: root, and `member`: ann). */
  tokens: Record<K, string>;
  /** Stops the stack, then the identity provider (unless it was passed in), and removes the data folder. */
  close(): Promise<void>;
}

export interface OidcStackOptions<K extends string = People> extends StackOptions {
  /** Names the temporary data folder (ignored when `env` sets `PLATFORM_DATA_DIR`). */
  dataDirPrefix?: string;
  /** An identity provider to trust instead of a fresh one; `close` leaves it running. */
  idp?: FakeIdp;
  /** The tokens to sign, by name: their claims (default {@link PEOPLE}). */
  tokens?: Record<K, JWTPayload>;
  /** How long the tokens live (the identity provider's default otherwise). */
  tokenExpiresIn?: string;
}

/** The two people most suites sign in as: an administrator and a member. */
export const PEOPLE = {
  admin: { sub: 'root', roles: ['admin'] },
  member: { sub: 'ann', roles: ['member'] },
} satisfies Record<string, JWTPayload>;
export type People = keyof typeof PEOPLE;

/** The `AUTH_*` settings that point a deployment at `idp`. */
export function oidcEnv(idp: FakeIdp): Record<string, string> {
  return { AUTH_PROVIDER: 'oidc', AUTH_JWKS_URL: idp.jwksUrl, AUTH_ISSUER: idp.issuer, AUTH_AUDIENCE: idp.audience };
}

/** Signs one token per entry of `claims` (same names), all with `expiresIn` when given. */
export async function signAll<K extends string>(
  idp: FakeIdp,
  claims: Record<K, JWTPayload>,
  expiresIn?: string,
): Promise<Record<K, string>> {
  const tokens = {} as Record<K, string>;
  for (const [name, c] of Object.entries(claims) as Array<[K, JWTPayload]>)
    tokens[name] = await idp.sign(c, expiresIn === undefined ? {} : { expiresIn });
  return tokens;
}

/**
 * Starts a fake identity provider (or uses `options.idp`) and a stack trusting it, with its own data
 * folder (`dataDirPrefix` names it; `env` adds to or overrides the defaults, `AUTH_PROVIDER` included),
 * and signs the `tokens` asked for.
 */
export async function startOidcStack<K extends string = People>(
  options: OidcStackOptions<K> = {},
): Promise<OidcStack<K>> {
  const {
    idp: given,
    tokens: claims = PEOPLE as Record<K, JWTPayload>,
    tokenExpiresIn,
    dataDirPrefix,
    ...stackOptions
  } = options;
  const idp = given ?? (await startFakeIdp());
  const ownDir = options.env?.PLATFORM_DATA_DIR === undefined;
  const dataDir = ownDir
    ? mkdtempSync(path.join(tmpdir(), dataDirPrefix ?? 'oidc-stack-'))
    : options.env!.PLATFORM_DATA_DIR!;
  const release = async () => {
    if (!given) await idp.close();
    if (ownDir) rmSync(dataDir, { recursive: true, force: true });
  };
  let stack: Stack;
  try {
    stack = await startStack({
      ...stackOptions,
      env: { ...oidcEnv(idp), PLATFORM_DATA_DIR: dataDir, ...options.env },
    });
  } catch (err) {
    await release();
    throw err;
  }
  return {
    idp,
    stack,
    dataDir,
    tokens: await signAll(idp, claims, tokenExpiresIn),
    async close() {
      try {
        await stack.close();
      } finally {
        await release();
      }
    },
  };
}

/**
 * An OIDC stack beside a fake service already started (a model, a Git server…): if `start` fails the
 * fake is closed; `close` stops the stack, then the fake.
 */
export async function beside<K extends string>(
  fake: { close(): Promise<void> },
  start: () => Promise<OidcStack<K>>,
): Promise<OidcStack<K>> {
  let oidc: OidcStack<K>;
  try {
    oidc = await start();
  } catch (err) {
    await fake.close();
    throw err;
  }
  return {
    ...oidc,
    async close() {
      try {
        await oidc.close();
      } finally {
        await fake.close();
      }
    },
  };
}
