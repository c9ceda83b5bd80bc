// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * The action types Action Review governs: the spec's list ("Action Review proposal", nine types) and,
 * kept beside it, the platform's own (`PLATFORM_ACTION_TYPES`). Workflow-safe: plain data only, so the
 * proposal workflow can import it.
 */
export const SPEC_ACTION_TYPES = [
  'crm.merge.v1',
  'prover.request_finding_evidence.v1',
  'prover.approve_view_test_cases.v1',
  'learning.adopt.v1',
  'local_cli.run.v1',
  'prover.approve_disposition_package.v1',
  'prover.approve_composite_bundle.v1',
  'prover.decide_improvement_docket_entry.v1',
  'ticket.write.v1',
] as const;

/**
 * Action types kept beside the spec's list (issue 31 item 9, decided): an agent that starts a coding
 * agent (`code_agent.start.v1`, `START_CODE_AGENT`) or opens a pull request on a knowledge-base
 * repository (`kb.pull_request.v1`, `open_kb_pull_request`) writes to a repository outside the
 * platform, so a person decides each one.
 */
export const PLATFORM_ACTION_TYPES = ['code_agent.start.v1', 'kb.pull_request.v1'] as const;

export const ACTION_TYPES = [...SPEC_ACTION_TYPES, ...PLATFORM_ACTION_TYPES] as const;

/** How the published documents (OpenAPI, the `action_review` tool) describe an `action_type`. */
export const ACTION_TYPE_DESCRIPTION =
  "The governed action: one of the spec's nine action types, or one of the two kept beside them, " +
  '`code_agent.start.v1` (an agent starts a coding agent, `START_CODE_AGENT`) and `kb.pull_request.v1` ' +
  '(an agent opens a knowledge-base pull request, `open_kb_pull_request`): agents that start coding agents ' +
  'or open pull requests are governed by a person.';
export type ActionType = (typeof ACTION_TYPES)[number];

/** For these, approving is the action: approve also applies the change in the same request. */
const SELF_APPLYING: ReadonlySet<ActionType> = new Set([
  'prover.approve_view_test_cases.v1',
  'learning.adopt.v1',
  'local_cli.run.v1',
]);

export function approvingIsTheAction(actionType: ActionType): boolean {
  return SELF_APPLYING.has(actionType);
}

export function isActionType(value: string): value is ActionType {
  return (ACTION_TYPES as readonly string[]).includes(value);
}
