import { EntitySchema } from '@mikro-orm/core';

/** The row the echo workflow's activity writes: proof that API → Temporal → worker → PostgreSQL works. */
export interface EchoJob {
  jobId: string;
  tenant: string;
  message: string;
  requestedBy: string;
  workflowId: string;
  recordedAt: Date;
}

export const EchoJobEntity = new EntitySchema<EchoJob>({
  name: 'EchoJob',
  tableName: 'echo_jobs',
  properties: {
    jobId: { type: 'string', primary: true },
    tenant: { type: 'string' },
    message: { type: 'text' },
    requestedBy: { type: 'string' },
    workflowId: { type: 'string' },
    recordedAt: { type: 'Date' },
  },
});
