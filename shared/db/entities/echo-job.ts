import { column, table, type Row } from './table.js';

/** The row the echo workflow's activity writes: proof that API → Temporal → worker → PostgreSQL works. */
export const EchoJobEntity = table('EchoJob', 'echo_jobs', {
  jobId: column.string().primary(),
  tenant: column.string(),
  message: column.text(),
  requestedBy: column.string(),
  workflowId: column.string(),
  recordedAt: column.date(),
});
export type EchoJob = Row<typeof EchoJobEntity>;
