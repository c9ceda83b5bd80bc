import { send } from './post.js';

export interface SyncAnswer {
  outcome?: string;
  job_id?: string;
  files_checked_out: number;
}

/** `POST …/sync` of a managed source; over 60 s the route answers 202 with the job, polled until it ends. */
export async function syncSource(apiUrl: string, sourceId: string): Promise<SyncAnswer> {
  const res = await send('POST', `${apiUrl}/api/managed-sources/${sourceId}/sync`, {});
  let result = res.data as SyncAnswer;
  while (result.outcome === undefined && result.job_id) {
    await new Promise((r) => setTimeout(r, 250));
    const job = await send('GET', `${apiUrl}/api/managed-sources/${sourceId}/sync-status/${result.job_id}`);
    if (job.data.status !== 'running') result = job.data.result ?? { outcome: 'failed', files_checked_out: 0 };
  }
  return result;
}
