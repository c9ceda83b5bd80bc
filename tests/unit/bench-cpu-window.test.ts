/**
 * The benchmarks' CPU window (`bench/lib/cpu-window.ts`): what the machine's CPUs did while a measure ran, read
 * from /proc. This process's work and another process's are told apart, each named, and the machine's steal and
 * idle shares are given.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { cpuProfile, cpuWindow } from '../../bench/lib/cpu-window.js';

/** User and system ticks of a process so far (`/proc/<pid>/stat`). */
function ticksOf(pid: number): number {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** Spends `ticks` of this process's CPU (10 ms each), however long the machine takes to give them. */
function burn(ticks: number): void {
  const until = ticksOf(process.pid) + ticks;
  let x = 0;
  while (ticksOf(process.pid) < until) for (let i = 0; i < 100_000; i++) x += Math.sqrt(i);
  expect(x).toBeGreaterThan(0);
}

describe.runIf(process.platform === 'linux')('cpuWindow', () => {
  it("names this process's share, another process's by name, and the machine's steal and idle", async () => {
    const window = cpuWindow(os.cpus().length)!;
    expect(window).not.toBeNull();
    // Another process busy meanwhile: a shell spinning until it has had 20 ticks, then killed.
    const spinner = spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' });
    try {
      await expect.poll(() => ticksOf(spinner.pid!), { timeout: 30_000 }).toBeGreaterThanOrEqual(20);
    } finally {
      spinner.kill('SIGKILL');
    }
    burn(20);
    const reading = window();
    expect(reading.own).toBeGreaterThanOrEqual(20);
    expect(reading.main).toBeGreaterThanOrEqual(20); // the burn ran on the main thread
    expect(reading.main).toBeLessThanOrEqual(reading.own);
    // The shell's ticks, under its name (its last ones may have come after the kill's reading: at least most).
    expect(new Map(reading.others).get('sh') ?? 0).toBeGreaterThanOrEqual(15);
    expect(reading.machine).toBeGreaterThanOrEqual(reading.own + 15);
    expect(reading.line).toMatch(
      /^\d+\.\d\d s: this process \d+% of a core \(its main thread \d+%\), PostgreSQL \d+% \(its busiest process \d+%\), others \d+%/,
    );
    expect(reading.line).toMatch(new RegExp(`; steal \\d+%, idle \\d+% of the ${os.cpus().length} cores$`));
  });

  it('profiles the work given: its functions are in the profile', async () => {
    function spinForTheProfile(): number {
      let x = 0;
      for (let i = 0; i < 2_000_000; i++) x += Math.sqrt(i);
      return x;
    }
    const profile = (await cpuProfile(async () => {
      for (let i = 0; i < 20; i++) spinForTheProfile();
    })) as { nodes: Array<{ callFrame: { functionName: string } }>; samples: number[] };
    expect(profile.samples.length).toBeGreaterThan(0);
    expect(profile.nodes.map((n) => n.callFrame.functionName)).toContain('spinForTheProfile');
  });
});
