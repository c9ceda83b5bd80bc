import type { EntityManager } from '@mikro-orm/postgresql';
import type Koa from 'koa';
import { LOCAL_ADMIN_ID, authenticate } from '../auth/authenticate.js';
import type { AppDeps } from '../../shared/app-deps.js';
import { randomToken, s256 } from '../mcp/oauth/pkce.js';
import { discoverUpstream, postUpstreamToken } from '../mcp/oauth/upstream.js';
import { AuthenticationError, PlatformError } from '../../shared/errors.js';
import { egressFor } from '../../shared/http/trust.js';
import type { Principal } from '../../shared/auth/principal.js';
import { saveSignIn, takeSignIn } from './session.js';

export const CALLBACK_PATH = '/console/callback';

/** Where the identity provider sends the browser back: the public base URL when set, else this request's origin. */
export function callbackUrl(deps: AppDeps, ctx: Koa.Context): string {
  const base = (deps.config.publicBaseUrl ?? `${ctx.protocol}://${ctx.host}`).replace(/\/+$/, '');
  return `${base}${CALLBACK_PATH}`;
}

/** A same-origin console path to return to after sign-in; anything else goes to the inbox. */
export function safeReturnTo(value: unknown): string {
  return typeof value === 'string' && /^\/console(\/|$|\?)/.test(value) && !value.includes('//')
    ? value
    : '/console/proposals';
}

/** Why this deployment cannot sign people in through the console, or null when it can. */
export function signInUnavailableReason(deps: AppDeps): string | null {
  const { auth } = deps.config;
  if (auth.provider === 'none') return null;
  if (!auth.issuer) return 'AUTH_ISSUER is not set: the console signs people in with the identity provider it names.';
  if (!auth.clientId)
    return "AUTH_CLIENT_ID is not set: the console needs the platform's client at the identity provider.";
  if (!deps.verifier) return 'No token verifier is configured (AUTH_JWKS_URL).';
  return null;
}

/**
 * Starts the authorization-code flow with PKCE (S256): remembers the verifier under a fresh `state`
 * and answers the identity provider's authorization URL to redirect to.
 */
export async function beginSignIn(deps: AppDeps, em: EntityManager, ctx: Koa.Context, returnTo: string) {
  const { auth } = deps.config;
  const upstream = await discoverUpstream(auth.issuer!, egressFor(deps.config, 'operator'));
  const state = randomToken();
  const verifier = randomToken();
  await saveSignIn(em, state, verifier, returnTo);
  const url = new URL(upstream.authorization_endpoint);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', auth.clientId!);
  url.searchParams.set('redirect_uri', callbackUrl(deps, ctx));
  url.searchParams.set('scope', 'openid profile email');
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', s256(verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  if (auth.audience) url.searchParams.set('audience', auth.audience);
  return url.toString();
}

export class SignInError extends PlatformError {
  constructor(message: string) {
    super('authentication', message);
  }
}

/**
 * Completes the flow: the state must name a sign-in in flight, the code is exchanged with the
 * verifier, and the access token is resolved to a principal exactly as a bearer request would be.
 */
export async function completeSignIn(
  deps: AppDeps,
  em: EntityManager,
  ctx: Koa.Context,
  query: { code?: unknown; state?: unknown; error?: unknown; error_description?: unknown },
): Promise<{ principal: Principal; returnTo: string }> {
  if (typeof query.error === 'string')
    throw new SignInError(
      `The identity provider refused the sign-in: ${query.error}${typeof query.error_description === 'string' ? ` (${query.error_description})` : ''}.`,
    );
  if (typeof query.state !== 'string' || typeof query.code !== 'string')
    throw new SignInError('The sign-in answer lacks its code or state; start again.');
  const pending = await takeSignIn(em, query.state);
  if (!pending) throw new SignInError('This sign-in is unknown, already used or expired; start again.');
  const { auth } = deps.config;
  const upstream = await discoverUpstream(auth.issuer!, egressFor(deps.config, 'operator'));
  const form: Record<string, string> = {
    grant_type: 'authorization_code',
    code: query.code,
    redirect_uri: callbackUrl(deps, ctx),
    client_id: auth.clientId!,
    code_verifier: pending.codeVerifier,
  };
  if (auth.clientSecret) form.client_secret = auth.clientSecret;
  const answer = await postUpstreamToken(upstream.token_endpoint, form, egressFor(deps.config, 'operator'));
  const accessToken = answer.body.access_token;
  if (answer.status !== 200 || typeof accessToken !== 'string')
    throw new SignInError(
      `The identity provider did not issue a token (${String(answer.body.error ?? answer.status)}); start again.`,
    );
  let principal: Principal | null;
  try {
    principal = await authenticate(
      { authorization: `Bearer ${accessToken}`, serviceToken: undefined },
      { config: deps.config, verifier: deps.verifier, em },
    );
  } catch (err) {
    if (err instanceof AuthenticationError) throw new SignInError(`The issued token was not accepted: ${err.message}`);
    throw err;
  }
  if (!principal) throw new SignInError('The issued token was not accepted.');
  return { principal, returnTo: pending.returnTo };
}

/** With AUTH_PROVIDER=none every console visitor is the local admin (shown with a banner). */
export async function localAdmin(deps: AppDeps, em: EntityManager): Promise<Principal> {
  const principal = await authenticate(
    { authorization: undefined, serviceToken: undefined },
    { config: deps.config, verifier: deps.verifier, em },
  );
  if (!principal || principal.id !== LOCAL_ADMIN_ID) throw new Error('local admin is only for AUTH_PROVIDER=none');
  return principal;
}
