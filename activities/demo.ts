import type { EntityManager } from '@mikro-orm/postgresql';
import {
  DEMO_BINDING_KINDS,
  DEMO_PROFILES,
  DEMO_VERSION_BINDING_INVALID,
  DEMO_VERSION_PROFILE_UNAVAILABLE,
  type DemoBindingKind,
  type DemoBindings,
  type DemoRunInput,
  type DemoRunStatus,
  type DemoRunStep,
  type DemoVersionInput,
  type DemoVersionStatus,
} from '../workflows/demo-version-definitions.js';
import type { ActivityDeps } from './deps.js';
import { sql } from '../shared/db/sql.js';

type Row = Record<string, unknown>;
/** Where each binding kind lives: table and id column, rows of the version's tenant. */
const BINDING_TABLES: Record<DemoBindingKind, { table: string; id: string; step: DemoRunStep['kind'] }> = {
  agents: { table: 'agents', id: 'id', step: 'agent' },
  blueprints: { table: 'blueprints', id: 'blueprint_id', step: 'blueprint' },
  connections: { table: 'crm_connections', id: 'id', step: 'connection' },
};
const STEP_TABLES: Record<DemoRunStep['kind'], { table: string; id: string }> = {
  agent: BINDING_TABLES.agents,
  blueprint: BINDING_TABLES.blueprints,
  connection: BINDING_TABLES.connections,
};

async function exists(em: EntityManager, tenant: string, kind: DemoRunStep['kind'], id: string): Promise<boolean> {
  const t = STEP_TABLES[kind];
  const rows = await sql<Row>(em, `select 1 from ${t.table} where tenant = ? and ${t.id} = ?`, [tenant, id]);
  return rows.length > 0;
}

/** The demo version and run activities: idempotent row updates guarded by the expected status. */
export function createDemoActivities(deps: ActivityDeps) {
  const { orm } = deps;

  async function demoVersionMarkValidating({ versionId }: DemoVersionInput): Promise<void> {
    await sql<Row>(
      orm.em.fork(),
      `update demo_versions set status = 'validating', updated_at = now() where id = ? and status = 'draft'`,
      [versionId],
    );
  }

  async function demoVersionValidate({ versionId }: DemoVersionInput): Promise<DemoVersionStatus> {
    const em = orm.em.fork();
    const [row] = await sql<Row>(em, `select tenant, profile, bindings, status from demo_versions where id = ?`, [
      versionId,
    ]);
    if (!row) return 'failed';
    if (row.status !== 'validating') return row.status as DemoVersionStatus;
    const tenant = row.tenant as string;
    let code: string | null = null;
    let error: string | null = null;
    if (!(DEMO_PROFILES as readonly string[]).includes(row.profile as string)) {
      code = DEMO_VERSION_PROFILE_UNAVAILABLE;
      error = `profile "${String(row.profile)}" is not one of: ${DEMO_PROFILES.join(', ')}`;
    } else {
      const bindings = row.bindings as DemoBindings;
      const missing: string[] = [];
      for (const kind of DEMO_BINDING_KINDS)
        for (const id of bindings[kind] ?? [])
          if (!(await exists(em, tenant, BINDING_TABLES[kind].step, id))) missing.push(`${kind}:${id}`);
      if (missing.length) {
        code = DEMO_VERSION_BINDING_INVALID;
        error = `bindings name what does not exist: ${missing.join(', ')}`;
      }
    }
    const status: DemoVersionStatus = code ? 'failed' : 'ready';
    await sql<Row>(
      em,
      `update demo_versions set status = ?, error_code = ?, error = ?, updated_at = now()
        where id = ? and status = 'validating'`,
      [status, code, error, versionId],
    );
    return status;
  }

  async function demoRunStart({ runId }: DemoRunInput): Promise<{ started: boolean; steps: DemoRunStep[] }> {
    const em = orm.em.fork();
    const [row] = await sql<Row>(
      em,
      `select r.status, r.steps, v.status as version_status, v.bindings
         from demo_runs r join demo_versions v on v.id = r.version_id where r.id = ?`,
      [runId],
    );
    if (!row) return { started: false, steps: [] };
    // A re-attempt after the run started continues with the plan it recorded.
    if (row.status === 'running') return { started: true, steps: row.steps as DemoRunStep[] };
    if (row.status !== 'prepared') return { started: false, steps: [] };
    if (row.version_status !== 'ready') {
      await sql<Row>(
        em,
        `update demo_runs set status = 'failed', error = ?, finished_at = now(), updated_at = now()
          where id = ? and status = 'prepared'`,
        [`the version is ${String(row.version_status)}, not ready`, runId],
      );
      return { started: false, steps: [] };
    }
    const bindings = row.bindings as DemoBindings;
    const steps: DemoRunStep[] = DEMO_BINDING_KINDS.flatMap((kind) =>
      (bindings[kind] ?? []).map((target) => ({
        kind: BINDING_TABLES[kind].step,
        target,
        status: 'pending' as const,
        detail: null,
      })),
    );
    await sql<Row>(
      em,
      `update demo_runs set status = 'running', steps = ?::jsonb, started_at = now(), updated_at = now()
        where id = ? and status = 'prepared'`,
      [JSON.stringify(steps), runId],
    );
    return { started: true, steps };
  }

  async function demoRunStep({ runId, step }: { runId: string; step: DemoRunStep }): Promise<DemoRunStep> {
    const em = orm.em.fork();
    const [run] = await sql<Row>(em, `select tenant from demo_runs where id = ?`, [runId]);
    if (!run) return { ...step, status: 'skipped', detail: 'run not found' };
    const found = await exists(em, run.tenant as string, step.kind, step.target);
    return found
      ? { ...step, status: 'done', detail: `${step.kind} resolves` }
      : { ...step, status: 'skipped', detail: `${step.kind} no longer exists` };
  }

  async function demoRunFinish(input: {
    runId: string;
    steps: DemoRunStep[];
    error: string | null;
  }): Promise<DemoRunStatus> {
    const status: DemoRunStatus = input.error
      ? 'failed'
      : input.steps.every((s) => s.status === 'done')
        ? 'completed'
        : 'incomplete';
    await sql<Row>(
      orm.em.fork(),
      `update demo_runs set status = ?, steps = ?::jsonb, error = ?, finished_at = now(), updated_at = now()
        where id = ? and status = 'running'`,
      [status, JSON.stringify(input.steps), input.error, input.runId],
    );
    return status;
  }

  return { demoVersionMarkValidating, demoVersionValidate, demoRunStart, demoRunStep, demoRunFinish };
}

export type DemoActivities = ReturnType<typeof createDemoActivities>;
