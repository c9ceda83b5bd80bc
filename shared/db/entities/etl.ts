import { capturedOutputColumns, processGroupColumns, runTimeColumns } from './run-columns.js';
import { column, table, type Row } from './table.js';
import type { EtlRunStatus } from '../../etl/runs.js';

/** One run of a built ETL job (workflow `etl-run/<run_id>`), run here or by the remote runner. */
export const EtlRunEntity = table('EtlRunRow', 'etl_runs', {
  runId: column.string().primary(),
  tenant: column.string(),
  jobName: column.string(),
  runner: column.string<'local' | 'remote'>(),
  status: column.string<EtlRunStatus>(),
  contextName: column.string().nullable(),
  contextKeys: column.json<string[]>(),
  /** The context parameters (they may carry credentials), sealed with the secret box. */
  contextSealed: column.text().nullable(),
  timeoutSeconds: column.integer(),
  exitCode: column.integer().nullable(),
  error: column.text().nullable(),
  ...capturedOutputColumns(),
  remoteRunId: column.string().nullable(),
  ...processGroupColumns(),
  ...runTimeColumns(),
});
export type EtlRunRow = Row<typeof EtlRunEntity>;
