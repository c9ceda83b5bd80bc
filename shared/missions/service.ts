/**
 * Missions, shared by `api/routes/projects.ts` and the `mission` tool: start a mission from a
 * blueprint, list the caller's missions, steer one (`setStatus`), answer its questions, and the
 * awaiting-input view. Reads come from the projections (`shared/missions/store.ts`); steering goes
 * through the workflow's Updates.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { EntityManager } from '@mikro-orm/postgresql';
import git from 'isomorphic-git';
import { agentsNamed, ensureBuiltInAgents } from '../agents/registry.js';
import type { Principal } from '../auth/principal.js';
import type { AgentRow } from '../db/entities/agents.js';
import { flagsFor, grantsOf, isAdmin, requireAccess } from '../blueprints/access.js';
import { MANIFEST_FILE, parseManifest, serializeManifest, type BlueprintManifest } from '../blueprints/manifest.js';
import { identityOf, resolveBlueprint, type Resolved } from '../blueprints/store.js';
import { BadRequestError, ConflictError, NotFoundError, ServiceUnavailableError } from '../errors.js';
import {
  countsOf,
  describedRowsOf,
  findProject,
  insertProject,
  listProjectRows,
  newProjectId,
  openQuestionsOf,
  peopleOf,
  questionsOfSet,
  waitingCandidates,
  type DescribedRow,
  type GoalCounts,
  type ProjectRow,
  type QuestionRow,
  type WaitingCandidate,
} from './store.js';
import { SearchAttributes } from '../temporal/search-attributes.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import {
  answerQuestionsUpdate,
  isTerminal,
  MISSION_REFUSAL,
  missionWorkflowId,
  nextStatus,
  setStatusUpdate,
  type MissionPhase,
  type MissionRefusalCode,
  type StatusAction,
} from '../../workflows/mission-definitions.js';
import type { AppDeps } from '../app-deps.js';
import { refusalToHttp, sendRefusableUpdate, type RefusalTable } from '../temporal/refusable-update.js';
import { sql } from '../db/sql.js';
import { MissionCodes } from './error-codes.js';
import { BlueprintCodes } from '../blueprints/error-codes.js';
import { productionVersionOf, versionFiles, type VersionRow } from '../blueprints/versions.js';

/** No progress for this long while running → `STUCK` (seconds). */
export const STUCK_AFTER_SECONDS = 86_400;
/** Awaiting-input limits (spec, Limits): missions described, rows read per waiting status. */
export const AWAITING_INPUT_MAX_MISSIONS = 50;
export const AWAITING_INPUT_ROWS_PER_STATE = 500;
/** `GET /api/projects` answers the newest this many missions the caller may see. */
export const PROJECT_LIST_LIMIT = 100;
const LIST_SCAN_ROWS = 1000;

const refusals: RefusalTable<MissionRefusalCode> = {
  failureType: MISSION_REFUSAL,
  statuses: { invalid_transition: 409, unknown_question_set: 404, question_set_answered: 409, bad_answers: 400 },
};

// ---------------------------------------------------------------------------------------------
// Start

interface Snapshot {
  commit: string;
  /** The saved version run (a versioned blueprint's production version); null for the working copy or a built-in. */
  version: number | null;
  manifest: BlueprintManifest;
  read: (p: string) => Promise<string | null>;
}

/**
 * Reads what a mission runs, fixed at start so later edits never change a running mission: a versioned
 * blueprint's production version (its files from PostgreSQL, the durable copy; 404
 * `BLUEPRINT_PRODUCTION_NOT_ASSIGNED` while none is assigned), otherwise the working copy's HEAD commit
 * (a built-in: its bundled files).
 */
async function snapshotOf(em: EntityManager, b: Resolved, name: string): Promise<Snapshot> {
  if (b.kind === 'default') {
    const files = b.def.files;
    const commit = `builtin-${createHash('sha256')
      .update(serializeManifest(b.manifest))
      .update(JSON.stringify(files))
      .digest('hex')
      .slice(0, 40)}`;
    return { commit, version: null, manifest: b.manifest, read: async (p) => files[p] ?? null };
  }
  const production = await productionVersionOf(em, b.row.blueprint_id);
  if (production === null)
    throw new NotFoundError(
      `Blueprint "${name}" is versioned and has no production version assigned; promote a saved version to run it.`,
      { code: BlueprintCodes.BLUEPRINT_PRODUCTION_NOT_ASSIGNED, blueprint_name: name },
    );
  if (production) return versionSnapshot(em, production);
  const dir = b.dir;
  const commit = await git.resolveRef({ fs, dir, ref: 'HEAD' });
  const read = async (filepath: string) => {
    try {
      const { blob } = await git.readBlob({ fs, dir, oid: commit, filepath });
      return Buffer.from(blob).toString('utf8');
    } catch {
      return null;
    }
  };
  const text = await read(MANIFEST_FILE);
  if (text === null) throw storageLacks();
  return { commit, version: null, manifest: parseManifest(text), read };
}

