import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import {
  demoRunWorkflowId,
  demoVersionWorkflowId,
  type DemoBindings,
  type DemoRunStatus,
  type DemoVersionStatus,
} from '../../workflows/demo-version-definitions.js';
import type { AppDeps } from '../app-deps.js';
import { sql } from '../db/sql.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';
import { DemoCodes } from './error-codes.js';

/**
 * Hosted demo versions and runs (spec: "Other lifecycles", demo version status and runs). Rows live
 * in `demo_versions` and `demo_runs`; their lifecycles are the workflows of workflows/demo-version.ts.
 * The internal token acts for the deployment tenant; a presenting person for their own.
 */
type Row = Record<string, unknown>;
const iso = (v: unknown) => (v == null ? null : new Date(v as string).toISOString());

export interface Caller {
  tenant: string;
  actor: string;
}
export function callerOf(principal: Principal | null | undefined, deps: AppDeps): Caller {
  return principal
    ? { tenant: principal.tenant, actor: `${principal.kind}:${principal.id}` }
    : { tenant: deps.config.auth.deploymentTenant, actor: 'internal-token' };
}

export function versionView(r: Row) {
  const b = r.bindings as DemoBindings;
  return {
    id: r.id as string,
    name: r.name as string,
    profile: r.profile as string,
    bindings: { agents: b.agents ?? [], blueprints: b.blueprints ?? [], connections: b.connections ?? [] },
    status: r.status as DemoVersionStatus,
    error_code: (r.error_code as string | null) ?? null,
    error: (r.error as string | null) ?? null,
    presenter_session_id: (r.presenter_session_id as string | null) ?? null,
    created_by: r.created_by as string,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  };
}

export function runView(r: Row) {
  return {
    id: r.id as string,
    version_id: r.version_id as string,
    status: r.status as DemoRunStatus,
    steps: r.steps as Array<{ kind: string; target: string; status: string; detail: string | null }>,
    error: (r.error as string | null) ?? null,
    presenter_session_id: (r.presenter_session_id as string | null) ?? null,
    created_by: r.created_by as string,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
    started_at: iso(r.started_at),
    finished_at: iso(r.finished_at),
  };
}

export async function createVersion(
  deps: AppDeps,
  em: EntityManager,
  caller: Caller,
  input: { name: string; profile: string; bindings: DemoBindings; presenter_session_id?: string | undefined },
) {
  const id = randomUUID();
  const bindings: DemoBindings = {
    agents: [...new Set(input.bindings.agents ?? [])],
    blueprints: [...new Set(input.bindings.blueprints ?? [])],
    connections: [...new Set(input.bindings.connections ?? [])],
  };
  const [row] = await sql<Row>(
    em,
    `insert into demo_versions (id, tenant, name, profile, bindings, status, presenter_session_id, created_by, created_at, updated_at)
     values (?, ?, ?, ?, ?::jsonb, 'draft', ?, ?, now(), now()) returning *`,
    [
      id,
      caller.tenant,
      input.name,
      input.profile,
      JSON.stringify(bindings),
      input.presenter_session_id ?? null,
      caller.actor,
    ],
  );
  try {
    await deps.temporal.workflow.start(workflowRef('demoVersionWorkflow'), {
      workflowId: demoVersionWorkflowId(id),
      taskQueue: deps.config.temporal.taskQueue,
      args: [{ versionId: id }],
      typedSearchAttributes: lifecycleSearchAttributes('demoVersionWorkflow', {
        tenant: caller.tenant,
        resourceId: id,
        status: 'validating',
      }),
    });
  } catch (err) {
    await sql<Row>(em, `delete from demo_versions where id = ?`, [id]);
    throw err;
  }
  return versionView(row!);
}

export async function listVersions(em: EntityManager, caller: Caller, status?: DemoVersionStatus) {
  const rows = await sql<Row>(
    em,
    `select * from demo_versions where tenant = ? ${status ? 'and status = ?' : ''} order by created_at desc, id limit 500`,
    status ? [caller.tenant, status] : [caller.tenant],
  );
  return rows.map(versionView);
}

