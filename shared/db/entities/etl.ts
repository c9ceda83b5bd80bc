import { BigIntType, EntitySchema } from '@mikro-orm/core';
import type { EtlRunStatus } from '../../etl/runs.js';

/** One run of a built ETL job (workflow `etl-run/<run_id>`), run here or by the remote runner. */
export interface EtlRunRow {
  runId: string;
  tenant: string;
  jobName: string;
  runner: 'local' | 'remote';
  status: EtlRunStatus;
  contextName: string | null;
  contextKeys: string[];
  /** The context parameters (they may carry credentials), sealed with the secret box. */
  contextSealed: string | null;
  timeoutSeconds: number;
  exitCode: number | null;
  error: string | null;
  output: string;
  outputBytes: number;
  outputTruncated: boolean;
  remoteRunId: string | null;
  /** Where the job's process group runs, so the worker that marks a run interrupted can end it. */
  workerHost: string | null;
  processId: number | null;
  requestedBy: string;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  updatedAt: Date;
}

export const EtlRunEntity = new EntitySchema<EtlRunRow>({
  name: 'EtlRunRow',
  tableName: 'etl_runs',
  properties: {
    runId: { type: 'string', primary: true },
    tenant: { type: 'string' },
    jobName: { type: 'string' },
    runner: { type: 'string' },
    status: { type: 'string' },
    contextName: { type: 'string', nullable: true },
    contextKeys: { type: 'json' },
    contextSealed: { type: 'text', nullable: true },
    timeoutSeconds: { type: 'integer' },
    exitCode: { type: 'integer', nullable: true },
    error: { type: 'text', nullable: true },
    output: { type: 'text' },
    outputBytes: { type: new BigIntType('number') },
    outputTruncated: { type: 'boolean' },
    remoteRunId: { type: 'string', nullable: true },
    workerHost: { type: 'string', nullable: true },
    processId: { type: 'integer', nullable: true },
    requestedBy: { type: 'string' },
    createdAt: { type: 'Date' },
    startedAt: { type: 'Date', nullable: true },
    finishedAt: { type: 'Date', nullable: true },
    updatedAt: { type: 'Date' },
  },
});