const storageLacks = () =>
  new ServiceUnavailableError('blueprint_storage', 'The blueprint storage does not hold this blueprint.');

async function versionSnapshot(em: EntityManager, v: VersionRow): Promise<Snapshot> {
  const files = await versionFiles(em, v.version_id);
  const read = async (p: string) => files.get(p)?.toString('utf8') ?? null;
  const text = await read(MANIFEST_FILE);
  if (text === null) throw storageLacks();
  return { commit: v.commit_sha, version: v.number, manifest: parseManifest(text), read };
}

async function phasesOf(
  manifest: BlueprintManifest,
  read: (p: string) => Promise<string | null>,
  name: string,
): Promise<MissionPhase[]> {
  const goalIds = new Set<string>();
  const out: MissionPhase[] = [];
  for (const p of manifest.phases) {
    const prompts: string[] = [];
    for (const pr of p.prompts) {
      if ('text' in pr) prompts.push(pr.text);
      else {
        const text = await read(pr.file);
        if (text === null)
          throw new ConflictError(`Blueprint "${name}" names prompt file ${pr.file}, which its commit does not hold.`, {
            code: MissionCodes.blueprint_prompt_missing,
            blueprint_name: name,
            file: pr.file,
          });
        prompts.push(text);
      }
    }
    const goals = (p.goals ?? [{ id: p.id, name: p.goal }]).map((g) => {
      // Goal ids are unique per mission: a repeated id is qualified by its phase.
      const id = goalIds.has(g.id) ? `${p.id}.${g.id}` : g.id;
      goalIds.add(id);
      return {
        id,
        name: g.name,
        acceptance_criterion: ('acceptance_criterion' in g ? g.acceptance_criterion : null) ?? null,
      };
    });
    out.push({
      id: p.id,
      name: p.name,
      agents: [...new Set(p.agents ?? [])],
      goals,
      prompts,
      questions: (p.questions ?? []).map((q) => ({
        id: q.id,
        content: q.content,
        priority: q.priority ?? 'normal',
        category: q.category ?? null,
        expected_response_type: q.expected_response_type ?? null,
        options: q.options ?? null,
        recommended: q.recommended ?? null,
      })),
    });
  }
  return out;
}

/**
 * The agents the phases name, as ids of this tenant: an id, a built-in's key (`eve`) or an imported
 * agent's manifest id (`agentsNamed`). Unknown (409 `unknown_agents`) or ambiguous (409
 * `ambiguous_agents`) names refuse the start before anything is written.
 */
async function resolvePhaseAgents(
  em: EntityManager,
  tenant: string,
  blueprintName: string,
  phases: MissionPhase[],
): Promise<MissionPhase[]> {
  const names = [...new Set(phases.flatMap((p) => p.agents))];
  if (!names.length) return phases;
  await ensureBuiltInAgents(em, tenant);
  const agents = await sql<Pick<AgentRow, 'id' | 'source'>>(em, 'select id, source from agents where tenant = ?', [
    tenant,
  ]);
  const named = new Map(names.map((n) => [n, agentsNamed(agents, n)]));
  const missing = names.filter((n) => !named.get(n)!.length);
  if (missing.length)
    throw new ConflictError(`Blueprint "${blueprintName}" names agents that do not exist: ${missing.join(', ')}.`, {
      code: MissionCodes.unknown_agents,
      agents: missing,
    });
  const ambiguous = names.filter((n) => named.get(n)!.length > 1);
  if (ambiguous.length)
    throw new ConflictError(`Blueprint "${blueprintName}" names agents more than one agent answers to.`, {
      code: MissionCodes.ambiguous_agents,
      agents: ambiguous.map((n) => ({ name: n, candidates: named.get(n)!.map((a) => a.id) })),
    });
  return phases.map((p) => ({ ...p, agents: [...new Set(p.agents.map((n) => named.get(n)![0]!.id))] }));
}

export interface StartMissionInput {
  blueprint_name: string;
  name?: string;
  parameters?: Record<string, unknown>;
}

