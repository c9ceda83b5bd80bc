// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Error codes of the hosted demo: demo versions, the presenter vignettes, hosted AI keys, the demo owner
 * and hosted identities.
 * @error-codes: a family module (docs/architecture.md "Error codes"); the wire string is the key, in the spec's casing.
 */
export const DemoCodes = {
  DEMO_VERSION_NOT_READY: 'DEMO_VERSION_NOT_READY',
  DEMO_VERSION_NO_AGENT: 'DEMO_VERSION_NO_AGENT',
  presenter_session_reset: 'presenter_session_reset',
  CODE_AGENT_RUN_FAILED: 'CODE_AGENT_RUN_FAILED',
  TICKET_RCA_SUPERSEDED: 'TICKET_RCA_SUPERSEDED',
  TICKET_COMMENT_FAILED: 'TICKET_COMMENT_FAILED',
  hosted_ai_rate_limited: 'hosted_ai_rate_limited',
  hosted_ai_not_provisioned: 'hosted_ai_not_provisioned',
  not_demo_owner: 'not_demo_owner',
  profile_incomplete: 'profile_incomplete',
  DEMO_OWNER_EXISTS: 'DEMO_OWNER_EXISTS',
  HOSTED_IDENTITY_ALREADY_BOUND: 'HOSTED_IDENTITY_ALREADY_BOUND',
  HOSTED_IDENTITY_OPERATION_REUSED: 'HOSTED_IDENTITY_OPERATION_REUSED',
  HOSTED_INITIAL_ADMIN_EXISTS: 'HOSTED_INITIAL_ADMIN_EXISTS',
  // prepare and reset failures of the ticket vignette (`success` false with `error.code`; spec, Errors)
  TICKETING_SETUP_REQUIRED: 'TICKETING_SETUP_REQUIRED',
  TICKETING_ISSUE_TYPE_UNAVAILABLE: 'TICKETING_ISSUE_TYPE_UNAVAILABLE',
  CODING_AGENT_UNSUPPORTED: 'CODING_AGENT_UNSUPPORTED',
  BUILD_PROVIDER_BUSY: 'BUILD_PROVIDER_BUSY',
  DEMO_VERSION_BINDING_INVALID: 'DEMO_VERSION_BINDING_INVALID',
  DEMO_VERSION_PROFILE_UNAVAILABLE: 'DEMO_VERSION_PROFILE_UNAVAILABLE',
} as const;
export type DemoCode = (typeof DemoCodes)[keyof typeof DemoCodes];
