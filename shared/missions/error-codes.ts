// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Error codes of missions and organizational projects, and the `reason_code` of a failed mission phase.
 * @error-codes: a family module (docs/architecture.md "Error codes"); the wire string is the key, in the spec's casing.
 */
export const MissionCodes = {
  PROJECT_ARCHIVED: 'PROJECT_ARCHIVED',
  PROJECT_NAME_TAKEN: 'PROJECT_NAME_TAKEN',
  PROJECT_NOT_EMPTY: 'PROJECT_NOT_EMPTY',
  APP_UNKNOWN: 'APP_UNKNOWN',
  mission_ended: 'mission_ended',
  invalid_transition: 'invalid_transition',
  question_set_answered: 'question_set_answered',
  unknown_question_set: 'unknown_question_set',
  bad_answers: 'bad_answers',
  unknown_agents: 'unknown_agents',
  ambiguous_agents: 'ambiguous_agents',
  blueprint_prompt_missing: 'blueprint_prompt_missing',
  // why a phase failed (`reason_code`)
  no_model_provider: 'no_model_provider',
  model_failed: 'model_failed',
  no_output: 'no_output',
  no_agent: 'no_agent',
  no_prompt: 'no_prompt',
  agent_not_found: 'agent_not_found',
} as const;
export type MissionCode = (typeof MissionCodes)[keyof typeof MissionCodes];