async function versionRow(em: EntityManager, caller: Caller, id: string): Promise<Row> {
  const [row] = await sql<Row>(em, `select * from demo_versions where tenant = ? and id = ?`, [caller.tenant, id]);
  if (!row) throw new NotFoundError(`demo version ${id} not found`, { version_id: id });
  return row;
}

export async function getVersion(em: EntityManager, caller: Caller, id: string) {
  return versionView(await versionRow(em, caller, id));
}

export async function createRun(
  deps: AppDeps,
  em: EntityManager,
  caller: Caller,
  input: { version_id: string; presenter_session_id?: string | undefined },
) {
  const version = await versionRow(em, caller, input.version_id);
  if (version.status !== 'ready') {
    throw new ConflictError(
      `demo version ${input.version_id} is ${String(version.status)}; only a ready version runs`,
      {
        code: DemoCodes.DEMO_VERSION_NOT_READY,
        version_id: input.version_id,
        status: version.status,
      },
    );
  }
  const id = randomUUID();
  const [row] = await sql<Row>(
    em,
    `insert into demo_runs (id, tenant, version_id, status, steps, presenter_session_id, created_by, created_at, updated_at)
     values (?, ?, ?, 'prepared', '[]'::jsonb, ?, ?, now(), now()) returning *`,
    [id, caller.tenant, input.version_id, input.presenter_session_id ?? null, caller.actor],
  );
  try {
    await deps.temporal.workflow.start(workflowRef('demoRunWorkflow'), {
      workflowId: demoRunWorkflowId(id),
      taskQueue: deps.config.temporal.taskQueue,
      args: [{ runId: id }],
      typedSearchAttributes: lifecycleSearchAttributes('demoRunWorkflow', {
        tenant: caller.tenant,
        resourceId: id,
        status: 'running',
      }),
    });
  } catch (err) {
    await sql<Row>(em, `delete from demo_runs where id = ?`, [id]);
    throw err;
  }
  return runView(row!);
}

export async function listRuns(
  em: EntityManager,
  caller: Caller,
  filter: { version_id?: string | undefined; status?: DemoRunStatus | undefined },
) {
  const where = ['tenant = ?'];
  const params: unknown[] = [caller.tenant];
  if (filter.version_id) {
    where.push('version_id = ?');
    params.push(filter.version_id);
  }
  if (filter.status) {
    where.push('status = ?');
    params.push(filter.status);
  }
  const rows = await sql<Row>(
    em,
    `select * from demo_runs where ${where.join(' and ')} order by created_at desc, id limit 500`,
    params,
  );
  return rows.map(runView);
}

export async function getRun(em: EntityManager, caller: Caller, id: string) {
  const [row] = await sql<Row>(em, `select * from demo_runs where tenant = ? and id = ?`, [caller.tenant, id]);
  if (!row) throw new NotFoundError(`demo run ${id} not found`, { run_id: id });
  return runView(row);
}

/** The demo user's profile form (one row per person; a new submission replaces the old). */
export async function submitUserInfo(
  em: EntityManager,
  principal: Principal,
  input: { name: string; email: string; company?: string | undefined },
) {
  const [row] = await sql<Row>(
    em,
    `insert into demo_user_info (tenant, subject, name, email, company, submitted_at) values (?, ?, ?, ?, ?, now())
     on conflict (tenant, subject) do update set name = excluded.name, email = excluded.email,
       company = excluded.company, submitted_at = excluded.submitted_at
     returning submitted_at`,
    [principal.tenant, principal.id, input.name, input.email, input.company ?? null],
  );
  return { has_submitted: true, submitted_at: iso(row!.submitted_at) };
}

export async function userInfoStatus(em: EntityManager, principal: Principal) {
  const [row] = await sql<Row>(em, `select submitted_at from demo_user_info where tenant = ? and subject = ?`, [
    principal.tenant,
    principal.id,
  ]);
  return { has_submitted: Boolean(row), submitted_at: row ? iso(row.submitted_at) : null };
}
