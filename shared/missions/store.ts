/**
 * Mission projections (`projects`, `project_goals`, `project_questions`) and their append-only log
 * (`project_events`). Every change is one transaction: the project row is locked, the event gets the
 * next sequence number, and the projection changes with it. Rows are never edited in place except
 * their status columns (and the project's progress fields).
 */
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type {
  MissionEventInput,
  MissionPhase,
  MissionStatus,
  WaitingState,
} from '../../workflows/mission-definitions.js';
import { appendEvent, insertNote, type GoalRow } from './records-store.js';
import { sql } from '../db/sql.js';

/** Mission project ids: `prj_` + 32 lowercase hex. */
export const newProjectId = () => `prj_${randomBytes(16).toString('hex')}`;
export const PROJECT_ID_PATTERN = /^prj_[0-9a-f]{32}$/;

export interface ProjectRow {
  id: string;
  tenant: string;
  name: string;
  blueprint_name: string;
  blueprint_id: string;
  blueprint_commit: string;
  /** The saved version run (a versioned blueprint's production version); null for the working copy or a built-in. */
  blueprint_version_number: number | null;
  parameters: Record<string, unknown>;
  status: MissionStatus;
  waiting_state: WaitingState;
  closed_reason: string | null;
  requested_by: string;
  root_thread_id: string | null;
  agents: string[];
  blueprint_phase: string | null;
  phases_total: number;
  phases_done: number;
  progress: number;
  started_at: Date;
  updated_at: Date;
  closed_at: Date | null;
}

export interface QuestionRow {
  project_id: string;
  question_set_id: string;
  question_id: string;
  phase: string;
  position: number;
  priority: 'high' | 'normal' | 'low';
  category: string | null;
  content: string;
  expected_response_type: string | null;
  options: string[] | null;
  recommended: string | null;
  status: 'open' | 'answered';
  answer: string | null;
  answered_by: string | null;
  answered_at: Date | null;
}

/** A text array parameter (`?::text[]`): the driver is handed PostgreSQL's array literal, each element quoted. */
const textArray = (values: readonly string[]) =>
  `{${values.map((v) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`;

/** Creates the project row, its goals (planned) and the `created` event in one transaction. */
export async function insertProject(
  em: EntityManager,
  p: {
    id: string;
    tenant: string;
    name: string;
    blueprintName: string;
    blueprintId: string;
    blueprintCommit: string;
    blueprintVersion: number | null;
    parameters: Record<string, unknown>;
    requestedBy: string;
    phases: MissionPhase[];
  },
): Promise<ProjectRow> {
  return em.transactional(async (tx) => {
    const [row] = await sql<ProjectRow>(
      tx,
      `insert into projects (id, tenant, name, blueprint_name, blueprint_id, blueprint_commit, blueprint_version_number,
         parameters, status, requested_by, phases_total, blueprint_phase)
       values (?, ?, ?, ?, ?, ?, ?, ?::jsonb, 'running', ?, ?, ?) returning *`,
      [
        p.id,
        p.tenant,
        p.name,
        p.blueprintName,
        p.blueprintId,
        p.blueprintCommit,
        p.blueprintVersion,
        JSON.stringify(p.parameters),
        p.requestedBy,
        p.phases.length,
        p.phases[0]?.id ?? null,
      ],
    );
    let position = 0;
    for (const phase of p.phases)
      for (const g of phase.goals)
        await sql(
          tx,
          `insert into project_goals (project_id, id, phase, name, acceptance_criterion, status, position)
           values (?, ?, ?, ?, ?, 'planned', ?) on conflict do nothing`,
          [p.id, g.id, phase.id, g.name, g.acceptance_criterion, position++],
        );
    await appendEvent(tx, p.id, 'created', {
      blueprint_name: p.blueprintName,
      blueprint_commit: p.blueprintCommit,
      blueprint_version: p.blueprintVersion,
      requested_by: p.requestedBy,
    });
    return row!;
  });
}

