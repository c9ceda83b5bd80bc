import { createHash, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { placeStatement } from './statements.js';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { ActionType } from './action-types.js';
import { proposalDigest } from './digest.js';
import { PayloadSchemas, type Payload } from './payloads.js';
import { checkProverSubject, proverSubjectOf, registerProverSubject } from './prover-subjects.js';
import type { ExecutionOrigin, ProposalRecord, ProposalSubject, ProposalWorkflowInput } from './types.js';
import { principalRef, type Principal } from '../auth/principal.js';
import { ConversationThreadEntity, ProposalRowEntity, type ProposalRow } from '../db/entities/index.js';
import { BadRequestError, ConflictError, NotFoundError, PayloadTooLargeError } from '../errors.js';
import { parseInput } from '../validation.js';
import { SearchAttributes } from '../temporal/search-attributes.js';
import { createdUpdate, proposalWorkflowId } from '../../workflows/action-review-definitions.js';
import type { AppConfig } from '../config.js';
import type { AppDeps } from '../app-deps.js';
import { subjectProbes, THREAD_SUBJECT, viewerOf } from './subject-probes.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { sql } from '../db/sql.js';
import { ActionReviewCodes } from './refusals.js';

export interface CreateProposalInput {
  actionType: ActionType;
  payload: unknown;
  expectedEffect: string;
  requestedStatement: string | null;
  botId: string | null;
  threadId: string | null;
  subject: ProposalSubject | null;
  executionOrigin: ExecutionOrigin | null;
  /** Set by retryable callers (an agent turn's tool call): a retry answers the proposal already created. */
  proposalId?: string;
}

function parsePayload(actionType: ActionType, payload: unknown): unknown {
  return parseInput(PayloadSchemas[actionType], payload, ['body', 'payload'], `payload for ${actionType}`);
}

/**
 * A local command off the deployment's allow-list could never run: refused at creation (400
 * `command_not_allowed`), so no person is asked to approve what would only fail afterwards.
 */
function checkRunnable(config: AppConfig, actionType: ActionType, payload: unknown): void {
  if (actionType !== 'local_cli.run.v1') return;
  const { command } = payload as { command: string };
  const allowed = config.actionReview.localCliAllowedCommands;
  if (allowed.includes(command)) return;
  throw new BadRequestError(
    `"${command}" is not on this deployment's allow-list of local commands (LOCAL_CLI_ALLOWED_COMMANDS${
      allowed.length ? `: ${allowed.join(', ')}` : ', empty'
    }); nothing was proposed.`,
    {
      code: ActionReviewCodes.command_not_allowed,
      command,
      allowed_commands: allowed,
      fields: [{ field: 'body.payload.command', message: 'not on the allow-list' }],
    },
  );
}

/**
 * A learning raised for an agent's bot (by the agent itself, or by a person naming the bot) is adopted
 * for that agent unless the payload names the agents; the approver sees the list in the payload.
 */
function withDefaults(input: CreateProposalInput, payload: unknown): unknown {
  if (input.actionType !== 'learning.adopt.v1' || !input.botId) return payload;
  const learning = payload as Payload<'learning.adopt.v1'>;
  return learning.agent_ids ? learning : { ...learning, agent_ids: [input.botId] };
}

/**
 * The conversation a proposal is raised in must be one the requester can see. An agent's own
 * thread (from its token) is registered on first use, shared in its tenant; a person's new
 * thread is registered as theirs.
 */
async function ensureThread(
  em: EntityManager,
  principal: Principal,
  threadId: string,
  botId: string | null,
): Promise<void> {
  const thread = await em.findOne(ConversationThreadEntity, { id: threadId });
  if (!thread) {
    const owned = principal.kind === 'person';
    await sql(
      em,
      `insert into conversation_threads (id, tenant, bot_id, owner_id, visibility) values (?, ?, ?, ?, ?) on conflict (id) do nothing`,
      [threadId, principal.tenant, botId, owned ? principal.id : null, owned ? 'private' : 'tenant'],
    );
    return;
  }
  const mine =
    principal.kind === 'agent'
      ? thread.botId === principal.botId
      : thread.ownerId === principal.id || thread.visibility === 'tenant';
  if (thread.tenant !== principal.tenant || !mine) throw new NotFoundError(`No conversation thread ${threadId}.`);
}

async function checkSubject(em: EntityManager, principal: Principal, subject: ProposalSubject): Promise<void> {
  const probe = subjectProbes(em)[subject.kind];
  if (!probe)
    throw new BadRequestError(`Subject kind "${subject.kind}" has no visibility handler.`, {
      fields: [{ field: 'body.subject.kind', message: 'unknown subject kind' }],
    });
  if (subject.kind === THREAD_SUBJECT && principal.kind === 'agent') {
    // An agent may name only the thread its token is bound to.
    if (subject.id !== principal.threadId) throw new NotFoundError(`No ${subject.kind} ${subject.id}.`);
    return;
  }
  if (!(await probe(subject, viewerOf(principal)))) throw new NotFoundError(`No ${subject.kind} ${subject.id}.`);
}

/**
 * The proposal id an idempotency key names: a UUID (version 8, RFC 9562) from SHA-256 of the caller's tenant,
 * kind and id and the key, so the same caller's retry names the same proposal and another caller's key never does.
 */
export function idempotentProposalId(principal: Principal, key: string): string {
  const h = createHash('sha256')
    .update(['action-review idempotency key', principal.tenant, principal.kind, principal.id, key].join('\0'))
    .digest();
  h[6] = (h[6]! & 0x0f) | 0x80; // version 8
  h[8] = (h[8]! & 0x3f) | 0x80; // variant 10
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Validates, sizes and starts one proposal workflow; answers once its creation is in PostgreSQL. */
export async function createProposal(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  input: CreateProposalInput,
): Promise<ProposalRow> {
  return (await createOrReplay(deps, em, principal, input, null)).row;
}

/**
 * `createProposal` under a caller's idempotency key (REST `Idempotency-Key`): the first request creates the
 * proposal whose id the key names (`idempotentProposalId`); a repeat of the same create (the same action type,
 * payload, expected effect, subject, thread, bot, statement and execution origin: `claimKey`) answers that
 * proposal again (`replayed`), also while the first request is still creating it; the key used with a different
 * create is refused (409 `idempotency_key_reused`) and writes nothing.
 */
export async function createProposalIdempotently(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  input: CreateProposalInput,
  key: string,
): Promise<{ row: ProposalRow; replayed: boolean }> {
  return createOrReplay(deps, em, principal, { ...input, proposalId: idempotentProposalId(principal, key) }, key);
}

function keyReused(proposalId: string): ConflictError {
  return new ConflictError(
    `This Idempotency-Key was used for another proposal (${proposalId}); send a new key for a different proposal.`,
    { code: ActionReviewCodes.idempotency_key_reused, proposal_id: proposalId },
  );
}

async function createOrReplay(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  input: CreateProposalInput,
  key: string | null,
): Promise<{ row: ProposalRow; replayed: boolean }> {
  const payload = withDefaults(input, parsePayload(input.actionType, input.payload));
  checkRunnable(deps.config, input.actionType, payload);
  if (input.subject) await checkSubject(em, principal, input.subject);
  const prover = proverSubjectOf(input.actionType, payload);
  if (prover) await checkProverSubject(em, principal, prover);
  const proposalId = input.proposalId ?? randomUUID();
  const payloadDigest = proposalDigest({
    actionType: input.actionType,
    payload,
    expectedEffect: input.expectedEffect,
    subject: input.subject,
  });
  const record: ProposalRecord = {
    proposalId,
    tenant: principal.tenant,
    actionType: input.actionType,
    payload,
    payloadDigest,
    expectedEffect: input.expectedEffect,
    requestedStatement: input.requestedStatement,
    requester: principalRef(principal),
    requesterKind: principal.kind,
    botId: input.botId,
    threadId: input.threadId,
    subject: input.subject,
    executionOrigin: input.executionOrigin ?? (input.threadId ? 'proposal_thread' : 'any'),
    createdAt: new Date().toISOString(),
  };
  const bytes = Buffer.byteLength(JSON.stringify(record));
  const limit = await deps.settings.get('action_review.max_proposal_bytes');
  if (bytes > limit)
    throw new PayloadTooLargeError(`The proposal is too large to store (${bytes} bytes; the limit is ${limit}).`, {
      limit_bytes: limit,
      size_bytes: bytes,
    });
  // The key is claimed for this create once it is known to be valid, before anything of it is written.
  if (key !== null) await claimKey(em, principal, proposalId, input, payloadDigest);
  if (input.proposalId) {
    const existing = await em.findOne(ProposalRowEntity, { proposalId, tenant: principal.tenant });
    if (existing) return { row: existing, replayed: true };
  }
  if (input.threadId) await ensureThread(em, principal, input.threadId, input.botId);
  if (prover) await registerProverSubject(em, principal, prover, { ...input, proposalId });
  // A long statement is stored once by reference; the record (and the workflow's history) names it.
  Object.assign(record, await placeStatement(em, record.requestedStatement));

  const { actionReview } = deps.config;
  const workflowInput: ProposalWorkflowInput = {
    record,
    runtime: {
      effectTimeoutSeconds: actionReview.effectTimeoutSeconds,
      effectHeartbeatSeconds: actionReview.effectHeartbeatSeconds,
      handbackMaxAttempts: actionReview.handbackMaxAttempts,
    },
  };
  await deps.temporal.workflow.executeUpdateWithStart(createdUpdate, {
    startWorkflowOperation: new WithStartWorkflowOperation(workflowRef('actionReviewProposalWorkflow'), {
      taskQueue: deps.config.temporal.taskQueue,
      workflowId: proposalWorkflowId(proposalId),
      args: [workflowInput],
      // A retried creation with the same id joins the running workflow instead of failing.
      workflowIdConflictPolicy: input.proposalId ? 'USE_EXISTING' : 'FAIL',
      typedSearchAttributes: [
        { key: SearchAttributes.tenant, value: principal.tenant },
        { key: SearchAttributes.resourceId, value: proposalId },
        { key: SearchAttributes.proposalStatus, value: 'requested' },
        { key: SearchAttributes.actionType, value: input.actionType },
      ],
      memo: {
        action_type: input.actionType,
        requester: { kind: principal.kind, id: principal.id, label: principal.displayName },
        bot_id: input.botId,
        thread_id: input.threadId,
      },
    }),
  });
  const row = await deps.orm.em.fork().findOneOrFail(ProposalRowEntity, { proposalId });
  // Started by a concurrent request with the same id (USE_EXISTING joined its workflow): the proposal it created
  // (the same one: the claimed key held the same create). Two requests stamped in the same millisecond both say
  // they created it.
  return { row, replayed: row.createdAt.toISOString() !== record.createdAt };
}

/**
 * Claims an idempotency key's proposal id for this create (`action_review_idempotency_keys`): the first claim
 * holds the digest of the whole create (the proposal's digest, and its thread, bot, statement and execution
 * origin); a later one with the same digest goes on (a retry: it answers, or joins, the proposal), one with
 * another digest is refused before it writes anything (409 `idempotency_key_reused`).
 */
async function claimKey(
  em: EntityManager,
  principal: Principal,
  proposalId: string,
  input: CreateProposalInput,
  payloadDigest: string,
): Promise<void> {
  const requestDigest = createHash('sha256')
    .update(
      JSON.stringify([payloadDigest, input.threadId, input.botId, input.requestedStatement, input.executionOrigin]),
    )
    .digest('hex');
  const claimed = await sql<{ request_digest: string }>(
    em,
    `insert into action_review_idempotency_keys (proposal_id, tenant, request_digest) values (?, ?, ?)
       on conflict (proposal_id) do nothing returning request_digest`,
    [proposalId, principal.tenant, requestDigest],
  );
  if (claimed.length) return;
  // Claimed before (read in a statement of its own: the insert's snapshot may predate a concurrent claim's commit).
  const [claim] = await sql<{ request_digest: string }>(
    em,
    'select request_digest from action_review_idempotency_keys where proposal_id = ?',
    [proposalId],
  );
  if (claim && claim.request_digest !== requestDigest) throw keyReused(proposalId);
}
