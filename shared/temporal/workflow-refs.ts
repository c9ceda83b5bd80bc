import type { ProposalSnapshot } from '../../workflows/action-review-definitions.js';
import type { BlueprintHiddenPurgeResult } from '../../workflows/blueprint-hidden-purge-definitions.js';
import type { BlueprintRenameInput, BlueprintRenameResult } from '../../workflows/blueprint-rename-definitions.js';
import type { BlueprintWipResult, BlueprintWipWorkflowInput } from '../../workflows/blueprint-wip-definitions.js';
import type { CodeAgentRunInput } from '../../workflows/code-agent-definitions.js';
import type { CrmMergeState, CrmMergeWorkflowInput } from '../../workflows/crm-merge-definitions.js';
import type {
  DemoRunInput,
  DemoRunStatus,
  DemoVersionInput,
  DemoVersionStatus,
} from '../../workflows/demo-version-definitions.js';
import type { AutoDiagnosticsOutcome } from '../../workflows/desktop-diagnostics-definitions.js';
import type { EchoInput, EchoResult } from '../../workflows/echo-definitions.js';
import type { EmbeddingReindexInput, EmbeddingReindexResult } from '../../workflows/embedding-reindex-definitions.js';
import type { EtlRunInput } from '../../workflows/etl-run-definitions.js';
import type { FlowRunInput } from '../../workflows/flow-run-definitions.js';
import type {
  HandbackInput,
  HandbackResult,
  HandbackSweepInput,
  HandbackSweepResult,
} from '../../workflows/handback-definitions.js';
import type { IngestInput, IngestResult } from '../../workflows/ingest-definitions.js';
import type {
  AutoSyncInput,
  AutoSyncSummary,
  SourceDeleteInput,
  SourceDeleteResult,
} from '../../workflows/managed-source-lifecycle-definitions.js';
import type { MissionInput } from '../../workflows/mission-definitions.js';
import type { RechunkInput, RechunkResult } from '../../workflows/rechunk-definitions.js';
import type { SecretResealInput, SecretResealResult } from '../../workflows/secret-reseal-definitions.js';
import type { SourceSyncInput, SourceSyncResult } from '../../workflows/source-sync-definitions.js';
import type { ThreadWorkflowInput } from '../../workflows/thread-definitions.js';
import type { TicketRcaInput, TicketRcaState } from '../../workflows/ticket-rca-definitions.js';
import type { TrackerPollInput, TrackerPollResult } from '../../workflows/tracker-poll-definitions.js';
import type { VectorIndexBuildInput, VectorIndexBuildResult } from '../../workflows/vector-index-build-definitions.js';
import type { ProposalWorkflowInput } from '../action-review/types.js';
import type { CodeAgentRunStatus } from '../code-agent/runs.js';
import type { EtlRunStatus } from '../etl/runs.js';
import type { FlowRunStatus } from '../flows/definition.js';

/**
 * Every workflow type the worker's entry point (`workflows/index.ts`) exports, with its signature,
 * built from the `*-definitions.ts` modules only: typing a start loads no workflow code, not even
 * as a type, so nothing here leads back into the workflows (no import cycle through the activities
 * they type). tests/unit/workflow-refs.test.ts checks this table equals the entry point's exports.
 */
export interface Workflows {
  echoWorkflow: (input: EchoInput) => Promise<EchoResult>;
  actionReviewProposalWorkflow: (input: ProposalWorkflowInput) => Promise<ProposalSnapshot>;
  actionReviewHandbackWorkflow: (input: HandbackInput) => Promise<HandbackResult>;
  actionReviewHandbackSweepWorkflow: (input?: HandbackSweepInput) => Promise<HandbackSweepResult>;
  threadWorkflow: (input: ThreadWorkflowInput) => Promise<void>;
  crmMergeApprovalWorkflow: (input: CrmMergeWorkflowInput) => Promise<CrmMergeState>;
  secretResealWorkflow: (input: SecretResealInput) => Promise<SecretResealResult>;
  embeddingReindexWorkflow: (input: EmbeddingReindexInput) => Promise<EmbeddingReindexResult>;
  sourceSyncWorkflow: (input: SourceSyncInput) => Promise<SourceSyncResult>;
  etlRunWorkflow: (input: EtlRunInput) => Promise<EtlRunStatus>;
  flowRunWorkflow: (input: FlowRunInput) => Promise<FlowRunStatus>;
  sourceDeleteWorkflow: (input: SourceDeleteInput) => Promise<SourceDeleteResult>;
  managedSourceAutoSyncWorkflow: (input?: AutoSyncInput) => Promise<AutoSyncSummary>;
  rechunkWorkflow: (input: RechunkInput) => Promise<RechunkResult>;
  vectorIndexBuildWorkflow: (input: VectorIndexBuildInput) => Promise<VectorIndexBuildResult>;
  ingestWorkflow: (input: IngestInput) => Promise<IngestResult>;
  desktopDiagnosticsWorkflow: () => Promise<AutoDiagnosticsOutcome>;
  codeAgentRunWorkflow: (input: CodeAgentRunInput) => Promise<CodeAgentRunStatus>;
  missionWorkflow: (input: MissionInput) => Promise<void>;
  trackerPollWorkflow: (input: TrackerPollInput) => Promise<TrackerPollResult>;
  demoVersionWorkflow: (input: DemoVersionInput) => Promise<DemoVersionStatus>;
  demoRunWorkflow: (input: DemoRunInput) => Promise<DemoRunStatus>;
  ticketRcaWorkflow: (input: TicketRcaInput) => Promise<TicketRcaState | 'cancelled'>;
  blueprintRenameWorkflow: (input: BlueprintRenameInput) => Promise<BlueprintRenameResult>;
  blueprintWipSessionWorkflow: (input: BlueprintWipWorkflowInput) => Promise<BlueprintWipResult>;
  blueprintHiddenPurgeWorkflow: () => Promise<BlueprintHiddenPurgeResult>;
}
export type WorkflowName = keyof Workflows;

/**
 * Starting a workflow by its type, not by an unchecked string. `workflowRef('echoWorkflow')` is,
 * to the compiler, the signature of the workflow function exported from `workflows/index.ts`, so the
 * client checks `args` and the result against it and the name against the worker's entry point. At
 * run time it is only the type name (the client takes a string or a function alike), so callers
 * (the API, activities, benchmarks) never load workflow code: the imports above are type-only.
 *
 *   client.workflow.start(workflowRef('echoWorkflow'), { args: [input], ... })
 *   new WithStartWorkflowOperation(workflowRef('threadWorkflow'), { args: [input], ... })
 */
export function workflowRef<N extends WorkflowName>(name: N): Workflows[N] {
  return name as unknown as Workflows[N];
}
