import type { MikroORM } from '@mikro-orm/postgresql';
import { EchoJobEntity } from '../shared/db/entities/index.js';
import { toIso } from '../shared/dates.js';
import { sql } from '../shared/db/sql.js';

export interface RecordEchoInput {
  jobId: string;
  tenant: string;
  message: string;
  requestedBy: string;
  workflowId: string;
}

/** Writes the echo row once; a retried activity finds the row and answers the same. */
export function createEchoActivities(deps: { orm: MikroORM }) {
  return {
    async recordEcho(input: RecordEchoInput): Promise<{ recordedAt: string }> {
      const em = deps.orm.em.fork();
      await sql(
        em,
        `insert into echo_jobs (job_id, tenant, message, requested_by, workflow_id, recorded_at)
         values (?, ?, ?, ?, ?, now()) on conflict (job_id) do nothing`,
        [input.jobId, input.tenant, input.message, input.requestedBy, input.workflowId],
      );
      const row = await em.findOneOrFail(EchoJobEntity, { jobId: input.jobId });
      return { recordedAt: toIso(row.recordedAt) };
    },
  };
}

export type EchoActivities = ReturnType<typeof createEchoActivities>;
