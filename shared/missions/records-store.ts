/**
 * Project records: append-only notes (`project_notes`) and server records
 * (`project_server_records`). A note is written with its `project_events` row and the goal's status
 * change in one transaction (the project row locked); notes are never updated.
 */
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from '../db/sql.js';

export const GOAL_STATUSES = ['planned', 'in_progress', 'met', 'waived'] as const;
export type GoalStatus = (typeof GOAL_STATUSES)[number];
export const VERIFICATIONS = ['passed', 'failed', 'inconclusive'] as const;
export const SERVER_RECORD_KINDS = [
  'foundry_copy_receipt',
  'notebook_publish',
  'notebook_overwritten',
  'databricks_run',
] as const;
export const SERVER_RECORD_STATES = ['pending', 'running', 'succeeded', 'failed'] as const;

export interface NoteRow {
  id: string;
  project_id: string;
  sequence: number;
  goal: string;
  actor: string;
  principal: string;
  at: Date;
  evidence: string | null;
  asset: string | null;
  finding: string | null;
  waive_reason: string | null;
  person_turn: boolean;
  verification: (typeof VERIFICATIONS)[number] | null;
  verification_reason: string | null;
  server_check_result: 'matched' | 'not_found' | null;
  previous_status: GoalStatus;
  status: GoalStatus;
  input_versions: Record<string, string>;
}

export interface ServerRecordRow {
  id: string;
  project_id: string;
  goal: string;
  kind: (typeof SERVER_RECORD_KINDS)[number];
  evidence_id: string;
  asset_id: string | null;
  target_table: string | null;
  state: (typeof SERVER_RECORD_STATES)[number];
  reason: string | null;
  attempts: number;
  created_at: Date;
  updated_at: Date;
}

export interface GoalRow {
  project_id: string;
  id: string;
  phase: string;
  name: string;
  acceptance_criterion: string | null;
  status: GoalStatus;
  position: number;
  updated_at: Date;
}

export interface NoteInput {
  goal: string;
  status: GoalStatus;
  actor: string;
  principal: string;
  evidence?: string | null;
  asset?: string | null;
  finding?: string | null;
  waive_reason?: string | null;
  person_turn?: boolean;
  verification?: NoteRow['verification'];
  verification_reason?: string | null;
  input_versions?: Record<string, string>;
}
/**
 * Inserts one note inside the caller's transaction (the project row already locked) and moves the
 * goal to the note's status. `server_check_result`: with evidence, whether the project has it on
 * record (a server record with that evidence id, an agent's reply in one of its threads, or an
 * answered question set of it). Returns the note.
 */
export async function insertNote(tx: EntityManager, projectId: string, goal: GoalRow, n: NoteInput): Promise<NoteRow> {
  let check: NoteRow['server_check_result'] = null;
  if (n.evidence) {
    // On record: a server record with that evidence id, a reply in one of the mission's threads, or its answered question set.
    const found = await sql<{ n: number }>(
      tx,
      `select ((select count(*) from project_server_records where project_id = ? and evidence_id = ?)
         + (select count(*) from conversation_messages m where m.id::text = ? and m.role = 'assistant'
              and exists (select 1 from project_events ev where ev.project_id = ? and ev.kind = 'thread_opened'
                          and ev.payload->>'thread_id' = m.thread_id))
         + coalesce((select 1 from project_questions where project_id = ? and question_set_id = ?
              having count(*) > 0 and bool_and(status = 'answered')), 0))::int as n`,
      [projectId, n.evidence, n.evidence, projectId, projectId, n.evidence],
    );
    check = found[0]!.n > 0 ? 'matched' : 'not_found';
  }
  const [row] = await sql<NoteRow>(
    tx,
    `insert into project_notes (id, project_id, sequence, goal, actor, principal, evidence, asset, finding, waive_reason,
       person_turn, verification, verification_reason, server_check_result, previous_status, status, input_versions)
     select ?, ?, coalesce(max(sequence), 0) + 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb
     from project_notes where project_id = ? returning *`,
    [
      `note_${randomBytes(16).toString('hex')}`,
      projectId,
      goal.id,
      n.actor,
      n.principal,
      n.evidence ?? null,
      n.asset ?? null,
      n.finding ?? null,
      n.waive_reason ?? null,
      n.person_turn ?? false,
      n.verification ?? null,
      n.verification_reason ?? null,
      check,
      goal.status,
      n.status,
      JSON.stringify(n.input_versions ?? {}),
      projectId,
    ],
  );
  await sql(tx, 'update project_goals set status = ?, updated_at = now() where project_id = ? and id = ?', [
    n.status,
    projectId,
    goal.id,
  ]);
  return row!;
}

/** Appends an event to a project's log under the next sequence number. */
export async function appendEvent(tx: EntityManager, projectId: string, kind: string, payload: unknown): Promise<void> {
  await sql(
    tx,
    `insert into project_events (project_id, seq, kind, payload)
     select ?, coalesce(max(seq), 0) + 1, ?, ?::jsonb from project_events where project_id = ?`,
    [projectId, kind, JSON.stringify(payload), projectId],
  );
}

