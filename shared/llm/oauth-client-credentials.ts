import { createHash } from 'node:crypto';
import type { EgressPolicy } from '../http/egress.js';
import { answerJson, llmFailure, providerCall } from './client.js';
import { onProcessReset } from '../process-state.js';

/** RFC 6749 §2.3.1: how the client authenticates at the token endpoint. */
export type TokenEndpointAuthMethod = 'client_secret_basic' | 'client_secret_post';

/** One OAuth 2.0 client-credentials grant (RFC 6749 §4.4) a provider signs in with. */
export interface ClientCredentialsGrant {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  authMethod: TokenEndpointAuthMethod;
  /** Space-separated scopes; omitted from the request when absent. */
  scope?: string;
  egress: EgressPolicy;
  timeoutMs: number;
  /** What a refusal of the credentials says and which settings to check (classified `authentication`). */
  refusal: { message: string; action: string };
  /** Names the setting to fix when the token endpoint's address is refused by the egress policy. */
  addressSetting: string;
}

/** Tokens without a stated lifetime are kept this long (a 401 from the provider still renews them). */
const DEFAULT_LIFETIME_S = 3600;
/** Tokens are renewed this long before they expire (or a tenth of a shorter lifetime). */
const RENEW_BEFORE_S = 60;

/** Access tokens per endpoint, client, method, scope and secret (hashed), kept until shortly before they expire. */
const tokens = new Map<string, { token: string; renewAt: number }>();
onProcessReset('shared/llm/oauth-client-credentials.ts#tokens', () => {
  tokens.clear();
});
/** Token requests under way, so concurrent calls share one grant. */
const pending = new Map<string, Promise<string>>();
onProcessReset('shared/llm/oauth-client-credentials.ts#pending', () => {
  pending.clear();
});

const cacheKey = (g: ClientCredentialsGrant) =>
  [g.tokenUrl, g.clientId, g.authMethod, g.scope ?? '', createHash('sha256').update(g.clientSecret).digest('hex')].join(
    ' ',
  );

/** application/x-www-form-urlencoded encoding of one value (RFC 6749 §2.3.1 applies it to Basic credentials too). */
const formEncode = (value: string) => new URLSearchParams([['v', value]]).toString().slice(2);

/** When a token answered with `expires_in` seconds should be renewed (epoch ms). */
export function renewAtOf(now: number, expiresIn: unknown): number {
  const lifetime = typeof expiresIn === 'number' && expiresIn > 0 ? expiresIn : DEFAULT_LIFETIME_S;
  return now + (lifetime - Math.min(RENEW_BEFORE_S, lifetime / 10)) * 1000;
}

/** A cached access token for the grant, or a new one from the token endpoint. */
export function clientCredentialsToken(g: ClientCredentialsGrant): Promise<string> {
  const key = cacheKey(g);
  const hit = tokens.get(key);
  if (hit && hit.renewAt > Date.now()) return Promise.resolve(hit.token);
  const running = pending.get(key);
  if (running) return running;
  const request = requestToken(g, key).finally(() => pending.delete(key));
  pending.set(key, request);
  return request;
}

/** Forgets the grant's cached token (the provider answered 401 with it). */
export function forgetClientCredentialsToken(g: ClientCredentialsGrant): void {
  tokens.delete(cacheKey(g));
}

async function requestToken(g: ClientCredentialsGrant, key: string): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (g.scope) form.set('scope', g.scope);
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  };
  if (g.authMethod === 'client_secret_basic')
    headers.authorization = `Basic ${Buffer.from(`${formEncode(g.clientId)}:${formEncode(g.clientSecret)}`).toString('base64')}`;
  else {
    form.set('client_id', g.clientId);
    form.set('client_secret', g.clientSecret);
  }
  const answer = await providerCall(g.tokenUrl, {
    egress: g.egress,
    timeoutMs: g.timeoutMs,
    method: 'POST',
    headers,
    body: form.toString(),
    addressSetting: g.addressSetting,
  });
  // RFC 6749 §5.2: invalid_client, unauthorized_client, invalid_grant, invalid_scope are 400 or 401.
  if (answer.status === 400 || answer.status === 401 || answer.status === 403)
    throw llmFailure('authentication', g.refusal.message, g.refusal.action, false, answer.text.slice(0, 500));
  const body = answerJson<{ access_token?: unknown; token_type?: unknown; expires_in?: unknown }>(
    answer,
    'an OAuth token',
  );
  if (typeof body.access_token !== 'string' || !/^\S+$/.test(body.access_token))
    throw llmFailure(
      'bad_response',
      'The token endpoint answered without an access token.',
      'Check that the token endpoint URL names an OAuth 2.0 token endpoint.',
      false,
      answer.text.slice(0, 500),
    );
  if (typeof body.token_type === 'string' && body.token_type.toLowerCase() !== 'bearer')
    throw llmFailure(
      'bad_response',
      'The token endpoint issued a token that is not a bearer token; only bearer tokens are supported.',
      'Configure the OAuth client at the authorization server to receive bearer tokens.',
      false,
    );
  tokens.set(key, { token: body.access_token, renewAt: renewAtOf(Date.now(), body.expires_in) });
  return body.access_token;
}
