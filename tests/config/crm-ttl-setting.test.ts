/**
 * `crm.max_approval_ttl_seconds` saved at run time caps the next merge approval without a restart,
 * and each approval's workflow records the cap it was requested under (input and memo).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crmMergeWorkflowId } from '../../workflows/crm-merge-definitions.js';
import { http } from '../helpers/stack.js';
import {
  APPROVALS,
  createJwtConnection,
  resetFakeCrm,
  selection,
  startCrmStack,
  type CrmStack,
} from '../crm/support.js';

let s: CrmStack;

beforeAll(async () => {
  s = await startCrmStack({ CRM_MAX_APPROVAL_TTL_SECONDS: '7200' });
  await createJwtConnection(s);
  resetFakeCrm(s.crm);
});
afterAll(async () => s?.close());

const request = async () => {
  const res = await http(s.r.stack.url, 'POST', APPROVALS, {
    token: s.r.tokens.rita,
    body: { ...selection(), ttl_seconds: 10 ** 6 },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.data as { approval_id: string; ttl_seconds: number };
};

const recorded = async (approvalId: string) => {
  const handle = s.r.stack.api.deps.temporal.workflow.getHandle(crmMergeWorkflowId(approvalId));
  const d = await handle.describe();
  const history = await handle.fetchHistory();
  const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
  return {
    memo: d.memo,
    input: JSON.parse(Buffer.from(input as Uint8Array).toString('utf8')) as Record<string, unknown>,
  };
};

describe('the CRM approval TTL cap as a run-time setting', () => {
  it('a cap saved through apply-partial caps the next approval, which records it', async () => {
    const first = await request();
    expect(first.ttl_seconds).toBe(7200);
    expect(await recorded(first.approval_id)).toMatchObject({
      memo: { ttl_seconds: 7200, max_approval_ttl_seconds: 7200 },
      input: { ttlSeconds: 7200, maxTtlSeconds: 7200 },
    });

    const applied = await http(s.r.stack.url, 'POST', '/api/config/setup/apply-partial', {
      token: s.admin,
      body: { content: 'crm:\n  max_approval_ttl_seconds: 1800\n' },
    });
    expect(applied.body.success, applied.text).toBe(true);

    const second = await request();
    expect(second.ttl_seconds).toBe(1800);
    expect(await recorded(second.approval_id)).toMatchObject({
      memo: { ttl_seconds: 1800, max_approval_ttl_seconds: 1800 },
      input: { ttlSeconds: 1800, maxTtlSeconds: 1800 },
    });
    // The first approval keeps the lifetime it was granted.
    expect((await recorded(first.approval_id)).input).toMatchObject({ ttlSeconds: 7200, maxTtlSeconds: 7200 });
  });
});
