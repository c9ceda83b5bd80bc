/**
 * Project records (read-only, typed), the notes and server records agents add through the `mission`
 * tool, the blueprint chain and the system-test-lite report. Derived fields are defined here and in
 * docs/architecture.md ("Missions" → "Project records").
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { isAdmin } from '../blueprints/access.js';
import { ConflictError, NotFoundError } from '../errors.js';
import {
  eventsOf,
  goalsOf,
  lastNotesOf,
  notesOf,
  projectIdsWithThread,
  recordNote,
  recordServerRecord,
  serverRecordsOf,
  type GoalRow,
  type NoteInput,
  type NoteRow,
  type ServerRecordInput,
  type ServerRecordRow,
} from './records-store.js';
import { listProjectRows, peopleOf, questionsOfProject, type ProjectRow } from './store.js';
import { isTerminal, type MissionStatus, type PhaseFailureCode } from '../../workflows/mission-definitions.js';
import type { AppDeps } from '../app-deps.js';
import { visibilityFilter, visibleProject } from './service.js';
import { sql } from '../db/sql.js';
import { MissionCodes } from './error-codes.js';

/** Spec, Limits: the records list answers the newest 100 visible missions; `truncated` when more. */
export const RECORDS_LIST_LIMIT = 100;
const SCAN_ROWS = 1000;

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** The note's kind, from what it carries: waiver, verification, finding, evidence, else a status change. */
export function noteKind(n: Pick<NoteRow, 'status' | 'verification' | 'finding' | 'evidence'>) {
  if (n.status === 'waived') return 'waiver' as const;
  if (n.verification) return 'verification' as const;
  if (n.finding) return 'finding' as const;
  if (n.evidence) return 'evidence' as const;
  return 'status' as const;
}

const noteView = (n: NoteRow) => ({
  id: n.id,
  sequence: n.sequence,
  goal: n.goal,
  actor: n.actor,
  principal: n.principal,
  at: iso(n.at)!,
  evidence: n.evidence,
  asset: n.asset,
  finding: n.finding,
  waive_reason: n.waive_reason,
  person_turn: n.person_turn,
  verification: n.verification,
  verification_reason: n.verification_reason,
  server_check_result: n.server_check_result,
  previous_status: n.previous_status,
  status: n.status,
  input_versions: n.input_versions,
});

const serverRecordView = (r: ServerRecordRow) => ({
  kind: r.kind,
  evidence_id: r.evidence_id,
  asset_id: r.asset_id,
  target_table: r.target_table,
  state: r.state,
  reason: r.reason,
  attempts: r.attempts,
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
});

/** Planned work of a goal: its server records (`total`) and those that succeeded (`done`). */
function plannedOf(goals: GoalRow[], records: ServerRecordRow[]) {
  const out: Record<string, { total: number; done: number }> = {};
  for (const g of goals) out[g.id] = { total: 0, done: 0 };
  for (const r of records) {
    const p = out[r.goal];
    if (!p) continue;
    p.total++;
    if (r.state === 'succeeded') p.done++;
  }
  return out;
}

function listItem(p: ProjectRow, goals: GoalRow[], records: ServerRecordRow[], last: NoteRow | undefined) {
  const status_counts: Record<string, number> = { planned: 0, in_progress: 0, met: 0, waived: 0 };
  for (const g of goals) status_counts[g.status] = (status_counts[g.status] ?? 0) + 1;
  const planned = plannedOf(goals, records);
  return {
    id: p.id,
    name: p.name,
    project_type: 'mission' as const,
    principal: p.requested_by,
    opened_by: p.requested_by,
    thread_id: p.root_thread_id,
    created_at: iso(p.started_at)!,
    closed_at: iso(p.closed_at),
    goal_total: goals.length,
    status_counts,
    last_note: last
      ? {
          goal: last.goal,
          at: iso(last.at)!,
          actor: last.actor,
          principal: last.principal,
          kind: noteKind(last),
          verification: last.verification,
          status: last.status,
          person_turn: last.person_turn,
        }
      : null,
    plan_incomplete: Object.values(planned).some((x) => x.done < x.total),
    planned,
  };
}

/**
 * Each phase of the mission (in blueprint order) and how it went, from the event log: `planned`,
 * `running`, `completed`, or `failed` with the reason code and message of why it could not run.
 */
