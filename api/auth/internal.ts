import { secretsEqual } from '../../shared/auth/tokens.js';
import type { AppConfig } from '../../shared/config.js';
import { AuthenticationError } from '../../shared/errors.js';

/**
 * Internal routes take only `X-Platform-Internal-Token`; bearer tokens and cookies are ignored there.
 * The refusal says whether the header was absent or unrecognised (spec, Authentication item 1).
 */
export function requireInternalToken(header: string | undefined, config: AppConfig): void {
  if (header === undefined || header === '') {
    throw new AuthenticationError(
      'The X-Platform-Internal-Token header is absent; internal routes accept only that header (no bearer token or cookie).',
      {
        reason: 'internal_token_absent',
      },
    );
  }
  if (!config.auth.internalToken || !secretsEqual(header, config.auth.internalToken)) {
    throw new AuthenticationError('The X-Platform-Internal-Token header is unrecognised.', {
      reason: 'internal_token_unrecognised',
      ...(config.auth.internalToken ? {} : { detail: 'PLATFORM_INTERNAL_TOKEN is not configured on this deployment' }),
    });
  }
}