/** Applies one mission event: the event row and its projection change, in one transaction. */
export async function applyMissionEvent(em: EntityManager, projectId: string, e: MissionEventInput): Promise<void> {
  await em.transactional(async (tx) => {
    const [locked] = await sql<{ id: string; requested_by: string }>(
      tx,
      'select id, requested_by from projects where id = ? for update',
      [projectId],
    );
    if (!locked) throw new Error(`project ${projectId} has no row`);
    switch (e.kind) {
      case 'phase_started':
        await sql(tx, 'update projects set blueprint_phase = ?, updated_at = now() where id = ?', [e.phase, projectId]);
        await sql(
          tx,
          `update project_goals set status = 'in_progress', updated_at = now() where project_id = ? and phase = ? and status = 'planned'`,
          [projectId, e.phase],
        );
        break;
      case 'thread_opened':
        await sql(
          tx,
          `update projects set agents = case when agents @> ?::jsonb then agents else agents || ?::jsonb end,
             root_thread_id = coalesce(root_thread_id, ?), updated_at = now() where id = ?`,
          [JSON.stringify([e.agent_id]), JSON.stringify([e.agent_id]), e.root ? e.thread_id : null, projectId],
        );
        break;
      case 'questions_opened':
        for (const [i, q] of e.questions.entries())
          await sql(
            tx,
            `insert into project_questions (project_id, question_set_id, question_id, phase, position, priority, category,
               content, expected_response_type, options, recommended, status)
             values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, 'open') on conflict do nothing`,
            [
              projectId,
              e.question_set_id,
              q.id,
              e.phase,
              i,
              q.priority,
              q.category,
              q.content,
              q.expected_response_type,
              q.options ? JSON.stringify(q.options) : null,
              q.recommended,
            ],
          );
        await sql(tx, 'update projects set updated_at = now() where id = ?', [projectId]);
        break;
      case 'questions_answered':
        for (const a of e.answers)
          await sql(
            tx,
            `update project_questions set status = 'answered', answer = ?, answered_by = ?, answered_at = now()
             where question_set_id = ? and question_id = ? and status = 'open'`,
            [a.answer, e.by, e.question_set_id, a.question_id],
          );
        await sql(tx, 'update projects set updated_at = now() where id = ?', [projectId]);
        break;
      case 'phase_completed': {
        // Each goal of the phase gets its note (actor `mission`, on behalf of the requester): met only
        // when the phase's evidence is on record, else it stays open and the note says so.
        const proof = await phaseEvidence(tx, projectId, e);
        for (const goal of await openGoalsOf(tx, projectId, e.phase))
          await insertNote(tx, projectId, goal, {
            goal: goal.id,
            status: proof ? 'met' : 'in_progress',
            actor: 'mission',
            principal: locked.requested_by,
            evidence: proof?.evidence ?? null,
            finding: proof?.finding ?? `Phase ${e.phase} ended without recorded evidence: goal not met`,
          });
        await sql(tx, 'update projects set phases_done = ?, progress = ?, updated_at = now() where id = ?', [
          e.phases_done,
          e.progress,
          projectId,
        ]);
        break;
      }
      case 'phase_failed':
        for (const goal of await openGoalsOf(tx, projectId, e.phase))
          await insertNote(tx, projectId, goal, {
            goal: goal.id,
            status: goal.status,
            actor: 'mission',
            principal: locked.requested_by,
            finding: `Not met: ${e.reason_code}: ${e.message}`,
          });
        await sql(
          tx,
          `update projects set status = 'failed', closed_reason = ?, closed_at = now(), waiting_state = 'NONE',
             updated_at = now() where id = ?`,
          [e.message, projectId],
        );
        break;
      case 'waiting_state':
        await sql(tx, 'update projects set waiting_state = ?, updated_at = now() where id = ?', [e.state, projectId]);
        break;
      case 'status_changed': {
        const terminal = e.status === 'cancelled' || e.status === 'closed';
        await sql(
          tx,
          `update projects set status = ?, closed_reason = case when ? then ? else closed_reason end,
             closed_at = case when ? then now() else closed_at end,
             waiting_state = case when ? then 'NONE' else waiting_state end, updated_at = now() where id = ?`,
          [e.status, terminal, e.reason, terminal, terminal, projectId],
        );
        break;
      }
      case 'completed':
        await sql(
          tx,
          `update projects set status = 'completed', progress = 1, waiting_state = 'NONE', closed_at = now(), updated_at = now() where id = ?`,
          [projectId],
        );
        break;
    }
    await appendEvent(tx, projectId, e.kind, e);
  });
}

