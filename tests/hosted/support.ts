import { expect } from 'vitest';
import type { FakeIdp } from '../helpers/fake-idp.js';
import { startOidcStack, type OidcStack, type OidcStackOptions } from '../helpers/oidc-stack.js';
import { http } from '../helpers/stack.js';

export const TENANT = 'acme';
export const INSTALLATION = 'inst-1';

/** A hosted assertion's claims: the subject in this deployment's tenant and installation. */
export const claims = (sub: string, extra: Record<string, unknown> = {}) => ({
  sub,
  tenant: TENANT,
  installation: INSTALLATION,
  ...extra,
});

/**
 * A stack in hosted mode (tenant `acme`, installation `inst-1`) trusting a fake identity provider; no
 * worker unless asked for, no tokens signed (hosted assertions are made with {@link claims}).
 */
export function startHostedStack(options: OidcStackOptions<never> = {}): Promise<OidcStack<never>> {
  return startOidcStack<never>({
    worker: false,
    dataDirPrefix: 'hosted-test-',
    ...options,
    tokens: {},
    env: { AUTH_PROVIDER: 'hosted', AUTH_INSTALLATION: INSTALLATION, PLATFORM_TENANT: TENANT, ...options.env },
  });
}

/** A second deployment in plain OIDC mode trusting the same identity provider (no worker). */
export function startOidcTwin(idp: FakeIdp): Promise<OidcStack<never>> {
  return startOidcStack<never>({ idp, worker: false, dataDirPrefix: 'hosted-oidc-', tokens: {} });
}

/**
 * The control plane makes `alice` the initial admin, and she invites `bob`: answers their assertions
 * and bob's identity link.
 */
export async function aliceAndBob(s: OidcStack<never>): Promise<{ alice: string; bob: string; bobBinding: string }> {
  const boot = await http(s.stack.url, 'POST', '/api/hosted-identities/initial-admin', {
    token: await s.idp.sign(claims('control-plane', { scope: 'hosted.identity.bootstrap' })),
    body: { subject: 'alice' },
  });
  expect(boot.status).toBe(201);
  const alice = await s.idp.sign(claims('alice'));
  const inv = await http(s.stack.url, 'POST', '/api/hosted-identities/invitations', {
    token: alice,
    body: { subject: 'bob' },
  });
  expect(inv.status).toBe(201);
  return { alice, bob: await s.idp.sign(claims('bob')), bobBinding: inv.body.data.binding_id as string };
}
