import type { EntityManager } from '@mikro-orm/postgresql';
import type { ActionType } from './action-types.js';
import type { Payload } from './payloads.js';
import type { Principal } from '../auth/principal.js';
import { ConversationThreadEntity } from '../db/entities/index.js';
import { sql, sqlOne, textArray } from '../db/sql.js';
import { NotFoundError } from '../errors.js';

/**
 * Prover subjects: what a `prover.*` proposal decides about (a finding, a view, a disposition package,
 * a composite bundle, an improvement-docket entry). The first proposal naming one registers it: owned
 * by its requester when a person raised it, else by the person whose conversation the agent asked in,
 * and tied to the requesting agent (its bot). Only they see it (spec: "subject must be visible for
 * Prover requests"; a hidden subject answers 404, like an unknown one), and they read its state: the
 * decisions Action Review executed on it, in `prover_decisions`.
 */

export const PROVER_KINDS = ['finding', 'view', 'disposition_package', 'composite_bundle', 'docket_entry'] as const;
export type ProverKind = (typeof PROVER_KINDS)[number];
type ProverType = Extract<ActionType, `prover.${string}`>;

/** Each Prover action type, its subject kind, and the payload field naming the subject. */
export const PROVER_SUBJECTS = {
  'prover.request_finding_evidence.v1': {
    kind: 'finding',
    of: (p: Payload<'prover.request_finding_evidence.v1'>) => p.finding_id,
  },
  'prover.approve_view_test_cases.v1': {
    kind: 'view',
    of: (p: Payload<'prover.approve_view_test_cases.v1'>) => p.view_id,
  },
  'prover.approve_disposition_package.v1': {
    kind: 'disposition_package',
    of: (p: Payload<'prover.approve_disposition_package.v1'>) => p.package_id,
  },
  'prover.approve_composite_bundle.v1': {
    kind: 'composite_bundle',
    of: (p: Payload<'prover.approve_composite_bundle.v1'>) => p.bundle_id,
  },
  'prover.decide_improvement_docket_entry.v1': {
    kind: 'docket_entry',
    of: (p: Payload<'prover.decide_improvement_docket_entry.v1'>) => p.entry_id,
  },
} as const satisfies { [T in ProverType]: { kind: ProverKind; of: (p: Payload<T>) => string } };

export interface ProverSubjectRef {
  kind: ProverKind;
  id: string;
}

const isProverType = (t: ActionType): t is ProverType => t in PROVER_SUBJECTS;

/** The Prover subject a proposal's (parsed) payload names, or null for other action types. */
export function proverSubjectOf(actionType: ActionType, payload: unknown): ProverSubjectRef | null {
  if (!isProverType(actionType)) return null;
  const entry = PROVER_SUBJECTS[actionType];
  return { kind: entry.kind, id: (entry.of as (p: unknown) => string)(payload) };
}

interface SubjectRow {
  tenant: string;
  kind: ProverKind;
  subject_id: string;
  owner_id: string | null;
  bot_id: string | null;
  created_at: Date | string;
}

const findRow = (em: EntityManager, tenant: string, s: ProverSubjectRef) =>
  sqlOne<SubjectRow>(em, `select * from prover_subjects where tenant = ? and kind = ? and subject_id = ?`, [
    tenant,
    s.kind,
    s.id,
  ]);

/** Its owner (a person) or its requesting agent (by bot). */
const visibleTo = (row: SubjectRow, p: Principal) =>
  p.kind === 'agent' ? !!p.botId && row.bot_id === p.botId : row.owner_id === p.id;

const hidden = (s: ProverSubjectRef) =>
  new NotFoundError(`No Prover ${s.kind.replace(/_/g, ' ')} ${s.id}.`, { subject_kind: s.kind, subject_id: s.id });

/** Refuses (404) a Prover request whose subject exists and is not the caller's to see; writes nothing. */
export async function checkProverSubject(em: EntityManager, principal: Principal, s: ProverSubjectRef): Promise<void> {
  const row = await findRow(em, principal.tenant, s);
  if (row && !visibleTo(row, principal)) throw hidden(s);
}

