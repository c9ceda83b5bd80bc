/**
 * Action Review's overhead: one proposal's whole lifecycle (create → approve → execute to a final
 * status) through the HTTP API versus the same workflow Updates sent by a bare Temporal client.
 *
 * The action type is `prover.request_finding_evidence.v1`: an internal type whose executor writes
 * one row to the platform's own database (no external system, no fake server), and not a
 * self-applying one, so approve and execute are two separate Updates as for most types.
 *
 * The bare path sends exactly what the API sends (`shared/action-review/create.ts`,
 * `api/routes/action-review-decisions.ts`, `shared/action-review/execute.ts`): update-with-start of
 * `created` with the same workflow input, search attributes and memo, then `approve` and `execute`
 * with the caller the API would build for the local admin (AUTH_PROVIDER=none). It leaves out only
 * the API's own work: HTTP, authentication (and its sign-in write), validation, visibility checks
 * and the ORM read-backs that build each response. The projection to PostgreSQL is done by the
 * workflow's activities on both paths.
 */
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { LOCAL_ADMIN_ID } from '../api/auth/authenticate.js';
import { proposalDigest } from '../shared/action-review/digest.js';
import { PayloadSchemas } from '../shared/action-review/payloads.js';
import type { ProposalRecord, ProposalWorkflowInput } from '../shared/action-review/types.js';
import type { PrincipalRef } from '../shared/auth/principal.js';
import type { AppConfig } from '../shared/config.js';
import { SearchAttributes } from '../shared/temporal/search-attributes.js';
import {
  approveUpdate,
  createdUpdate,
  executeUpdate,
  proposalWorkflowId,
} from '../workflows/action-review-definitions.js';
import { measure, measurePair, report } from './lib/measure.js';
import type { BenchStack } from './lib/stack.js';
import { workflowRef } from '../shared/temporal/workflow-refs.js';
import { post } from './lib/post.js';

const ACTION_TYPE = 'prover.request_finding_evidence.v1' as const;
const EXPECTED_EFFECT = 'The finding gets an evidence request.';
const payloadFor = (tag: string) => ({
  finding_id: `finding-${tag}`,
  evidence_request: 'Attach the query output behind this finding.',
});

/** The principal the API resolves for every request with AUTH_PROVIDER=none, as workflows record it. */
const localAdmin = (config: AppConfig): PrincipalRef => ({
  kind: 'person',
  id: LOCAL_ADMIN_ID,
  tenant: config.auth.deploymentTenant,
  label: 'Local admin',
  credential: 'auth_disabled',
});

/** create → approve → execute with the client calls the API makes, and nothing else. */
async function bareLifecycle(client: Client, config: AppConfig, tag: string): Promise<void> {
  const caller = localAdmin(config);
  const payload = PayloadSchemas[ACTION_TYPE].parse(payloadFor(tag));
  const proposalId = randomUUID();
  const record: ProposalRecord = {
    proposalId,
    tenant: caller.tenant,
    actionType: ACTION_TYPE,
    payload,
    payloadDigest: proposalDigest({ actionType: ACTION_TYPE, payload, expectedEffect: EXPECTED_EFFECT, subject: null }),
    expectedEffect: EXPECTED_EFFECT,
    requestedStatement: null,
    requester: caller,
    requesterKind: caller.kind,
    botId: null,
    threadId: null,
    subject: null,
    executionOrigin: 'any',
    createdAt: new Date().toISOString(),
  };
  const { actionReview } = config;
  const input: ProposalWorkflowInput = {
    record,
    runtime: {
      effectTimeoutSeconds: actionReview.effectTimeoutSeconds,
      effectHeartbeatSeconds: actionReview.effectHeartbeatSeconds,
      handbackMaxAttempts: actionReview.handbackMaxAttempts,
    },
  };
  await client.workflow.executeUpdateWithStart(createdUpdate, {
    startWorkflowOperation: new WithStartWorkflowOperation(workflowRef('actionReviewProposalWorkflow'), {
      taskQueue: config.temporal.taskQueue,
      workflowId: proposalWorkflowId(proposalId),
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      typedSearchAttributes: [
        { key: SearchAttributes.tenant, value: caller.tenant },
        { key: SearchAttributes.resourceId, value: proposalId },
        { key: SearchAttributes.proposalStatus, value: 'requested' },
        { key: SearchAttributes.actionType, value: ACTION_TYPE },
      ],
      memo: {
        action_type: ACTION_TYPE,
        requester: { kind: caller.kind, id: caller.id, label: caller.label },
        bot_id: null,
        thread_id: null,
      },
    }),
  });
  const handle = client.workflow.getHandle(proposalWorkflowId(proposalId));
  await handle.executeUpdate(approveUpdate, {
    args: [{ caller, reason: null, expectedVersion: null, expectedPayloadDigest: null }],
  });
  const outcome = await handle.executeUpdate(executeUpdate, {
    args: [{ caller, origin: { surface: 'api', threadId: null } }],
  });
  if (outcome.finalStatus !== 'executed')
    throw new Error(`bare lifecycle ended ${outcome.finalStatus}: ${outcome.refusalDetail ?? outcome.errorDetail}`);
}

/** create → approve → execute over HTTP, as a client of the API would. */
async function apiLifecycle(baseUrl: string, tag: string): Promise<void> {
  const created = await post(`${baseUrl}/api/action-review/proposals`, {
    action_type: ACTION_TYPE,
    payload: payloadFor(tag),
    expected_effect: EXPECTED_EFFECT,
  });
  const proposalUrl = `${baseUrl}/api/action-review/proposals/${created.data.proposal_id as string}`;
  await post(`${proposalUrl}/approve`, {});
  const executed = await post(`${proposalUrl}/execute`);
  if (executed.final_status !== 'executed')
    throw new Error(`API lifecycle ended ${executed.final_status}: ${JSON.stringify(executed)}`);
}

export async function benchActionReview(stack: BenchStack, count: number, concurrency: number): Promise<string> {
  const run = randomUUID().slice(0, 8);
  // Warm both paths (workflow and update code paths, the API's routes, pool connections).
  await measure('warm-up bare', 10, 4, (i) => bareLifecycle(stack.bareClient, stack.config, `warm-bare-${run}-${i}`));
  await measure('warm-up API', 10, 4, (i) => apiLifecycle(stack.api.url, `warm-api-${run}-${i}`));
  const [api, bare] = await measurePair(
    { label: 'HTTP API', op: (i) => apiLifecycle(stack.api.url, `api-${run}-${i}`) },
    { label: 'bare Temporal client', op: (i) => bareLifecycle(stack.bareClient, stack.config, `bare-${run}-${i}`) },
    count,
    concurrency,
  );
  return report(
    `Action Review lifecycle (create → approve → execute, ${ACTION_TYPE}), ${count} proposals at concurrency ${concurrency}`,
    api,
    bare,
  );
}
