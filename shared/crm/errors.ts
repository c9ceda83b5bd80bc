import { randomUUID } from 'node:crypto';
import { foreignCode, PlatformError, type ErrorType } from '../errors.js';
import type { EgressError } from '../http/egress-policy.js';
import { CrmCodes } from './error-codes.js';
import { EgressCodes } from '../http/egress-policy.js';

/** Advice shown with the CRM's own OAuth error pairs (PROTOCOLS.md): what to change, not only what failed. */
const OAUTH_FIXES: Array<[RegExp, string]> = [
  [
    /not supported on this domain/i,
    "The client-credentials grant works only on your organization's custom-domain host: set login_host to it (not the standard login host).",
  ],
  [/no client credentials user/i, 'Designate a run-as user for the connected app (client-credentials flow).'],
  [
    /audience is invalid/i,
    'The assertion audience is the login host: set login_host to the login URL (not the instance URL).',
  ],
  [
    /hasn't approved|has not approved/i,
    'Pre-authorize the integration user for the connected app (admin-approved users) and upload its certificate.',
  ],
  [
    /expired access\/refresh token/i,
    'The refresh token was revoked or expired: authorize again, or save a new refresh_token.',
  ],
  [
    /invalid assertion/i,
    'The connected app rejected the JWT: check consumer_key, username, and that the uploaded certificate matches private_key.',
  ],
];

const fixFor = (error: string, description: string): string | null => {
  if (error === 'redirect_uri_mismatch')
    return 'Re-copy the displayed redirect URI into the OAuth app exactly; a callback change can need a few minutes to propagate.';
  if (error === 'invalid_client_id' || error === 'invalid_client')
    return 'Check client_id (consumer key) and client_secret against the connected app.';
  return OAUTH_FIXES.find(([re]) => re.test(description))?.[1] ?? null;
};

/** Thrown when the CRM's token endpoint refuses a grant; carries the CRM's error pair and a fix. */
export class CrmAuthError extends PlatformError {
  override name = 'CrmAuthError';
  constructor(
    readonly crmError: string,
    readonly crmDescription: string,
    extra: Record<string, unknown> = {},
  ) {
    const fix = fixFor(crmError, crmDescription);
    super('bad_request', `The CRM refused the token request: ${crmError} (${crmDescription}).${fix ? ` ${fix}` : ''}`, {
      code: foreignCode(crmError),
      error_description: crmDescription,
      fix,
      ...extra,
    });
  }
}

/**
 * Thrown when a REST or SOAP call answers an error; `crmCode` is the CRM's errorCode or fault code
 * (or `HTTP_<status>`). The message and payload carry only those structured codes and an `error_id`:
 * the CRM's own text (its message, or a body it could not structure) can quote record data, so it is
 * kept in `logDetail` for the log, under the same id.
 */
export class CrmApiError extends PlatformError {
  override name = 'CrmApiError';
  readonly errorId: string;
  readonly logDetail: { error_id: string; crm_status: number; crm_code: string; crm_text: string };
  constructor(
    readonly httpStatus: number,
    readonly crmCode: string,
    crmText = '',
  ) {
    const type: ErrorType =
      httpStatus === 404
        ? 'not_found'
        : httpStatus === 401
          ? 'bad_request'
          : httpStatus >= 500
            ? 'service_unavailable'
            : 'bad_request';
    const errorId = randomUUID();
    super(type, `The CRM answered ${httpStatus} ${crmCode} (error_id ${errorId}).`, {
      code: foreignCode(crmCode),
      crm_status: httpStatus,
      dependency: 'crm',
      error_id: errorId,
    });
    this.errorId = errorId;
    this.logDetail = {
      error_id: errorId,
      crm_status: httpStatus,
      crm_code: crmCode,
      crm_text: crmText.slice(0, 2_000),
    };
  }
}

/** Thrown when a user_oauth connection has no tokens yet: a person must authorize it first. */
export class CrmAuthorizationRequiredError extends PlatformError {
  override name = 'CrmAuthorizationRequiredError';
  constructor(connectionName: string) {
    super(
      'conflict',
      `Connection "${connectionName}" is not authorized yet: start the flow at GET /api/connections/${connectionName}/oauth/authorize.`,
      {
        code: CrmCodes.authorization_required,
        authorize_path: `/api/connections/${connectionName}/oauth/authorize`,
      },
    );
  }
}

/**
 * Thrown when a request to the CRM could not be made or completed (shared/http/egress.ts): refused
 * by the egress policy (400: the connection names a host this deployment may not call), or the
 * host could not be reached or did not answer in time (503). `sent` is false when the request
 * provably never left the platform. The message is the classified one, never socket text.
 */
export class CrmEgressError extends PlatformError {
  override name = 'CrmEgressError';
  readonly sent: boolean | undefined;
  constructor(
    readonly egress: EgressError,
    what = 'The CRM',
    /** The discovered URL refused (the instance a token response names), for registering its host. */
    readonly discoveredUrl?: string,
  ) {
    const refused = egress.code === EgressCodes.egress_refused;
    super(
      refused ? 'bad_request' : 'service_unavailable',
      refused ? `${what} host is not allowed: ${egress.message}.` : `${what} cannot be reached: ${egress.message}.`,
      {
        code: egress.code,
        dependency: 'crm',
        ...(egress.socketCode ? { socket_code: egress.socketCode } : {}),
      },
    );
    this.sent = egress.sent;
  }
}
