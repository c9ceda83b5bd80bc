/**
 * Every suite over HTTP checks the statuses it sees against /openapi.json (`tests/helpers/status-contract.ts`,
 * attached by `startStack`): this checks the checker on a bare server answering chosen statuses.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { watchStatusContract } from '../helpers/status-contract.js';

const server = createServer((req, res) => {
  res.statusCode = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('status') ?? 200);
  res.end('{}');
});
const contract = watchStatusContract(server);
let base: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

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
