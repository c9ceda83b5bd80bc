/**
 * A tool call retried after a worker crash (same turn, same call id) must not act twice: the
 * toolbox passes the call's idempotency key and effectful tools answer their first result.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentToolbox } from '../../shared/tools/toolbox.js';
import type { Principal } from '../../shared/auth/principal.js';
import { query } from '../helpers/db.js';
import { startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.close();
});

const eve: Principal = {
  kind: 'agent',
  id: 'eve',
  tenant: 'default',
  displayName: 'agent eve',
  roles: [],
  permissions: new Set(),
  credential: 'sandbox_token',
  botId: 'eve',
  threadId: 't-retry',
};

describe('retried agent tool calls', () => {
  it('store an agent file once per call', async () => {
    const toolbox = createAgentToolbox(stack.api.deps);
    const args = { action: 'WRITE_FILE', name: 'out.txt', content: 'hello' };
    const first = await toolbox.invoke('agent_files', args, eve, 'turn-1:tool:call_1');
    const again = await toolbox.invoke('agent_files', args, eve, 'turn-1:tool:call_1');
    expect(first.ok).toBe(true);
    expect(again.result).toEqual(first.result);
    const other = await toolbox.invoke('agent_files', args, eve, 'turn-1:tool:call_2');
    expect((other.result as { file_id: string }).file_id).not.toBe((first.result as { file_id: string }).file_id);
    expect(await query(stack.db.url, `select count(*)::int as n from downloads where file_name = 'out.txt'`)).toEqual([
      { n: 2 },
    ]);
  });

  it('create one Action Review proposal per call', async () => {
    const toolbox = createAgentToolbox(stack.api.deps);
    const args = {
      action: 'CREATE_PROPOSAL',
      action_type: 'learning.adopt.v1',
      payload: { learning_id: 'l-retry', title: 'Retry', content: 'Once only' },
      expected_effect: 'adopt once',
    };
    const first = await toolbox.invoke('action_review', args, eve, 'turn-2:tool:call_1');
    const again = await toolbox.invoke('action_review', args, eve, 'turn-2:tool:call_1');
    expect(first.ok).toBe(true);
    const id = (first.result as { proposal: { proposal_id: string } }).proposal.proposal_id;
    expect((again.result as { proposal: { proposal_id: string } }).proposal.proposal_id).toBe(id);
    expect(
      await query(
        stack.db.url,
        `select count(*)::int as n from action_review_proposals where payload->>'learning_id' = 'l-retry'`,
      ),
    ).toEqual([{ n: 1 }]);
  });
});
