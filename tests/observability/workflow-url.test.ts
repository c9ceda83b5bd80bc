/**
 * Lifecycle answers carry `workflow_url`, the Temporal UI page of their workflow, built from
 * TEMPORAL_UI_URL: Action Review proposal create, detail and decision; CRM merge approval request
 * and read; the echo job. Without a configured UI URL the field is null.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { http } from '../helpers/stack.js';
import { learning, path } from '../action-review/support.js';
import { loadConfig } from '../../shared/config.js';
import { workflowUrl } from '../../shared/temporal/workflow-url.js';
import {
  APPROVALS,
  createJwtConnection,
  resetFakeCrm,
  selection,
  startCrmStack,
  type CrmStack,
} from '../crm/support.js';

const UI = 'http://127.0.0.1:8233';
const page = (workflowId: string) => `${UI}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`;

let s: CrmStack;
beforeAll(async () => {
  s = await startCrmStack({ TEMPORAL_UI_URL: `${UI}/` });
  await createJwtConnection(s);
});
afterAll(async () => s?.close());
beforeEach(() => resetFakeCrm(s.crm));

describe('workflow_url on lifecycle answers', () => {
  it('Action Review: create, detail and decision answers link the proposal workflow', async () => {
    const created = await http(s.r.stack.url, 'POST', '/api/action-review/proposals', {
      token: s.r.tokens.rita,
      body: learning(3),
    });
    expect(created.status).toBe(201);
    const id = created.body.data.proposal_id as string;
    expect(created.body.data.workflow_url).toBe(page(`action-review/${id}`));
    expect(created.body.data.workflow_url).toContain('/workflows/action-review%2F');

    const detail = await http(s.r.stack.url, 'GET', path(id), { token: s.r.tokens.rita });
    expect(detail.status).toBe(200);
    expect(detail.body.data.workflow_url).toBe(page(`action-review/${id}`));

    const approved = await http(s.r.stack.url, 'POST', path(id, '/approve'), { token: s.r.tokens.ravi, body: {} });
    expect(approved.status).toBe(200);
    expect(approved.body.proposal.workflow_url).toBe(page(`action-review/${id}`));
  });

  it('CRM merge approval: the request and the read link the crm-merge workflow', async () => {
    const requested = await http(s.r.stack.url, 'POST', APPROVALS, { token: s.r.tokens.rita, body: selection() });
    expect(requested.status, requested.text).toBe(201);
    const id = requested.body.data.approval_id as string;
    expect(requested.body.data.workflow_url).toBe(page(`crm-merge/${id}`));
    const read = await http(s.r.stack.url, 'GET', `${APPROVALS}/${id}`, { token: s.r.tokens.rita });
    expect(read.status).toBe(200);
    expect(read.body.data.workflow_url).toBe(page(`crm-merge/${id}`));
  });

  it('echo job: the run and the read link the echo workflow', async () => {
    const run = await http(s.r.stack.url, 'POST', '/api/jobs/echo', {
      token: s.r.tokens.rita,
      body: { message: 'link me', job_id: 'linked-1' },
    });
    expect(run.status).toBe(200);
    expect(run.body.data.workflow_url).toBe(page('echo/linked-1'));
    const read = await http(s.r.stack.url, 'GET', '/api/jobs/echo/linked-1', { token: s.r.tokens.rita });
    expect(read.body.data.workflow_url).toBe(page('echo/linked-1'));
  });

  it('is null without a configured UI URL, and names the run when given one', () => {
    expect(workflowUrl(loadConfig({}), 'echo/x')).toBeNull();
    const config = loadConfig({ TEMPORAL_UI_URL: 'https://temporal.example.com/ui/', TEMPORAL_NAMESPACE: 'prod ns' });
    expect(workflowUrl(config, 'echo/x', 'run-1')).toBe(
      'https://temporal.example.com/ui/namespaces/prod%20ns/workflows/echo%2Fx/run-1/history',
    );
  });
});