async function phaseOutcomes(em: EntityManager, projectId: string, phases: string[]) {
  type Outcome = {
    phase: string;
    status: 'planned' | 'running' | 'completed' | 'failed';
    reason_code: PhaseFailureCode | null;
    reason: string | null;
  };
  const out = new Map<string, Outcome>(
    phases.map((phase) => [phase, { phase, status: 'planned', reason_code: null, reason: null }]),
  );
  for (const e of await eventsOf(em, projectId, ['phase_started', 'phase_completed', 'phase_failed'])) {
    const o = out.get(String(e.payload.phase));
    if (!o) continue;
    o.status = e.kind === 'phase_started' ? 'running' : e.kind === 'phase_completed' ? 'completed' : 'failed';
    if (e.kind === 'phase_failed') {
      o.reason_code = e.payload.reason_code as PhaseFailureCode;
      o.reason = String(e.payload.message);
    }
  }
  return [...out.values()];
}

async function describe(em: EntityManager, rows: ProjectRow[]) {
  const ids = rows.map((r) => r.id);
  const goals = await goalsOf(em, ids);
  const records = await serverRecordsOf(em, ids);
  const last = await lastNotesOf(em, ids);
  return rows.map((r) =>
    listItem(
      r,
      goals.filter((g) => g.project_id === r.id),
      records.filter((x) => x.project_id === r.id),
      last.get(r.id),
    ),
  );
}

export interface RecordsQuery {
  thread_id?: string;
  include_people: boolean;
  status?: MissionStatus;
}

export async function listRecords(deps: AppDeps, em: EntityManager, principal: Principal, q: RecordsQuery) {
  const rows = await listProjectRows(em, principal.tenant, SCAN_ROWS + 1);
  const withThread = q.thread_id ? await projectIdsWithThread(em, principal.tenant, q.thread_id) : null;
  const visible = await visibilityFilter(deps, em, principal);
  const picked: ProjectRow[] = [];
  for (const r of rows.slice(0, SCAN_ROWS)) {
    if (picked.length > RECORDS_LIST_LIMIT) break;
    if (withThread && !withThread.has(r.id)) continue;
    if (q.status && r.status !== q.status) continue;
    if (await visible(r)) picked.push(r);
  }
  const truncated = picked.length > RECORDS_LIST_LIMIT || rows.length > SCAN_ROWS;
  const items = await describe(em, picked.slice(0, RECORDS_LIST_LIMIT));
  const people: Record<string, string | null> = {};
  if (q.include_people) {
    const ids = new Set<string>();
    for (const i of items) {
      ids.add(i.principal);
      ids.add(i.opened_by);
      if (i.last_note && i.last_note.actor !== 'mission') ids.add(i.last_note.actor);
      if (i.last_note) ids.add(i.last_note.principal);
    }
    const known = await peopleOf(em, [...ids]);
    for (const id of [...ids].sort()) people[id] = known.get(id)?.display_name ?? null;
  }
  return { items, people, truncated, generated_at: new Date().toISOString() };
}

/** Lowercase words of the parameter values (strings, numbers, booleans), distinct, sorted. */
export function parameterWords(parameters: Record<string, unknown>): string[] {
  const words = new Set<string>();
  for (const v of Object.values(parameters)) {
    if (v === null || v === undefined) continue;
    for (const w of String(v)
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u))
      if (w) words.add(w);
  }
  return [...words].sort();
}

/**
 * The live successor of an ended mission: a newer running or paused mission of the same blueprint
 * requested by the same person, visible to the caller. Looked up only for ended missions; two or
 * more candidates leave it undetermined (null).
 */
async function liveSuccessor(deps: AppDeps, em: EntityManager, principal: Principal, p: ProjectRow) {
  if (!isTerminal(p.status)) return { live_successor: null, undetermined: false, looked_up: false };
  const rows = await sql<ProjectRow>(
    em,
    `select * from projects where tenant = ? and blueprint_name = ? and requested_by = ? and id <> ?
       and status in ('running', 'paused') and started_at >= ? order by started_at desc, id limit 20`,
    [p.tenant, p.blueprint_name, p.requested_by, p.id, p.started_at],
  );
  const visible = await visibilityFilter(deps, em, principal);
  const seen: ProjectRow[] = [];
  for (const r of rows) if (await visible(r)) seen.push(r);
  if (seen.length === 1)
    return { live_successor: { id: seen[0]!.id, name: seen[0]!.name }, undetermined: false, looked_up: true };
  return { live_successor: null, undetermined: seen.length > 1, looked_up: true };
}