/** Starts a mission: the caller must be allowed to execute (= view) the blueprint; hidden built-ins start by name. */
export async function startMission(
  deps: Pick<AppDeps, 'config' | 'temporal'>,
  em: EntityManager,
  principal: Principal,
  input: StartMissionInput,
) {
  const b = await resolveBlueprint(em, deps.config.blueprints.dir, principal.tenant, input.blueprint_name);
  // A deleted blueprint that missions still reference is only hidden: its missions read it, new ones cannot start.
  if (b.kind === 'custom' && b.row.hidden)
    throw new NotFoundError(`No blueprint named "${input.blueprint_name}".`, { blueprint_name: input.blueprint_name });
  const grants = b.kind === 'custom' ? await grantsOf(em, [b.row.blueprint_id]) : [];
  requireAccess(flagsFor(principal, b, grants), 'view', input.blueprint_name);
  const snap = await snapshotOf(em, b, input.blueprint_name);
  const phases = await resolvePhaseAgents(
    em,
    principal.tenant,
    input.blueprint_name,
    await phasesOf(snap.manifest, snap.read, input.blueprint_name),
  );
  const id = newProjectId();
  const row = await insertProject(em, {
    id,
    tenant: principal.tenant,
    name: input.name ?? `${input.blueprint_name} mission`,
    blueprintName: input.blueprint_name,
    blueprintId: identityOf(b),
    blueprintCommit: snap.commit,
    blueprintVersion: snap.version,
    parameters: input.parameters ?? {},
    requestedBy: principal.id,
    phases,
  });
  try {
    await deps.temporal.workflow.start(workflowRef('missionWorkflow'), {
      workflowId: missionWorkflowId(id),
      taskQueue: deps.config.temporal.taskQueue,
      args: [
        {
          projectId: id,
          tenant: principal.tenant,
          requestedBy: principal.id,
          blueprintName: input.blueprint_name,
          blueprintCommit: snap.commit,
          startedAtMs: new Date(row.started_at).getTime(),
          phases,
          stuckAfterSeconds: STUCK_AFTER_SECONDS,
        },
      ],
      typedSearchAttributes: [
        { key: SearchAttributes.tenant, value: principal.tenant },
        { key: SearchAttributes.resourceId, value: id },
        { key: SearchAttributes.missionStatus, value: 'running' },
        { key: SearchAttributes.missionWaitingState, value: 'NONE' },
      ],
      memo: {
        blueprint_name: input.blueprint_name,
        blueprint_commit: snap.commit,
        blueprint_version: snap.version,
        requested_by: principal.id,
      },
    });
  } catch (err) {
    // No workflow, no mission: the row goes again (bad outcomes write nothing).
    await sql(em, 'delete from projects where id = ?', [id]);
    throw err;
  }
  return (await describeProjects(em, [row]))[0]!;
}

// ---------------------------------------------------------------------------------------------
// Visibility and views

