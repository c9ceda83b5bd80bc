// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * The action types Action Review governs (spec, "Action Review proposal"). Workflow-safe: plain
 * data only, so the proposal workflow can import it.
 */
export const ACTION_TYPES = [
  'crm.merge.v1',
  'prover.request_finding_evidence.v1',
  'prover.approve_view_test_cases.v1',
  'learning.adopt.v1',
  'local_cli.run.v1',
  'prover.approve_disposition_package.v1',
  'prover.approve_composite_bundle.v1',
  'prover.decide_improvement_docket_entry.v1',
  'ticket.write.v1',
  'code_agent.start.v1',
  'kb.pull_request.v1',
] as const;
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