const openGoalsOf = (tx: EntityManager, projectId: string, phase: string) =>
  sql<GoalRow>(
    tx,
    `select * from project_goals where project_id = ? and phase = ? and status in ('planned', 'in_progress') order by position`,
    [projectId, phase],
  );

/**
 * The evidence a completed phase stands on, checked against what is recorded: every reply it names
 * is an agent's message in one of this mission's threads; a phase without prompts stands on its
 * question set, all answered. Null when there is none (or it is not on record).
 */
async function phaseEvidence(
  tx: EntityManager,
  projectId: string,
  e: Extract<MissionEventInput, { kind: 'phase_completed' }>,
): Promise<{ evidence: string; finding: string } | null> {
  const replies = e.replies ?? [];
  if (replies.length) {
    const [found] = await sql<{ n: number }>(
      tx,
      `select count(*)::int as n from conversation_messages m
       where m.role = 'assistant' and (m.id::text, m.thread_id) in (${replies.map(() => '(?, ?)').join(', ')})
         and exists (select 1 from project_events ev where ev.project_id = ? and ev.kind = 'thread_opened'
                     and ev.payload->>'thread_id' = m.thread_id)`,
      [...replies.flatMap((r) => [r.message_id, r.thread_id]), projectId],
    );
    if (found!.n !== replies.length) return null;
    const last = replies[replies.length - 1]!;
    return {
      evidence: last.message_id,
      finding: `Phase ${e.phase}: ${replies.length} prompt(s) answered by ${[...new Set(replies.map((r) => r.agent_id))].join(', ')}; last reply ${last.message_id} in thread ${last.thread_id}`,
    };
  }
  if (!e.question_set_id) return null;
  const [set] = await sql<{ total: number; answered: number }>(
    tx,
    `select count(*)::int as total, (count(*) filter (where status = 'answered'))::int as answered
     from project_questions where project_id = ? and question_set_id = ?`,
    [projectId, e.question_set_id],
  );
  if (!set!.total || set!.answered !== set!.total) return null;
  return { evidence: e.question_set_id, finding: `Phase ${e.phase}: question set ${e.question_set_id} answered` };
}

export async function findProject(em: EntityManager, tenant: string, id: string): Promise<ProjectRow | undefined> {
  const rows = await sql<ProjectRow>(em, 'select * from projects where tenant = ? and id = ?', [tenant, id]);
  return rows[0];
}

export async function questionsOfSet(em: EntityManager, projectId: string, setId: string): Promise<QuestionRow[]> {
  return sql<QuestionRow>(
    em,
    'select * from project_questions where project_id = ? and question_set_id = ? order by position',
    [projectId, setId],
  );
}

export async function openQuestionsOf(em: EntityManager, projectIds: string[]): Promise<QuestionRow[]> {
  if (!projectIds.length) return [];
  return sql<QuestionRow>(
    em,
    `select * from project_questions where status = 'open' and project_id in (${projectIds.map(() => '?').join(', ')})
     order by project_id, question_set_id, position`,
    projectIds,
  );
}

export interface GoalCounts {
  project_id: string;
  goals_total: number;
  goals_met: number;
  questions_open: number;
}

