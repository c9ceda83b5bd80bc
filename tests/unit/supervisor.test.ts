/**
 * The restart rules of `npm start`'s supervisor (scripts/lib/supervisor.ts), with a fake process and a
 * fake clock: each `sleep` moves the clock on and returns at once, and the test decides how long a
 * run lasted before it "exits". No real processes, no real time.
 */
import { describe, expect, it } from 'vitest';
import { defaultRestartPolicy, restartDelay, Supervisor, type Clock, type Run } from '../../scripts/lib/supervisor.js';

class FakeClock implements Clock {
  t = 1_000_000;
  sleeps: number[] = [];
  now = () => this.t;
  sleep = async (ms: number) => {
    this.sleeps.push(ms);
    this.t += ms;
  };
}

class FakeRun implements Run {
  stopCalls = 0;
  private end: (how: string) => void = () => {};
  readonly exited = new Promise<string>((resolve) => (this.end = resolve));
  exit(how: string) {
    this.end(how);
  }
  async stop() {
    this.stopCalls++;
    this.end('code 0');
  }
}

/** start() for the supervisor: every call makes a new FakeRun (or fails, while `failing` is set). */
class FakeSpawner {
  runs: FakeRun[] = [];
  failing: string | undefined;
  attempts = 0;
  private waiters: Array<() => void> = [];
  start = async (): Promise<Run> => {
    this.attempts++;
    const wake = this.waiters.splice(0);
    try {
      if (this.failing) throw new Error(this.failing);
      const run = new FakeRun();
      this.runs.push(run);
      return run;
    } finally {
      for (const w of wake) w();
    }
  };
  /** Resolves once start() has been called `n` times in all (and its run handed over). */
  async attempted(n: number): Promise<void> {
    while (this.attempts < n) await new Promise<void>((resolve) => this.waiters.push(resolve));
    await new Promise((r) => setImmediate(r)); // let the supervisor take the run
  }
}

function setup(policy = {}) {
  const clock = new FakeClock();
  const spawner = new FakeSpawner();
  const lines: string[] = [];
  const gaveUp: string[] = [];
  const supervisor = new Supervisor({
    name: 'worker',
    start: spawner.start,
    log: (line) => lines.push(line),
    onGiveUp: (reason) => gaveUp.push(reason),
    clock,
    policy,
  });
  return { clock, spawner, lines, gaveUp, supervisor };
}

describe('restartDelay', () => {
  it('doubles from 0.5 s and stops at 30 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => restartDelay(n))).toEqual([
      500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000,
    ]);
  });
});

