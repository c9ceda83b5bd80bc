/**
 * Every suite over HTTP checks what it sees against /openapi.json and the response rules
 * (`tests/helpers/status-contract.ts`, attached by `startStack`): undocumented statuses, a 2xx saying
 * `success` false where the spec does not, tool results off the tool-result rule. This checks the
 * checker on a bare server answering chosen statuses and bodies.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { watchStatusContract } from '../helpers/status-contract.js';

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  res.statusCode = Number(url.searchParams.get('status') ?? 200);
  const body = url.searchParams.get('body');
  if (body !== null) res.setHeader('content-type', 'application/json; charset=utf-8');
  // Written in two pieces, as a streamed body would be.
  const text = body ?? '{}';
  res.write(text.slice(0, 3));
  res.end(text.slice(3));
});
const contract = watchStatusContract(server);
let base: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Sends a request whose answer carries `body` (as JSON) with `status`. */
const answer = (method: string, path: string, body: unknown, status = 200) =>
  fetch(`${base}${path}?status=${status}&body=${encodeURIComponent(JSON.stringify(body))}`, { method });
const toolCall = (tool: string, result: unknown) =>
  answer('POST', '/api/tool_call', { success: true, data: { tool, result } });

describe('status contract watcher', () => {
  it('records a status an operation does not document, once, and nothing for documented or unrouted ones', async () => {
    await fetch(`${base}/api/jobs/echo/job-1?status=404`); // documented (path parameter)
    await fetch(`${base}/healthz?status=200`); // documented
    await fetch(`${base}/no/such/route?status=418`); // no operation: the router's own 404/405 territory
    await fetch(`${base}/api/jobs/echo/job-1?status=418`);
    await fetch(`${base}/api/jobs/echo/job-2?status=418`);
    // 'finish' fires on the server's side of the same event loop: wait for it rather than for time.
    await vi.waitFor(() =>
      expect(contract.violations()).toEqual(['GET /api/jobs/echo/{job_id} answered 418, which it does not document']),
    );
  });
});

describe('success false in a 2xx, and tool results', () => {
  it('records success false anywhere in a 2xx, except at the top of a route whose spec section states it', async () => {
    const before = contract.violations().length;
    await answer('GET', '/api/jobs/echo/job-1', { success: false, data: null });
    await answer('GET', '/api/jobs/echo/job-3', { success: true, data: { step: { success: false } } });
    await answer('GET', '/api/jobs/echo/job-4', { success: false }, 404); // a refusal status: not this rule's business
    const andExecute = '/api/action-review/proposals/p1/approve-and-execute';
    await answer('POST', andExecute, { success: false, decided: false, refusal_reason: 'already_decided' });
    await answer('POST', andExecute, { success: true, proposal: { receipt: { success: false } } });
    await vi.waitFor(() =>
      expect(contract.violations().slice(before).sort()).toEqual(
        [
          'GET /api/jobs/echo/{job_id} answered 2xx with success false (a refusal is a 4xx/5xx error envelope)',
          'GET /api/jobs/echo/{job_id} answered 2xx with data.step.success false (a refusal is a 4xx/5xx error envelope)',
          'POST /api/action-review/proposals/{proposal_id}/approve-and-execute answered 2xx with proposal.receipt.success false (a refusal is a 4xx/5xx error envelope)',
        ].sort(),
      ),
    );
  });

  it('holds tool results to snake_case keys and no success false, but for the shapes the spec states', async () => {
    const before = contract.violations().length;
    // Stated by the spec: the document-index tool's casing and DELETE_INDEX failure, the execute answer.
    await toolCall('_document_index', { Success: true, TotalCount: 2, start: 0, Documents: [] });
    await toolCall('_document_index', { Success: false, Error: 'surviving collections: a_index' });
    await toolCall('action_review', { success: false, claimed: false, final_status: null, refusal_reason: 'x' });
    // Off the rule.
    await toolCall('list_etl_jobs', { TotalCount: 1, projectJobs: [] });
    await toolCall('enhancement_action', { success: false, error: { code: 'CODING_AGENT_UNSUPPORTED' } });
    await toolCall('_document_index', { Success: false });
    await toolCall('blueprints', ['not', 'an', 'object']);
    await vi.waitFor(() =>
      expect(contract.violations().slice(before).sort()).toEqual(
        [
          'POST /api/tool_call: tool result list_etl_jobs: key "TotalCount" is not snake_case',
          'POST /api/tool_call: tool result list_etl_jobs: key "projectJobs" is not snake_case',
          'POST /api/tool_call: tool result enhancement_action: success is false in a result (a refusal is an error, not a result)',
          'POST /api/tool_call: tool result _document_index: Success is false in a result (a refusal is an error, not a result)',
          'POST /api/tool_call: tool result blueprints: the result is not a JSON object',
        ].sort(),
      ),
    );
  });
});
