/** The awaiting-input limits (spec, Limits): 50 visible missions described, 500 rows read per waiting status. */
import { describe, expect, it } from 'vitest';
import {
  AWAITING_INPUT_MAX_MISSIONS,
  AWAITING_INPUT_ROWS_PER_STATE,
  selectAwaiting,
} from '../../shared/missions/service.js';
import type { ProjectRow } from '../../shared/missions/store.js';

const row = (n: number, state: 'IN_PROGRESS_NEEDING_INPUT' | 'STUCK', requestedBy = 'u1'): ProjectRow => ({
  id: `prj_${n.toString(16).padStart(32, '0')}`,
  tenant: 't1',
  name: `m${n}`,
  blueprint_name: 'bp',
  blueprint_id: 'bp_1',
  blueprint_commit: 'c',
  blueprint_version_number: null,
  parameters: {},
  status: 'running',
  waiting_state: state,
  closed_reason: null,
  requested_by: requestedBy,
  root_thread_id: null,
  agents: [],
  blueprint_phase: 'p',
  phases_total: 1,
  phases_done: 0,
  progress: 0,
  started_at: new Date(0),
  updated_at: new Date(1_000_000 - n),
  closed_at: null,
});
const rows = (from: number, count: number, state: 'IN_PROGRESS_NEEDING_INPUT' | 'STUCK', who?: (n: number) => string) =>
  Array.from({ length: count }, (_, i) => row(from + i, state, who?.(from + i)));
const all = async () => true;

describe('awaiting-input limits', () => {
  it('uses the spec figures', () => {
    expect(AWAITING_INPUT_MAX_MISSIONS).toBe(50);
    expect(AWAITING_INPUT_ROWS_PER_STATE).toBe(500);
  });

  it('describes at most 50 visible missions, newest change first, truncated when more are visible', async () => {
    const r = await selectAwaiting([rows(0, 40, 'IN_PROGRESS_NEEDING_INPUT'), rows(100, 40, 'STUCK')], all);
    expect(r.rows).toHaveLength(50);
    expect(r.truncated).toBe(true);
    const updated = r.rows.map((x) => x.updated_at.getTime());
    expect([...updated].sort((a, b) => b - a)).toEqual(updated);
    expect(r.rows[0]!.id).toBe(row(0, 'STUCK').id);
  });

  it('is not truncated at exactly 50 visible missions', async () => {
    const r = await selectAwaiting([rows(0, 30, 'IN_PROGRESS_NEEDING_INPUT'), rows(100, 20, 'STUCK')], all);
    expect(r.rows).toHaveLength(50);
    expect(r.truncated).toBe(false);
  });

  it('reads at most 500 rows per waiting status: a status with more is truncated even if few are visible', async () => {
    // 501 rows read (the query asks for one more than the limit): the 501st is never looked at.
    const needing = rows(0, 501, 'IN_PROGRESS_NEEDING_INPUT', (n) => (n === 500 || n < 3 ? 'me' : 'other'));
    const seen: string[] = [];
    const r = await selectAwaiting([needing, []], async (x) => (seen.push(x.id), x.requested_by === 'me'));
    expect(r.rows.map((x) => x.name)).toEqual(['m0', 'm1', 'm2']);
    expect(r.truncated).toBe(true);
    expect(seen).toHaveLength(500);
    expect(seen).not.toContain(row(500, 'IN_PROGRESS_NEEDING_INPUT').id);
  });

  it('filters invisible missions before counting', async () => {
    const r = await selectAwaiting(
      [rows(0, 120, 'IN_PROGRESS_NEEDING_INPUT', (n) => (n % 3 === 0 ? 'me' : 'other')), []],
      async (x) => x.requested_by === 'me',
    );
    expect(r.rows).toHaveLength(40);
    expect(r.rows.every((x) => x.requested_by === 'me')).toBe(true);
    expect(r.truncated).toBe(false);
  });
});
