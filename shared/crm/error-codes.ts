// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Error codes of CRM connections, OAuth and merges (a merge decision reuses `ActionReviewCodes`).
 * @error-codes: a family module (docs/architecture.md "Error codes"); the wire string is the key, in the spec's casing.
 */
export const CrmCodes = {
  governed_action: 'governed_action',
  not_user_oauth: 'not_user_oauth',
  invalid_state: 'invalid_state',
  connection_exists: 'connection_exists',
  merge_rule_violated: 'merge_rule_violated',
  merge_not_enabled: 'merge_not_enabled',
  approval_expired: 'approval_expired',
  stale_digest: 'stale_digest',
  connection_mismatch: 'connection_mismatch',
  authorization_required: 'authorization_required',
  EGRESS_APPROVAL_REQUIRED: 'EGRESS_APPROVAL_REQUIRED',
  egress_registration_not_pending: 'egress_registration_not_pending',
} as const;
export type CrmCode = (typeof CrmCodes)[keyof typeof CrmCodes];
