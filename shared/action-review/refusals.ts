// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Why Action Review refuses a decision, execution or reconciliation. Workflow validators throw
 * these codes (as the `type` of a non-retryable ApplicationFailure); the API maps them to HTTP in
 * one place (`refusalStatus`). Workflow-safe.
 * @error-codes: the Action Review family (`ActionReviewCodes`, docs/architecture.md "Error codes").
 */
export const REFUSAL_CODES = {
  /** Approve, reject and reconcile are person-only. */
  person_only: 403,
  /** The proposal was already approved or rejected. */
  already_decided: 409,
  /** The client pinned a version or digest that no longer matches the proposal. */
  decision_context_mismatch: 409,
  /** Execute on a proposal that is not approved (still requested, or rejected). */
  not_approved: 409,
  /** Execute from an origin the proposal does not allow; refused before claiming the grant. */
  execution_origin_required: 409,
  /** Reconcile on a proposal that does not need reconciliation. */
  not_reconciliation_required: 409,
} as const;
export type RefusalCode = keyof typeof REFUSAL_CODES;

/** The ApplicationFailure type every refusal carries; the code rides in `details[0]`. */
export const REFUSAL_FAILURE_TYPE = 'ActionReviewRefusal';

export function isRefusalCode(value: unknown): value is RefusalCode {
  return typeof value === 'string' && Object.hasOwn(REFUSAL_CODES, value);
}

export interface Refusal {
  code: RefusalCode;
  message: string;
}

/** Every Action Review code on the wire (the refusals above and the execution outcomes); name = value. */
export const ActionReviewCodes = {
  person_only: 'person_only',
  already_decided: 'already_decided',
  decision_context_mismatch: 'decision_context_mismatch',
  not_approved: 'not_approved',
  execution_origin_required: 'execution_origin_required',
  not_reconciliation_required: 'not_reconciliation_required',
  /** Execution refusal reasons on approval of a self-applying action (spec, Errors). */
  claim_lost: 'claim_lost',
  outcome_not_recorded: 'outcome_not_recorded',
  /** 409: a statement stored by reference cannot be rejoined; the proposal may still be rejected (spec, Errors). */
  proposal_text_unavailable: 'proposal_text_unavailable',
  /** A proposed command outside the allowed list (create). */
  command_not_allowed: 'command_not_allowed',
  /** 409: a create's Idempotency-Key already named a different proposal of the caller's. */
  idempotency_key_reused: 'idempotency_key_reused',
  /** Why an executor did not apply an effect (`notApplied`, the outcome's `reason`). */
  invalid_payload: 'invalid_payload',
  temporal_unavailable: 'temporal_unavailable',
  command_not_started: 'command_not_started',
  crm_approval_missing: 'crm_approval_missing',
  records_unreadable: 'records_unreadable',
  crm_unreachable: 'crm_unreachable',
  survivor_update_refused: 'survivor_update_refused',
  merge_refused: 'merge_refused',
  source_not_found: 'source_not_found',
  source_credentials_missing: 'source_credentials_missing',
  git_failed: 'git_failed',
  interrupted: 'interrupted',
  push_refused: 'push_refused',
} as const;
export type ActionReviewCode = (typeof ActionReviewCodes)[keyof typeof ActionReviewCodes];