export async function recordDetail(deps: AppDeps, em: EntityManager, principal: Principal, projectId: string) {
  const p = await visibleProject(deps, em, principal, projectId);
  const goals = await goalsOf(em, [p.id]);
  const records = await serverRecordsOf(em, [p.id]);
  const notes = await notesOf(em, p.id);
  const [item] = await describe(em, [p]);
  const planned = item!.planned;
  const phases = [...new Set(goals.map((g) => g.phase))];
  const assets = new Set<string>();
  for (const n of notes) if (n.asset) assets.add(n.asset);
  for (const r of records) if (r.asset_id) assets.add(r.asset_id);
  const pending = Object.values(planned).reduce((s, x) => s + (x.total - x.done), 0);
  const total = Object.values(planned).reduce((s, x) => s + x.total, 0);
  const succ = await liveSuccessor(deps, em, principal, p);
  const phase_outcomes = await phaseOutcomes(em, p.id, phases);
  return {
    ...item!,
    parameters: p.parameters,
    note_sequence: notes.length ? notes[notes.length - 1]!.sequence : 0,
    goals: goals.map((g, i) => {
      const gNotes = notes.filter((n) => n.goal === g.id);
      const gAssets = new Set<string>();
      for (const n of gNotes) if (n.asset) gAssets.add(n.asset);
      const gRecords = records.filter((r) => r.goal === g.id);
      for (const r of gRecords) if (r.asset_id) gAssets.add(r.asset_id);
      const pl = planned[g.id]!;
      return {
        id: g.id,
        name: g.name,
        status: g.status,
        acceptance_criterion: g.acceptance_criterion,
        skill_ref: `${p.blueprint_name}#${g.phase}`,
        preconditions: goals
          .slice(0, i)
          .filter((o) => o.phase !== g.phase)
          .map((o) => o.id),
        asset_refs: [...gAssets].sort(),
        input_versions: Object.assign({}, ...gNotes.map((n) => n.input_versions)) as Record<string, string>,
        status_qualifier: {
          planned_scope:
            pl.total === 0 ? ('none' as const) : pl.done === pl.total ? ('complete' as const) : ('partial' as const),
        },
        planned: pl,
        server_records: gRecords.map(serverRecordView),
      };
    }),
    notes: notes.map(noteView),
    assets: [...assets].sort(),
    parameter_words: parameterWords(p.parameters),
    scope: {
      blueprint_name: p.blueprint_name,
      blueprint_commit: p.blueprint_commit,
      blueprint_version: p.blueprint_version_number,
      phases,
    },
    phase_outcomes,
    plan_banner: pending > 0 ? `${total - pending} of ${total} planned server records done` : null,
    closed_reason: p.closed_reason,
    live_successor: succ.live_successor,
    live_successor_undetermined: succ.undetermined,
    live_successor_looked_up: succ.looked_up,
  };
}

// ---------------------------------------------------------------------------------------------
// Writes through the `mission` tool

/**
 * Who may add notes and server records: the requester or an administrator, or an agent whose bot is
 * one of the mission's agents. The mission must not have ended (409 mission_ended).
 */
async function writableProject(deps: AppDeps, em: EntityManager, principal: Principal, projectId: string) {
  const p = await visibleProject(deps, em, principal, projectId).catch((e: unknown) => {
    if (principal.kind === 'agent') return null;
    throw e;
  });
  const row =
    p ??
    (await sql<ProjectRow>(em, 'select * from projects where tenant = ? and id = ?', [principal.tenant, projectId]))[0];
  const allowed =
    row &&
    (row.requested_by === principal.id ||
      isAdmin(principal) ||
      (principal.kind === 'agent' && !!principal.botId && row.agents.includes(principal.botId)));
  if (!row || !allowed)
    throw new NotFoundError(`No project ${projectId} you may record on.`, { project_id: projectId });
  if (isTerminal(row.status))
    throw new ConflictError(`The mission is ${row.status}.`, { code: MissionCodes.mission_ended, status: row.status });
  return row;
}

export async function addNote(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  projectId: string,
  input: Omit<NoteInput, 'actor' | 'principal'>,
) {
  const row = await writableProject(deps, em, principal, projectId);
  const note = await recordNote(em, projectId, {
    ...input,
    actor: principal.id,
    principal: principal.kind === 'person' ? principal.id : row.requested_by,
  });
  if (note === 'unknown_goal')
    throw new NotFoundError(`Project ${projectId} has no goal ${input.goal}.`, { goal: input.goal });
  return noteView(note);
}

export async function addServerRecord(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  projectId: string,
  input: ServerRecordInput,
) {
  await writableProject(deps, em, principal, projectId);
  const r = await recordServerRecord(em, projectId, input);
  if (r === 'unknown_goal')
    throw new NotFoundError(`Project ${projectId} has no goal ${input.goal}.`, { goal: input.goal });
  return { goal: r.goal, ...serverRecordView(r) };
}

// ---------------------------------------------------------------------------------------------
// Blueprint chain and report

/**
 * The threads the mission opened, in phase order (event log order): the root thread first. A node's
 * status is `completed` once its phase completed, else the mission's status when it has ended, else
 * `active`. Empty when the mission has no root thread.
 */
