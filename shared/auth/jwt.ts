import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTPayload } from 'jose';
import { AuthenticationError, ServiceUnavailableError } from '../errors.js';
import { EgressError, egressFetchFunction, type EgressPolicy } from '../http/egress.js';
import { EgressCodes } from '../http/egress-policy.js';

/** Verifies identity-provider access tokens. */
export interface TokenVerifier {
  verify(token: string): Promise<JWTPayload>;
}

/** Only asymmetric algorithms: an HS256 token "signed" with the public key is refused outright. */
const ALLOWED_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

export function createJwtVerifier(options: {
  jwksUrl: string;
  issuer: string;
  audience: string;
  egress: EgressPolicy;
}): TokenVerifier {
  const jwks = createRemoteJWKSet(new URL(options.jwksUrl), {
    timeoutDuration: 5_000,
    cooldownDuration: 30_000,
    cacheMaxAge: 10 * 60_000,
    // The key set is fetched through the egress client: the JWKS address must pass the egress policy.
    [customFetch]: egressFetchFunction(options.egress, { maxResponseBytes: 1024 * 1024 }),
  });
  return {
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, jwks, {
          issuer: options.issuer,
          audience: options.audience,
          algorithms: ALLOWED_ALGORITHMS,
          clockTolerance: 30,
          // A token without an expiry would never expire.
          requiredClaims: ['exp', 'sub'],
        });
        if (typeof payload.sub !== 'string' || payload.sub === '')
          throw new AuthenticationError('The access token has no subject (sub).');
        return payload;
      } catch (err) {
        throw mapJoseError(err);
      }
    },
  };
}

function mapJoseError(err: unknown): Error {
  if (err instanceof AuthenticationError) return err;
  if (err instanceof errors.JWTExpired)
    return new AuthenticationError('The access token has expired; sign in again.', { reason: 'token_expired' });
  if (err instanceof errors.JWTClaimValidationFailed && err.reason === 'missing') {
    return new AuthenticationError(`The access token lacks the required claim "${err.claim}".`, {
      reason: 'missing_claim',
      claim: err.claim,
    });
  }
  if (err instanceof errors.JWTClaimValidationFailed) {
    return new AuthenticationError(
      `The access token was not issued for this service (claim "${err.claim}" does not match).`,
      {
        reason: 'claim_mismatch',
        claim: err.claim,
      },
    );
  }
  if (err instanceof errors.JWKSNoMatchingKey)
    return new AuthenticationError('The access token is signed with a key this service does not recognise.', {
      reason: 'unknown_key',
    });
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) {
    return new AuthenticationError('The access token uses a signing algorithm this service does not accept.', {
      reason: 'algorithm_not_allowed',
    });
  }
  if (err instanceof EgressError && err.code === EgressCodes.egress_refused) {
    return new ServiceUnavailableError(
      'identity_provider',
      `The identity provider's signing keys (AUTH_JWKS_URL) are not allowed for outbound requests: ${err.message}.`,
    );
  }
  if (
    err instanceof errors.JWKSTimeout ||
    err instanceof EgressError ||
    (err instanceof Error && /Expected 200 OK/.test(err.message))
  ) {
    return new ServiceUnavailableError(
      'identity_provider',
      "The identity provider's signing keys cannot be fetched; retry shortly.",
    );
  }
  if (err instanceof errors.JOSEError)
    return new AuthenticationError('The access token is invalid.', { reason: 'invalid_token' });
  return new AuthenticationError('The access token is invalid.', { reason: 'invalid_token' });
}