/** A note recorded through the `mission` tool: note, goal status and `note_recorded` event in one transaction. */
export async function recordNote(
  em: EntityManager,
  projectId: string,
  n: NoteInput,
): Promise<NoteRow | 'unknown_goal'> {
  return em.transactional(async (tx) => {
    await sql(tx, 'select id from projects where id = ? for update', [projectId]);
    const [goal] = await sql<GoalRow>(tx, 'select * from project_goals where project_id = ? and id = ?', [
      projectId,
      n.goal,
    ]);
    if (!goal) return 'unknown_goal' as const;
    const note = await insertNote(tx, projectId, goal, n);
    await appendEvent(tx, projectId, 'note_recorded', {
      note_id: note.id,
      sequence: note.sequence,
      goal: note.goal,
      status: note.status,
    });
    await sql(tx, 'update projects set updated_at = now() where id = ?', [projectId]);
    return note;
  });
}

export interface ServerRecordInput {
  goal: string;
  kind: ServerRecordRow['kind'];
  evidence_id: string;
  asset_id?: string | null;
  target_table?: string | null;
  state: ServerRecordRow['state'];
  reason?: string | null;
}

/**
 * A server record reported through the `mission` tool: the first report inserts it, a repeated one
 * (same kind and evidence id) updates state, reason, asset and target and counts an attempt. The
 * `server_record` event goes with it.
 */
export async function recordServerRecord(
  em: EntityManager,
  projectId: string,
  r: ServerRecordInput,
): Promise<ServerRecordRow | 'unknown_goal'> {
  return em.transactional(async (tx) => {
    await sql(tx, 'select id from projects where id = ? for update', [projectId]);
    const [goal] = await sql<GoalRow>(tx, 'select * from project_goals where project_id = ? and id = ?', [
      projectId,
      r.goal,
    ]);
    if (!goal) return 'unknown_goal' as const;
    const [row] = await sql<ServerRecordRow>(
      tx,
      `insert into project_server_records (project_id, goal, kind, evidence_id, asset_id, target_table, state, reason)
       values (?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (project_id, kind, evidence_id) do update set goal = excluded.goal, asset_id = excluded.asset_id,
         target_table = excluded.target_table, state = excluded.state, reason = excluded.reason,
         attempts = project_server_records.attempts + 1, updated_at = now()
       returning *`,
      [projectId, r.goal, r.kind, r.evidence_id, r.asset_id ?? null, r.target_table ?? null, r.state, r.reason ?? null],
    );
    await appendEvent(tx, projectId, 'server_record', { ...r, attempts: row!.attempts });
    return row!;
  });
}

export async function goalsOf(em: EntityManager, projectIds: string[]): Promise<GoalRow[]> {
  if (!projectIds.length) return [];
  return sql<GoalRow>(
    em,
    `select * from project_goals where project_id in (${projectIds.map(() => '?').join(', ')}) order by project_id, position`,
    projectIds,
  );
}

export async function notesOf(em: EntityManager, projectId: string): Promise<NoteRow[]> {
  return sql<NoteRow>(em, 'select * from project_notes where project_id = ? order by sequence', [projectId]);
}

/** The newest note of each project. */
export async function lastNotesOf(em: EntityManager, projectIds: string[]): Promise<Map<string, NoteRow>> {
  const out = new Map<string, NoteRow>();
  if (!projectIds.length) return out;
  const rows = await sql<NoteRow>(
    em,
    `select distinct on (project_id) * from project_notes
     where project_id in (${projectIds.map(() => '?').join(', ')}) order by project_id, sequence desc`,
    projectIds,
  );
  for (const r of rows) out.set(r.project_id, r);
  return out;
}

/** Server records newest first (most recently updated). */
export async function serverRecordsOf(em: EntityManager, projectIds: string[]): Promise<ServerRecordRow[]> {
  if (!projectIds.length) return [];
  return sql<ServerRecordRow>(
    em,
    `select * from project_server_records where project_id in (${projectIds.map(() => '?').join(', ')})
     order by updated_at desc, id desc`,
    projectIds,
  );
}

/** Events in log order (kind and payload), for the blueprint chain. */
export async function eventsOf(
  em: EntityManager,
  projectId: string,
  kinds: string[],
): Promise<Array<{ seq: number; kind: string; payload: Record<string, unknown> }>> {
  return sql(
    em,
    `select seq, kind, payload from project_events where project_id = ? and kind in (${kinds.map(() => '?').join(', ')})
     order by seq`,
    [projectId, ...kinds],
  );
}

/** Projects (of a tenant) that opened the thread, as root thread or any thread of the mission. */
export async function projectIdsWithThread(em: EntityManager, tenant: string, threadId: string): Promise<Set<string>> {
  const rows = await sql<{ id: string }>(
    em,
    `select p.id from projects p where p.tenant = ? and (p.root_thread_id = ? or exists (
       select 1 from project_events e where e.project_id = p.id and e.kind = 'thread_opened' and e.payload->>'thread_id' = ?))`,
    [tenant, threadId, threadId],
  );
  return new Set(rows.map((r) => r.id));
}