/**
 * Registers the subject on its first request (owner and requesting agent as above), then checks again:
 * of two first requests at once from different callers, the one that lost the insert is refused.
 */
export async function registerProverSubject(
  em: EntityManager,
  principal: Principal,
  s: ProverSubjectRef,
  context: { botId: string | null; threadId: string | null; proposalId: string },
): Promise<void> {
  let owner: string | null = principal.kind === 'agent' ? null : principal.id;
  if (principal.kind === 'agent' && context.threadId)
    owner = (await em.findOne(ConversationThreadEntity, { id: context.threadId }))?.ownerId ?? null;
  const bot = principal.kind === 'agent' ? (principal.botId ?? null) : context.botId;
  await sql(
    em,
    `insert into prover_subjects (tenant, kind, subject_id, owner_id, bot_id, created_by_proposal)
     values (?, ?, ?, ?, ?, ?) on conflict do nothing`,
    [principal.tenant, s.kind, s.id, owner, bot, context.proposalId],
  );
  const row = await findRow(em, principal.tenant, s);
  if (!row || !visibleTo(row, principal)) throw hidden(s);
}

interface DecisionRow {
  proposal_id: string;
  action_type: ProverType;
  decision: Record<string, unknown>;
  decided_by: string;
  decided_at: Date | string;
}

const iso = (d: Date | string) => (d instanceof Date ? d : new Date(d)).toISOString();
const DOCKET_STATUS = { accept: 'accepted', decline: 'declined', defer: 'deferred' } as const;

/** What the executed decisions mean for the subject, by kind (the latest decision wins where one replaces another). */
function stateOf(kind: ProverKind, decisions: DecisionRow[]): { status: string; state: Record<string, unknown> } {
  const last = decisions.at(-1)?.decision;
  if (!last) return { status: 'open', state: {} };
  switch (kind) {
    case 'finding':
      return {
        status: 'evidence_requested',
        state: {
          evidence_requests: decisions.map((d) => ({
            evidence_request: d.decision.evidence_request,
            proposal_id: d.proposal_id,
            requested_at: iso(d.decided_at),
          })),
        },
      };
    case 'view':
      return {
        status: 'test_cases_approved',
        state: {
          approved_test_case_ids: [...new Set(decisions.flatMap((d) => d.decision.test_case_ids as string[]))].sort(),
        },
      };
    case 'disposition_package':
      return { status: 'disposition_approved', state: { disposition: last.disposition } };
    case 'composite_bundle':
      return { status: 'bundle_approved', state: { member_ids: last.member_ids } };
    case 'docket_entry':
      return {
        status: DOCKET_STATUS[last.decision as keyof typeof DOCKET_STATUS],
        state: { decision: last.decision, note: last.note ?? null },
      };
  }
}

/** A Prover subject's state, for its owner and its requesting agent (anyone else: 404, as unknown). */
export async function readProverSubject(em: EntityManager, principal: Principal, s: ProverSubjectRef) {
  const row = await findRow(em, principal.tenant, s);
  if (!row || !visibleTo(row, principal)) throw hidden(s);
  const types = Object.entries(PROVER_SUBJECTS)
    .filter(([, v]) => v.kind === s.kind)
    .map(([t]) => t);
  const decisions = await sql<DecisionRow>(
    em,
    `select proposal_id, action_type, decision, decided_by, decided_at from prover_decisions
      where tenant = ? and subject_id = ? and action_type = any(?::text[]) order by decided_at, proposal_id`,
    [principal.tenant, s.id, textArray(types)],
  );
  return {
    kind: s.kind,
    subject_id: s.id,
    owner_id: row.owner_id,
    bot_id: row.bot_id,
    created_at: iso(row.created_at),
    ...stateOf(s.kind, decisions),
    decisions: decisions.map((d) => ({
      proposal_id: d.proposal_id,
      action_type: d.action_type,
      decision: d.decision,
      decided_by: d.decided_by,
      decided_at: iso(d.decided_at),
    })),
  };
}