describe('Supervisor', () => {
  it('restarts a process that exits, with a doubling delay, and says so', async () => {
    const { clock, spawner, lines, gaveUp, supervisor } = setup();
    await supervisor.start();
    for (let i = 0; i < 3; i++) {
      clock.t += 20_000; // ran 20 s: not "right after start", not yet stable
      spawner.runs[i]!.exit('SIGKILL');
      await spawner.attempted(i + 2);
    }
    expect(spawner.runs).toHaveLength(4);
    expect(clock.sleeps).toEqual([500, 1000, 2000]);
    expect(lines).toEqual([
      'worker exited (SIGKILL); restarting in 0.5 s (restart 1)',
      'worker restarted',
      'worker exited (SIGKILL); restarting in 1 s (restart 2)',
      'worker restarted',
      'worker exited (SIGKILL); restarting in 2 s (restart 3)',
      'worker restarted',
    ]);
    expect(supervisor.restarts).toBe(3);
    expect(gaveUp).toEqual([]);
    await supervisor.stop();
    expect(spawner.runs[3]!.stopCalls).toBe(1);
  });

  it('caps the delay at 30 s and starts the backoff over after a stable run', async () => {
    const { clock, spawner, supervisor } = setup();
    await supervisor.start();
    for (let i = 0; i < 8; i++) {
      clock.t += 20_000;
      spawner.runs[i]!.exit('code 1');
      await spawner.attempted(i + 2);
    }
    expect(clock.sleeps).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    clock.t += defaultRestartPolicy.stableAfterMs; // this run stayed up a minute
    spawner.runs[8]!.exit('code 1');
    await spawner.attempted(10);
    expect(clock.sleeps.at(-1)).toBe(500);
    await supervisor.stop();
  });

  it('gives up after 5 exits in a row each within 10 s of its start, and restarts nothing after', async () => {
    const { clock, spawner, lines, gaveUp, supervisor } = setup();
    await supervisor.start();
    for (let i = 0; i < 4; i++) {
      clock.t += 9_000;
      spawner.runs[i]!.exit('code 1');
      await spawner.attempted(i + 2);
    }
    expect(gaveUp).toEqual([]);
    clock.t += 9_000;
    spawner.runs[4]!.exit('code 1');
    await supervisor.settled();
    expect(gaveUp).toEqual(['worker exited (code 1), the 5th time in a row within 10 s of its start; giving up']);
    expect(lines.at(-1)).toBe(gaveUp[0]);
    expect(spawner.attempts).toBe(5);
    expect(clock.sleeps).toEqual([500, 1000, 2000, 4000]);
  });

  it('does not give up while the quick exits are not in a row', async () => {
    const { clock, spawner, gaveUp, supervisor } = setup();
    await supervisor.start();
    // 4 quick exits, one long run, 4 quick exits again: never 5 in a row.
    const uptimes = [1_000, 1_000, 1_000, 1_000, 15_000, 1_000, 1_000, 1_000, 1_000];
    for (const [i, up] of uptimes.entries()) {
      clock.t += up;
      spawner.runs[i]!.exit('code 1');
      await spawner.attempted(i + 2);
    }
    expect(gaveUp).toEqual([]);
    expect(spawner.runs).toHaveLength(10);
    await supervisor.stop();
  });

  it('counts a restart that fails to start as failing right after start', async () => {
    const { clock, spawner, lines, gaveUp, supervisor } = setup();
    await supervisor.start();
    spawner.failing = 'port 7233 is in use';
    clock.t += 20_000;
    spawner.runs[0]!.exit('SIGKILL');
    await supervisor.settled();
    expect(spawner.attempts).toBe(6); // the first start (a 20 s run, not quick), then 5 failed restarts in a row: give up
    expect(lines).toContain('worker failed to start again (port 7233 is in use); restarting in 1 s (restart 2)');
    expect(gaveUp).toHaveLength(1);
    expect(gaveUp[0]).toContain('worker failed to start again (port 7233 is in use), the 5th time in a row');
  });

  it('rejects when the first start fails, and supervises nothing', async () => {
    const { spawner, supervisor } = setup();
    spawner.failing = 'no such binary';
    await expect(supervisor.start()).rejects.toThrow('no such binary');
    expect(spawner.attempts).toBe(1);
  });

  it('never restarts after stop(): the process stops, and its exit is not a crash', async () => {
    const { spawner, lines, gaveUp, supervisor } = setup();
    await supervisor.start();
    await supervisor.stop();
    await supervisor.settled();
    expect(spawner.runs[0]!.stopCalls).toBe(1);
    expect(spawner.attempts).toBe(1);
    expect(lines).toEqual([]);
    expect(gaveUp).toEqual([]);
  });

  it('cancels a restart that is waiting out its backoff when stopped', async () => {
    const clock = new FakeClock();
    let wakeSleeper: () => void = () => {};
    clock.sleep = (ms) => {
      clock.sleeps.push(ms);
      return new Promise<void>((resolve) => (wakeSleeper = resolve)); // a backoff that never ends by itself
    };
    const spawner = new FakeSpawner();
    const supervisor = new Supervisor({ name: 'API', start: spawner.start, log: () => {}, onGiveUp: () => {}, clock });
    await supervisor.start();
    spawner.runs[0]!.exit('SIGKILL');
    while (clock.sleeps.length === 0) await new Promise((r) => setImmediate(r));
    await supervisor.stop();
    await supervisor.settled();
    wakeSleeper();
    await new Promise((r) => setImmediate(r));
    expect(spawner.attempts).toBe(1);
  });

  it('stops a restart that was starting when stop() came', async () => {
    const clock = new FakeClock();
    const run = new FakeRun();
    let finishStart: (r: Run) => void = () => {};
    let calls = 0;
    const first = new FakeRun();
    const supervisor = new Supervisor({
      name: 'PostgreSQL',
      start: () => (++calls === 1 ? Promise.resolve(first) : new Promise<Run>((resolve) => (finishStart = resolve))),
      log: () => {},
      onGiveUp: () => {},
      clock,
    });
    await supervisor.start();
    first.exit('SIGKILL');
    while (calls < 2) await new Promise((r) => setImmediate(r));
    const stopping = supervisor.stop(); // the restart is still starting
    finishStart(run);
    await stopping;
    await supervisor.settled();
    expect(run.stopCalls).toBe(1);
    expect(calls).toBe(2);
  });
});
