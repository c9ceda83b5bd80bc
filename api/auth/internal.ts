import { secretsEqual } from '../../shared/auth/tokens.js';
import type { AppConfig } from '../../shared/config.js';
import { AuthenticationError } from '../../shared/errors.js';

/**
 * Internal routes take only `X-Platform-Internal-Token`; bearer tokens and cookies are ignored there.
 * The refusal says whether the header was absent or unrecognised (spec, Authentication item 1).
 * `bearer`: the route also takes the same token as `Authorization: Bearer <token>` (`GET /metrics`,
 * which is what a Prometheus scrape's `authorization` / `bearer_token_file` sends).
 */
export function requireInternalToken(
  header: string | undefined,
  config: AppConfig,
  options: { bearer?: string | undefined } = {},
): void {
  const token = header || bearerToken(options.bearer);
  const accepted =
    options.bearer === undefined
      ? 'internal routes accept only that header (no bearer token or cookie)'
      : 'this route accepts that header or the same token as `Authorization: Bearer <token>`';
  if (token === undefined || token === '') {
    throw new AuthenticationError(`The X-Platform-Internal-Token header is absent; ${accepted}.`, {
      reason: 'internal_token_absent',
    });
  }
  if (!config.auth.internalToken || !secretsEqual(token, config.auth.internalToken)) {
    throw new AuthenticationError(
      header ? 'The X-Platform-Internal-Token header is unrecognised.' : 'The bearer token is not the internal token.',
      {
        reason: 'internal_token_unrecognised',
        ...(config.auth.internalToken
          ? {}
          : { detail: 'PLATFORM_INTERNAL_TOKEN is not configured on this deployment' }),
      },
    );
  }
}

const bearerToken = (authorization: string | undefined): string | undefined =>
  authorization === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
