// The worker's workflow entry point: every lifecycle is re-exported here.
export { echoWorkflow } from './echo.js';
export { actionReviewProposalWorkflow } from './action-review.js';
export { actionReviewHandbackSweepWorkflow, actionReviewHandbackWorkflow } from './handback.js';
export { threadWorkflow } from './thread.js';
export { crmMergeApprovalWorkflow } from './crm-merge.js';
export { secretResealWorkflow } from './secret-reseal.js';
export { embeddingReindexWorkflow } from './embedding-reindex.js';
export { sourceSyncWorkflow } from './source-sync.js';
export { etlRunWorkflow } from './etl-run.js';
export { sourceDeleteWorkflow } from './source-delete.js';
export { managedSourceAutoSyncWorkflow } from './managed-auto-sync.js';
export { rechunkWorkflow } from './rechunk.js';
export { ingestWorkflow } from './ingest.js';
export { desktopDiagnosticsWorkflow } from './desktop-diagnostics.js';
export { codeAgentRunWorkflow } from './code-agent.js';
export { missionWorkflow } from './mission.js';
export { trackerPollWorkflow } from './tracker-poll.js';
export { demoVersionWorkflow, demoRunWorkflow } from './demo-version.js';
