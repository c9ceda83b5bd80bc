import { CrmApiError, CrmAuthError, CrmAuthorizationRequiredError, CrmEgressError } from '../../crm/errors.js';
import { PlatformError } from '../../errors.js';

/** How the CRM merge executor reads a failed CRM call: refused before any change, or outcome unknown. */

/** Connection errors that prove the request never reached the CRM. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
const networkCode = (err: unknown): string | undefined => {
  const code = (err as { cause?: { code?: unknown } }).cause?.code;
  return typeof code === 'string' ? code : undefined;
};
export const neverSent = (err: unknown) =>
  err instanceof CrmEgressError ? err.sent === false : NOT_SENT.has(networkCode(err) ?? '');

/**
 * SOAP faults the CRM raises while authenticating or validating a call, before it changes anything.
 * Faults travel as HTTP 500, so the status alone cannot tell such a refusal from a server error.
 */
const REFUSAL_FAULTS = new Set([
  'INVALID_SESSION_ID',
  'INVALID_CROSS_REFERENCE_KEY',
  'ENTITY_IS_DELETED',
  'INVALID_ID_FIELD',
  'MALFORMED_ID',
  'INVALID_TYPE',
  'API_DISABLED_FOR_ORG',
  'REQUEST_LIMIT_EXCEEDED',
]);

/**
 * Whether a failed CRM call was refused before the CRM changed anything: never sent, no token to send
 * it with, a 4xx, or a validation fault. A 5xx (a proxy's 502/503/504 can arrive after the CRM
 * finished), a timeout, a reset or an unreadable answer proves nothing, so the outcome is unknown.
 */
export function refusedBeforeChange(err: unknown): boolean {
  if (neverSent(err) || err instanceof CrmAuthError || err instanceof CrmAuthorizationRequiredError) return true;
  if (!(err instanceof CrmApiError)) return false;
  return REFUSAL_FAULTS.has(err.crmCode) || (err.httpStatus >= 400 && err.httpStatus < 500);
}

/** A failure in words people may read: codes and our own messages, never the CRM's text (that is logged). */
export function summary(err: unknown): string {
  if (err instanceof CrmApiError) return `the CRM answered HTTP ${err.httpStatus} ${err.crmCode}`;
  if (err instanceof PlatformError) return err.message;
  if ((err as { name?: unknown }).name === 'TimeoutError') return 'the CRM did not answer in time';
  const code = networkCode(err);
  return code ? `the connection failed: ${code}` : 'an unexpected error';
}