/** Who sees a mission: its requester, an administrator, or whoever may view its blueprint. */
export async function visibilityFilter(deps: AppDeps, em: EntityManager, principal: Principal) {
  const cache = new Map<string, boolean>();
  return async (row: Pick<ProjectRow, 'tenant' | 'requested_by' | 'blueprint_name'>): Promise<boolean> => {
    if (row.tenant !== principal.tenant) return false;
    if (row.requested_by === principal.id || isAdmin(principal)) return true;
    let ok = cache.get(row.blueprint_name);
    if (ok === undefined) {
      try {
        const b = await resolveBlueprint(em, deps.config.blueprints.dir, principal.tenant, row.blueprint_name);
        const grants = b.kind === 'custom' ? await grantsOf(em, [b.row.blueprint_id]) : [];
        ok = flagsFor(principal, b, grants).can_view;
      } catch {
        ok = false;
      }
      cache.set(row.blueprint_name, ok);
    }
    return ok;
  };
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** The list view of missions: core fields plus progress, elapsed time, agents, stats and the requester. */
export async function describeProjects(em: EntityManager, rows: ProjectRow[]) {
  const counts = await countsOf(
    em,
    rows.map((r) => r.id),
  );
  const people = await peopleOf(em, [...new Set(rows.map((r) => r.requested_by))]);
  return viewsOf(rows, counts, people);
}

/** Rows read with their counts and requester (`describedRowsOf`), as list views: no further reads. */
function describeReadRows(rows: DescribedRow[]) {
  return viewsOf(
    rows,
    new Map(rows.map((r) => [r.id, r])),
    new Map(rows.map((r) => [r.requested_by, { display_name: r.requester_display_name, email: r.requester_email }])),
  );
}

function viewsOf(
  rows: ProjectRow[],
  counts: Map<string, GoalCounts>,
  people: Map<string, { display_name: string | null; email: string | null }>,
) {
  const now = Date.now();
  return rows.map((r) => {
    const c = counts.get(r.id);
    const end = r.closed_at ? new Date(r.closed_at).getTime() : now;
    return {
      id: r.id,
      name: r.name,
      blueprint_name: r.blueprint_name,
      blueprint_id: r.blueprint_id,
      blueprint_commit: r.blueprint_commit,
      blueprint_version: r.blueprint_version_number,
      status: r.status,
      waiting_state: r.waiting_state,
      closed_reason: r.closed_reason,
      requested_by: r.requested_by,
      requested_by_display_name: people.get(r.requested_by)?.display_name ?? null,
      requested_by_email: people.get(r.requested_by)?.email ?? null,
      root_thread_id: r.root_thread_id,
      blueprint_phase: r.blueprint_phase,
      progress: Number(r.progress),
      elapsed_time: Math.max(0, Math.floor((end - new Date(r.started_at).getTime()) / 1000)),
      agents: r.agents,
      stats: {
        phases_total: r.phases_total,
        phases_done: r.phases_done,
        goals_total: c?.goals_total ?? 0,
        goals_met: c?.goals_met ?? 0,
        questions_open: c?.questions_open ?? 0,
      },
      started_at: iso(r.started_at)!,
      updated_at: iso(r.updated_at)!,
      closed_at: iso(r.closed_at),
    };
  });
}

export async function listProjects(deps: AppDeps, em: EntityManager, principal: Principal) {
  const rows = await listProjectRows(em, principal.tenant, LIST_SCAN_ROWS + 1);
  const visible = await visibilityFilter(deps, em, principal);
  const mine: ProjectRow[] = [];
  for (const r of rows.slice(0, LIST_SCAN_ROWS)) {
    if (mine.length > PROJECT_LIST_LIMIT) break;
    if (await visible(r)) mine.push(r);
  }
  const truncated = mine.length > PROJECT_LIST_LIMIT || rows.length > LIST_SCAN_ROWS;
  return { items: await describeProjects(em, mine.slice(0, PROJECT_LIST_LIMIT)), truncated };
}

/** A mission the caller may see, or 404 (hidden and unknown answer alike). */
export async function visibleProject(deps: AppDeps, em: EntityManager, principal: Principal, projectId: string) {
  const row = await findProject(em, principal.tenant, projectId);
  if (!row || !(await (await visibilityFilter(deps, em, principal))(row)))
    throw new NotFoundError(`No project ${projectId}.`, { project_id: projectId });
  return row;
}

// ---------------------------------------------------------------------------------------------
// Steering

/** The requester or an administrator may steer; others who merely see the mission may not. */
function requireSteer(principal: Principal, row: ProjectRow) {
  if (row.requested_by !== principal.id && !isAdmin(principal))
    throw new NotFoundError(`No project ${row.id} you may steer.`, { project_id: row.id });
}

export async function setProjectStatus(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  projectId: string,
  body: { action: StatusAction; reason?: string },
) {
  const row = await visibleProject(deps, em, principal, projectId);
  requireSteer(principal, row);
  const refuse = (status: string) =>
    new ConflictError(`A ${status} mission cannot be asked to ${body.action}.`, {
      code: MissionCodes.invalid_transition,
      status,
      action: body.action,
    });
  if (isTerminal(row.status) || !nextStatus(row.status, body.action)) throw refuse(row.status);
  const answer = await sendRefusableUpdate(deps, refusals, missionWorkflowId(projectId), setStatusUpdate, {
    action: body.action,
    reason: body.reason ?? null,
    by: principal.id,
  });
  if (!answer.ok) {
    if ('closed' in answer) throw refuse((await findProject(em, principal.tenant, projectId))?.status ?? row.status);
    throw refusalToHttp(refusals, answer.refusal, { project_id: projectId });
  }
  const after = (await findProject(em.fork(), principal.tenant, projectId))!;
  return {
    project_id: projectId,
    previous_status: answer.value.previous_status,
    status: answer.value.status,
    reason: answer.value.reason,
    project: (await describeProjects(em.fork(), [after]))[0]!,
  };
}

export async function answerQuestions(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  projectId: string,
  setId: string,
  answers: Array<{ question_id: string; answer: string }>,
) {
  const row = await visibleProject(deps, em, principal, projectId);
  const questions = await questionsOfSet(em, projectId, setId);
  if (!questions.length)
    throw new NotFoundError(`Project ${projectId} has no question set ${setId}.`, { question_set_id: setId });
  if (questions.every((q) => q.status === 'answered'))
    throw new ConflictError(`Question set ${setId} is already answered.`, { code: MissionCodes.question_set_answered });
  if (isTerminal(row.status))
    throw new ConflictError(`The mission is ${row.status}.`, {
      code: MissionCodes.invalid_transition,
      status: row.status,
    });
  const fields: Array<{ field: string; message: string }> = [];
  const seen = new Set<string>();
  answers.forEach((a, i) => {
    const q = questions.find((x) => x.question_id === a.question_id);
    if (!q || seen.has(a.question_id))
      fields.push({ field: `body.answers.${i}.question_id`, message: 'not a question of this set, or named twice' });
    else if (q.status === 'answered')
      fields.push({ field: `body.answers.${i}.question_id`, message: 'already answered' });
    seen.add(a.question_id);
  });
  if (fields.length) throw new BadRequestError('Some answers do not match open questions of this set.', { fields });
  const answer = await sendRefusableUpdate(deps, refusals, missionWorkflowId(projectId), answerQuestionsUpdate, {
    question_set_id: setId,
    answers,
    by: principal.id,
  });
  if (!answer.ok) {
    if ('closed' in answer)
      throw new ConflictError('The mission has ended.', {
        code: MissionCodes.invalid_transition,
        project_id: projectId,
      });
    throw refusalToHttp(refusals, answer.refusal, { project_id: projectId });
  }
  return { project_id: projectId, ...answer.value };
}

// ---------------------------------------------------------------------------------------------
// Awaiting input

/**
 * The limit logic of the awaiting-input view, pure: rows read per waiting status (each list holds at
 * most `perState + 1` rows, newest change first), filtered by visibility, at most `maxMissions`
 * described; `truncated` when a status had more rows than were read or more missions were visible.
 */
export async function selectAwaiting<R extends Pick<ProjectRow, 'id' | 'updated_at'>>(
  perStateRows: R[][],
  visible: (r: R) => Promise<boolean>,
  limits = { perState: AWAITING_INPUT_ROWS_PER_STATE, maxMissions: AWAITING_INPUT_MAX_MISSIONS },
): Promise<{ rows: R[]; truncated: boolean }> {
  let truncated = perStateRows.some((rows) => rows.length > limits.perState);
  const read = perStateRows
    .flatMap((rows) => rows.slice(0, limits.perState))
    .sort((a, b) => new Date(b.updated_at).getTime() - new Date(a.updated_at).getTime() || a.id.localeCompare(b.id));
  const out: R[] = [];
  for (const r of read) {
    if (!(await visible(r))) continue;
    if (out.length === limits.maxMissions) {
      truncated = true;
      break;
    }
    out.push(r);
  }
  return { rows: out, truncated };
}

const questionView = (q: QuestionRow) => ({
  question_set_id: q.question_set_id,
  question_id: q.question_id,
  phase: q.phase,
  priority: q.priority,
  category: q.category,
  content: q.content,
  ...(q.expected_response_type ? { expected_response_type: q.expected_response_type } : {}),
  options: q.options ?? [],
  recommended: q.recommended,
});

/**
 * Three set-based reads whatever the number of waiting missions: the candidates (id, blueprint,
 * requester, state, update time; at most 501 per waiting status off `projects_waiting_open_idx`),
 * then the at most 50 visible ones with their counts and requester, then their open questions.
 * Visibility needs the blueprint's access rules, resolved once per blueprint name.
 */
export async function awaitingInput(deps: AppDeps, em: EntityManager, principal: Principal) {
  const perState: WaitingCandidate[][] = await waitingCandidates(
    em,
    principal.tenant,
    ['IN_PROGRESS_NEEDING_INPUT', 'STUCK'],
    AWAITING_INPUT_ROWS_PER_STATE + 1,
  );
  const { rows, truncated } = await selectAwaiting(perState, await visibilityFilter(deps, em, principal));
  const ids = rows.map((r) => r.id);
  const described = describeReadRows(await describedRowsOf(em, ids));
  const questions = await openQuestionsOf(em, ids);
  const byProject = new Map<string, QuestionRow[]>();
  for (const q of questions) byProject.set(q.project_id, [...(byProject.get(q.project_id) ?? []), q]);
  return {
    success: true as const,
    items: described.map((p) => ({ ...p, questions: (byProject.get(p.id) ?? []).map(questionView) })),
    truncated,
  };
}
