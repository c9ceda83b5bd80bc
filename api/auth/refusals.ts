// How a credential is refused (401 naming the accepted forms), apart from authenticate.ts so that
// hosted.ts, which authenticate.ts calls, can refuse the same way without an import cycle.
import type { AppConfig } from '../../shared/config.js';
import { AuthenticationError } from '../../shared/errors.js';
import type { TokenVerifier } from '../../shared/auth/jwt.js';

/** The credential forms this deployment accepts, for 401 messages. */
export function acceptedForms(config: AppConfig): string[] {
  const forms: string[] = [];
  if (config.auth.jwksUrl) forms.push('Authorization: Bearer <access token from the identity provider>');
  forms.push('Authorization: Bearer gp_<personal access token>');
  forms.push('Authorization: Bearer gsk_<sandbox thread token> (agents)');
  if (config.auth.serviceToken) forms.push('X-Platform-Service-Token: <service token>');
  return forms;
}

export function authenticationRequired(
  config: AppConfig,
  message = 'Authentication required.',
  payload: Record<string, unknown> = {},
): AuthenticationError {
  return new AuthenticationError(
    `${message} This deployment uses the "${config.auth.provider}" identity provider; send one of: ${acceptedForms(config).join('; ')}.`,
    { ...payload, provider: config.auth.provider, accepted: acceptedForms(config) },
  );
}

/** An identity-provider token that does not hold (invalid, expired, …): the same guidance as a missing credential (rule 2). */
export async function verifyIdpToken(config: AppConfig, verifier: TokenVerifier, token: string) {
  try {
    return await verifier.verify(token);
  } catch (err) {
    if (!(err instanceof AuthenticationError)) throw err;
    const refused = authenticationRequired(config, err.message, err.payload);
    refused.headers = { ...err.headers, ...refused.headers };
    throw refused;
  }
}
