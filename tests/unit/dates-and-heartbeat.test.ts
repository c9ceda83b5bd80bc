import { setTimeout as sleep } from 'node:timers/promises';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { withHeartbeat } from '../../activities/heartbeat.js';
import { toIso } from '../../shared/dates.js';

describe('toIso', () => {
  it('writes dates as UTC ISO 8601 and keeps null', () => {
    expect(toIso(new Date(Date.UTC(2026, 10, 22, 10, 0, 0)))).toBe('2026-11-22T10:00:00.000Z');
    // Raw SQL may hand back strings (with an offset) or epoch milliseconds.
    expect(toIso('2026-11-22 11:00:00+01')).toBe('2026-11-22T10:00:00.000Z');
    expect(toIso(0)).toBe('1970-01-01T00:00:00.000Z');
    expect(toIso(null)).toBeNull();
    expect(toIso(undefined)).toBeNull();
  });
});

describe('withHeartbeat', () => {
  it('heartbeats on its interval while the work runs, answers its result, and stops after', async () => {
    const env = new MockActivityEnvironment();
    let beats = 0;
    env.on('heartbeat', () => (beats += 1));
    const result = await env.run(() =>
      withHeartbeat(20, async () => {
        await sleep(130);
        return 'done';
      }),
    );
    expect(result).toBe('done');
    expect(beats).toBeGreaterThanOrEqual(3);
    const after = beats;
    await sleep(80);
    expect(beats).toBe(after);
  });

  it('stops heartbeating when the work fails, and passes the failure on', async () => {
    const env = new MockActivityEnvironment();
    let beats = 0;
    env.on('heartbeat', () => (beats += 1));
    const failure = await env
      .run(() =>
        withHeartbeat(20, async () => {
          await sleep(70);
          throw new Error('model unavailable');
        }),
      )
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toBe('model unavailable');
    const after = beats;
    expect(after).toBeGreaterThanOrEqual(1);
    await sleep(80);
    expect(beats).toBe(after);
  });
});
