import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SearchAttributes } from '../../shared/temporal/search-attributes.js';
import { query } from '../helpers/db.js';
import { recordHistory } from '../helpers/histories.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

describe('echo workflow through the real servers', () => {
  it('is visible to operators with its search attributes and memo', async () => {
    const jobId = `sa-${Date.now()}`;
    const res = await http(stack.url, 'POST', '/api/jobs/echo', {
      body: { message: 'operators see me', job_id: jobId },
    });
    expect(res.status).toBe(200);

    const handle = stack.api.deps.temporal.workflow.getHandle(`echo/${jobId}`);
    const description = await handle.describe();
    expect(description.type).toBe('echoWorkflow');
    expect(description.status.name).toBe('COMPLETED');
    expect(description.typedSearchAttributes.get(SearchAttributes.tenant)).toBe('default');
    expect(description.typedSearchAttributes.get(SearchAttributes.resourceId)).toBe(jobId);
    expect(description.typedSearchAttributes.get(SearchAttributes.status)).toBe('completed');
    expect(await description.memo).toMatchObject({ requested_by: 'local-admin', kind: 'echo' });

    // The same filter an operator types in the Temporal UI (visibility is eventually consistent).
    let found: string[] = [];
    for (let i = 0; i < 40 && found.length === 0; i++) {
      found = [];
      for await (const wf of stack.api.deps.temporal.workflow.list({
        query: `PlatformResourceId = "${jobId}" AND PlatformStatus = "completed"`,
      })) {
        found.push(wf.workflowId);
      }
      if (found.length === 0) await new Promise((r) => setTimeout(r, 250));
    }
    expect(found).toEqual([`echo/${jobId}`]);

    const rows = await query(
      stack.db.url,
      'select job_id, workflow_id, requested_by from echo_jobs where job_id = $1',
      [jobId],
    );
    expect(rows).toEqual([{ job_id: jobId, workflow_id: `echo/${jobId}`, requested_by: 'local-admin' }]);
    await recordHistory('echo-completed', handle);
  });

  it('retries the activity while the row cannot be written and completes once it can', async () => {
    // Make the write fail at first: a trigger refuses inserts until it is dropped.
    await query(
      stack.db.url,
      `create function refuse_echo() returns trigger language plpgsql as $$ begin raise exception 'echo writes paused'; end $$`,
    );
    await query(
      stack.db.url,
      `create trigger refuse_echo before insert on echo_jobs for each row execute function refuse_echo()`,
    );
    const jobId = `retry-${Date.now()}`;
    const pending = http(stack.url, 'POST', '/api/jobs/echo', { body: { message: 'eventually', job_id: jobId } });
    const handle = stack.api.deps.temporal.workflow.getHandle(`echo/${jobId}`);
    let attempts = 0;
    for (let i = 0; i < 80 && attempts < 2; i++) {
      await new Promise((r) => setTimeout(r, 250));
      const d = await handle.describe().catch(() => undefined);
      attempts = d?.raw.pendingActivities?.[0]?.attempt ?? 0;
    }
    expect(attempts).toBeGreaterThanOrEqual(2);
    await query(stack.db.url, 'drop trigger refuse_echo on echo_jobs');
    const res = await pending;
    expect([200, 202]).toContain(res.status);
    await handle.result();
    expect(await query(stack.db.url, 'select count(*)::int as n from echo_jobs where job_id = $1', [jobId])).toEqual([
      { n: 1 },
    ]);
    await recordHistory('echo-after-activity-retries', handle);
  });
});
