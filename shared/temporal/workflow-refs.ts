import type * as workflows from '../../workflows/index.js';

/**
 * Starting a workflow by its type, not by an unchecked string. `workflowRef('echoWorkflow')` is,
 * to the compiler, the workflow function exported from `workflows/index.ts`, so the client checks
 * `args` and the result against its signature and the name against the worker's entry point. At
 * run time it is only the type name (the client takes a string or a function alike), so callers
 * (the API, activities, benchmarks) never load workflow code: the import above is type-only.
 *
 *   client.workflow.start(workflowRef('echoWorkflow'), { args: [input], ... })
 *   new WithStartWorkflowOperation(workflowRef('threadWorkflow'), { args: [input], ... })
 */
export type Workflows = typeof workflows;
export type WorkflowName = keyof Workflows;

export function workflowRef<N extends WorkflowName>(name: N): Workflows[N] {
  return name as unknown as Workflows[N];
}