export async function countsOf(em: EntityManager, projectIds: string[]): Promise<Map<string, GoalCounts>> {
  const out = new Map<string, GoalCounts>();
  if (!projectIds.length) return out;
  const marks = projectIds.map(() => '?').join(', ');
  const rows = await sql<GoalCounts>(
    em,
    `select p.id as project_id,
       (select count(*)::int from project_goals g where g.project_id = p.id) as goals_total,
       (select count(*)::int from project_goals g where g.project_id = p.id and g.status = 'met') as goals_met,
       (select count(*)::int from project_questions q where q.project_id = p.id and q.status = 'open') as questions_open
     from projects p where p.id in (${marks})`,
    projectIds,
  );
  for (const r of rows) out.set(r.project_id, r);
  return out;
}

/** Newest first; at most `limit` rows. */
export async function listProjectRows(em: EntityManager, tenant: string, limit: number): Promise<ProjectRow[]> {
  return sql<ProjectRow>(em, 'select * from projects where tenant = ? order by started_at desc, id limit ?', [
    tenant,
    limit,
  ]);
}

/** What the awaiting-input view reads first: just enough of a waiting mission to order and filter it. */
export interface WaitingCandidate {
  id: string;
  tenant: string;
  blueprint_name: string;
  requested_by: string;
  waiting_state: WaitingState;
  updated_at: Date;
}

/**
 * Open missions (running or paused) in the given waiting states: for each state the newest `limit`
 * by `updated_at desc, id`, one query (a bounded range scan of `projects_waiting_open_idx` per state).
 * Answered as one list per state, in the order of `states`.
 */
export async function waitingCandidates(
  em: EntityManager,
  tenant: string,
  states: readonly WaitingState[],
  limit: number,
): Promise<WaitingCandidate[][]> {
  const rows = await sql<WaitingCandidate>(
    em,
    `select w.* from unnest(?::text[]) as s(state)
     cross join lateral (
       select id, tenant, blueprint_name, requested_by, waiting_state, updated_at from projects
       where tenant = ? and waiting_state = s.state and status in ('running', 'paused')
       order by updated_at desc, id limit ?
     ) w`,
    [textArray(states), tenant, limit],
  );
  return states.map((st) => rows.filter((r) => r.waiting_state === st));
}

/** A project row with what its list view adds: goal and question counts and the requester's name and email. */
export type DescribedRow = ProjectRow &
  GoalCounts & { requester_display_name: string | null; requester_email: string | null };

/** Full rows of the given projects with their counts and requester in one query, in the order of `ids`. */
export async function describedRowsOf(em: EntityManager, ids: string[]): Promise<DescribedRow[]> {
  if (!ids.length) return [];
  const rows = await sql<DescribedRow>(
    em,
    `select p.*, p.id as project_id, coalesce(g.goals_total, 0) as goals_total, coalesce(g.goals_met, 0) as goals_met,
       coalesce(q.questions_open, 0) as questions_open,
       u.display_name as requester_display_name, u.email as requester_email
     from projects p
     left join (select project_id, count(*)::int as goals_total, (count(*) filter (where status = 'met'))::int as goals_met
                from project_goals where project_id = any(?::text[]) group by project_id) g on g.project_id = p.id
     left join (select project_id, count(*)::int as questions_open from project_questions
                where project_id = any(?::text[]) and status = 'open' group by project_id) q on q.project_id = p.id
     left join users u on u.id = p.requested_by
     where p.id = any(?::text[])`,
    [textArray(ids), textArray(ids), textArray(ids)],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

export async function peopleOf(
  em: EntityManager,
  ids: string[],
): Promise<Map<string, { display_name: string | null; email: string | null }>> {
  const out = new Map<string, { display_name: string | null; email: string | null }>();
  if (!ids.length) return out;
  const rows = await sql<{ id: string; display_name: string | null; email: string | null }>(
    em,
    `select id, display_name, email from users where id in (${ids.map(() => '?').join(', ')})`,
    ids,
  );
  for (const r of rows) out.set(r.id, { display_name: r.display_name, email: r.email });
  return out;
}

/** All questions a mission asked, in phase and position order. */
export async function questionsOfProject(em: EntityManager, projectId: string): Promise<QuestionRow[]> {
  return sql<QuestionRow>(
    em,
    'select * from project_questions where project_id = ? order by question_set_id, position',
    [projectId],
  );
}
