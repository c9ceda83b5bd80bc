/**
 * The platform's one error model. Every refusal a caller sees is one of these, turned into the
 * spec's envelope `{error, error_type, request_id, payload?}` by the API's error middleware.
 */
import type { ActionReviewCode } from './action-review/refusals.js';
import type { AgentCode } from './agents/error-codes.js';
import type { BlueprintCode } from './blueprints/error-codes.js';
import type { CrmCode } from './crm/error-codes.js';
import type { DemoCode } from './demo/error-codes.js';
import type { DesktopCode } from './desktop/error-codes.js';
import type { DocumentIndexCode } from './document-index/error-codes.js';
import type { EgressCode } from './http/egress-policy.js';
import type { RequestCode } from './http/error-codes.js';
import type { GitSyncCode, ManagedSourceCode } from './managed-sources/error-codes.js';
import type { MissionCode } from './missions/error-codes.js';
import type { SettingsCode } from './settings/error-codes.js';
import type { TrackerCode } from './tracker/error-codes.js';
export const ErrorTypes = {
  bad_request: 400,
  authentication: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable_entity: 422,
  internal: 500,
  llm_error: 502,
  not_available_here: 501,
  update_required: 426,
  service_unavailable: 503,
  demo_access_denied: 403,
  too_many_requests: 429,
} as const;
export type ErrorType = keyof typeof ErrorTypes;

/**
 * Every error code the platform writes (`payload.code`, a field's `code`, a `GitSyncError`'s code, …): the union
 * of the family modules' constants (docs/architecture.md "Error codes"), so a misspelt code fails `tsc`.
 */
export type ErrorCode =
  | ActionReviewCode
  | AgentCode
  | BlueprintCode
  | CrmCode
  | DemoCode
  | DesktopCode
  | DocumentIndexCode
  | EgressCode
  | GitSyncCode
  | ManagedSourceCode
  | MissionCode
  | RequestCode
  | SettingsCode
  | TrackerCode;

/** Another system's code passed through as it came (a CRM's OAuth error, a provider's errorCode): `foreignCode(x)`. */
export type ForeignCode = string & { readonly __foreignCode: true };
export const foreignCode = (code: string): ForeignCode => code as ForeignCode;

export type ErrorPayload = { code?: ErrorCode | ForeignCode } & Record<string, unknown>;

/** Base of every refusal the platform answers on purpose. */
export class PlatformError extends Error {
  override name = 'PlatformError';
  readonly status: number;
  /** Response headers sent with the envelope, e.g. a specific WWW-Authenticate challenge. */
  headers: Record<string, string> = {};
  constructor(
    readonly errorType: ErrorType,
    message: string,
    readonly payload?: ErrorPayload,
    status?: number,
  ) {
    super(message);
    this.status = status ?? ErrorTypes[errorType];
  }
}

/** Thrown when input fails validation; `payload.fields` names the failing fields. */
export class BadRequestError extends PlatformError {
  override name = 'BadRequestError';
  constructor(message: string, payload?: ErrorPayload) {
    super('bad_request', message, payload);
  }
}

/** Thrown when a credential is missing or invalid. */
export class AuthenticationError extends PlatformError {
  override name = 'AuthenticationError';
  constructor(message: string, payload?: ErrorPayload) {
    super('authentication', message, payload);
  }
}

/** Thrown when the caller is known but lacks the right; the message carries administrator guidance. */
export class ForbiddenError extends PlatformError {
  override name = 'ForbiddenError';
  constructor(message: string, payload?: ErrorPayload) {
    super('forbidden', message, payload);
  }
}

/** Thrown for unknown resources and for subjects the caller may not see (never 403 for those). */
export class NotFoundError extends PlatformError {
  override name = 'NotFoundError';
  constructor(message: string, payload?: ErrorPayload) {
    super('not_found', message, payload);
  }
}

/** Thrown when the request conflicts with the current state; `payload.code` carries the spec's code. */
export class ConflictError extends PlatformError {
  override name = 'ConflictError';
  constructor(message: string, payload?: ErrorPayload) {
    super('conflict', message, payload);
  }
}

/** Thrown when a configuration body carries fields the schema does not declare. */
export class UndeclaredFieldsError extends PlatformError {
  override name = 'UndeclaredFieldsError';
  constructor(fields: string[]) {
    super('unprocessable_entity', `undeclared field(s): ${fields.join(', ')}`, { fields });
  }
}

/** Thrown when a body or stored form is larger than allowed. */
export class PayloadTooLargeError extends PlatformError {
  override name = 'PayloadTooLargeError';
  constructor(message: string, payload?: ErrorPayload) {
    super('payload_too_large', message, payload);
  }
}

/** Thrown when a dependency (PostgreSQL, Temporal) cannot be reached; the message never carries driver text. */
export class ServiceUnavailableError extends PlatformError {
  override name = 'ServiceUnavailableError';
  constructor(dependency: 'database' | 'temporal' | string, message?: string) {
    super('service_unavailable', message ?? `A dependency is unavailable (${dependency}); retry shortly.`, {
      dependency,
    });
  }
}

/** Thrown when a classified language-model failure ends a turn; `payload.llm_failure` never carries provider text. */
export class LlmFailureError extends PlatformError {
  override name = 'LlmFailureError';
  constructor(failure: { kind: string; message: string; action: string; error_id: string }) {
    super('llm_error', failure.message, { llm_failure: failure });
  }
}

/** Desktop mode: a required version notice locks the app until it updates (spec, Errors 426). */
export class UpdateRequiredError extends PlatformError {
  override name = 'UpdateRequiredError';
  constructor(appVersionPolicy: Record<string, unknown>) {
    super('update_required', 'This app version is no longer supported: update the app to continue.', {
      status: 'update_required',
      app_version_policy: appVersionPolicy,
    });
  }
}

/** Hosted demo gate (spec, Authentication 5): a signed-in person the gate does not admit. */
export class DemoAccessDeniedError extends PlatformError {
  override name = 'DemoAccessDeniedError';
  constructor(message: string, payload: { reason: string; detail: string; redirect_to: string }) {
    super('demo_access_denied', message, payload);
  }
}

/** A rate limit was reached; `Retry-After` says when to try again (seconds). */
export class TooManyRequestsError extends PlatformError {
  override name = 'TooManyRequestsError';
  constructor(message: string, retryAfterSeconds: number, payload?: ErrorPayload) {
    super('too_many_requests', message, { ...payload, retry_after_seconds: retryAfterSeconds });
    this.headers = { 'Retry-After': String(retryAfterSeconds) };
  }
}