export async function blueprintChain(deps: AppDeps, em: EntityManager, principal: Principal, projectId: string) {
  const p = await visibleProject(deps, em, principal, projectId);
  if (!p.root_thread_id) return { project_id: p.id, nodes: [] };
  const events = await eventsOf(em, p.id, ['phase_started', 'thread_opened', 'phase_completed']);
  const done = new Set(events.filter((e) => e.kind === 'phase_completed').map((e) => String(e.payload.phase)));
  let phase: string | null = null;
  const nodes: Array<{ phase: string | null; agent_id: string; thread_id: string; root: boolean; status: string }> = [];
  for (const e of events) {
    if (e.kind === 'phase_started') phase = String(e.payload.phase);
    if (e.kind !== 'thread_opened') continue;
    nodes.push({
      phase,
      agent_id: String(e.payload.agent_id),
      thread_id: String(e.payload.thread_id),
      root: e.payload.thread_id === p.root_thread_id,
      status: '',
    });
  }
  for (const n of nodes)
    n.status = n.phase !== null && done.has(n.phase) ? 'completed' : isTerminal(p.status) ? p.status : 'active';
  return { project_id: p.id, nodes };
}

/** Markdown-safe and HTML-safe text: HTML specials become entities, Markdown punctuation is backslashed. */
export function escapeMarkdown(text: string): string {
  return text
    .replace(/\r?\n/g, ' ')
    .replace(/[&<>"'`\\*_[\]()#!|~{}+-]/g, (c) => ('&<>"\'`'.includes(c) ? `&#${c.charCodeAt(0)};` : `\\${c}`));
}

/**
 * The system-test-lite report: a fixed Markdown document from the mission's goals, notes and
 * questions. Every piece of mission content is escaped (`escapeMarkdown`): it is untrusted input.
 */
export async function systemTestLiteReport(deps: AppDeps, em: EntityManager, principal: Principal, projectId: string) {
  const p = await visibleProject(deps, em, principal, projectId);
  const goals = await goalsOf(em, [p.id]);
  const notes = await notesOf(em, p.id);
  const questions = await questionsOfProject(em, p.id);
  const phases = await phaseOutcomes(em, p.id, [...new Set(goals.map((g) => g.phase))]);
  const e = escapeMarkdown;
  const passed = goals.filter((g) => g.status === 'met' || g.status === 'waived').length;
  const lines = [
    `# System test (lite): ${e(p.name)}`,
    '',
    `- Mission: ${e(p.id)}`,
    `- Blueprint: ${e(p.blueprint_name)} at ${e(p.blueprint_commit)}`,
    `- Status: ${e(p.status)}`,
    `- Goals met or waived: ${passed} of ${goals.length}`,
    ...(p.closed_reason ? [`- Reason: ${e(p.closed_reason)}`] : []),
    '',
    '## Phases',
    '',
    '| Phase | Status | Reason code | Reason |',
    '|-|-|-|-|',
    ...phases.map((ph) => `| ${e(ph.phase)} | ${e(ph.status)} | ${e(ph.reason_code ?? '')} | ${e(ph.reason ?? '')} |`),
    '',
    '## Goals',
    '',
    '| Goal | Name | Status | Acceptance criterion |',
    '|-|-|-|-|',
    ...goals.map((g) => `| ${e(g.id)} | ${e(g.name)} | ${e(g.status)} | ${e(g.acceptance_criterion ?? '')} |`),
    '',
    '## Notes',
    '',
    '| # | Goal | Actor | Status | Verification | Evidence | Finding |',
    '|-|-|-|-|-|-|-|',
    ...notes.map(
      (n) =>
        `| ${n.sequence} | ${e(n.goal)} | ${e(n.actor)} | ${e(n.previous_status)} → ${e(n.status)} | ${e(n.verification ?? '')} | ${e(n.evidence ?? '')} | ${e(n.finding ?? n.waive_reason ?? '')} |`,
    ),
    '',
    '## Questions',
    '',
    '| Phase | Question | Status | Answer |',
    '|-|-|-|-|',
    ...questions.map((q) => `| ${e(q.phase)} | ${e(q.content)} | ${e(q.status)} | ${e(q.answer ?? '')} |`),
    '',
  ];
  return {
    project_id: p.id,
    report: 'system-test-lite' as const,
    format: 'markdown' as const,
    generated_at: new Date().toISOString(),
    summary: {
      goals_total: goals.length,
      goals_met_or_waived: passed,
      phases_failed: phases.filter((ph) => ph.status === 'failed').length,
      notes: notes.length,
      questions: questions.length,
    },
    markdown: lines.join('\n'),
  };
}
