/**
 * What the machine's CPUs did over a window of a benchmark (Linux `/proc`): this process's share (its main thread's,
 * Temporal's threads' and its other threads' apart), PostgreSQL's processes', every other process's (kernel threads
 * included), the busy time of processes that ended within the window, the time the hypervisor gave to other machines
 * (steal), the idle time, and this process's garbage collections. A load average is a minute's mean; a measure of
 * two seconds is shaped by what ran during those two seconds alone, which this tells.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

/** Clock ticks per second of `/proc`'s CPU times (`USER_HZ`: 100 on x86 and Arm Linux, `getconf CLK_TCK`). */
const TICKS = 100;

interface Reading {
  /** Ticks of user and system time by process id, with its name. */
  procs: Map<string, { name: string; ticks: number }>;
  /** This process's threads' ticks by thread id, with the thread's name. */
  threads: Map<string, { name: string; ticks: number }>;
  /** The machine's ticks: busy, idle (and I/O wait), steal. */
  busy: number;
  idle: number;
  steal: number;
  at: number;
}

/** A process's or thread's name and its user and system ticks so far, from its `stat` file (e.g. `/proc/<pid>/stat`). */
export function statOf(file: string): { name: string; ticks: number } {
  const s = readFileSync(file, 'utf8');
  const close = s.lastIndexOf(')');
  const fields = s.slice(close + 2).split(' ');
  // utime and stime are the file's 14th and 15th fields; the first two are the id and the name in parentheses.
  return { name: s.slice(s.indexOf('(') + 1, close), ticks: Number(fields[11]) + Number(fields[12]) };
}

/** The name and ticks of each process (or thread) listed in `dir` (`/proc`, or a process's `task` folder), by id. */
function statsOf(dir: string): Map<string, { name: string; ticks: number }> {
  const found = new Map<string, { name: string; ticks: number }>();
  for (const id of readdirSync(dir)) {
    if (!/^\d+$/.test(id)) continue;
    try {
      found.set(id, statOf(`${dir}/${id}/stat`));
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

/**
 * Which of this process's threads a thread is: its main thread (JavaScript), Temporal's Rust core (`tokio-runtime-w`,
 * `temporal-real-s`, `workflow-proces`), or another: V8's collector and compilers, libuv's pool and the Temporal
 * worker's workflow threads (Node worker threads), which Node 20 leaves named `node`.
 */
function threadKind(tid: string, name: string): 'main' | 'temporal' | 'other' {
  if (tid === String(process.pid)) return 'main';
  return /^(tokio|temporal|workflow)/.test(name) ? 'temporal' : 'other';
}

function read(): Reading | null {
  let stat: string;
  try {
    stat = readFileSync('/proc/stat', 'utf8');
  } catch {
    return null; // not Linux
  }
  // cpu user nice system idle iowait irq softirq steal ...
  const [user, nice, system, idle, iowait, irq, softirq, steal] = stat
    .split('\n')[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const at = performance.now(); // the machine's ticks' time; the processes' follow within a millisecond or two
  return {
    procs: statsOf('/proc'),
    threads: statsOf(`/proc/${process.pid}/task`),
    busy: user! + nice! + system! + irq! + softirq!,
    idle: idle! + iowait!,
    steal: steal ?? 0,
    at,
  };
}

/** What the CPUs did over a window: ticks (`/proc`'s, 10 ms each), and the window described in one line. */
export interface CpuWindowReading {
  seconds: number;
  /** This process's ticks, and its threads': the main one's, Temporal's Rust core's and the others' (`threadKind`). */
  own: number;
  main: number;
  temporalThreads: number;
  otherThreads: number;
  /** Ticks of PostgreSQL's processes (named `postgres`), and of the busiest of them. */
  postgres: number;
  busiestPostgres: number;
  /** Every other process that ran, by name, busiest first (kernel threads included). */
  others: Array<[string, number]>;
  /**
   * This process's collections as Node reports them: young-generation ones, whole-heap ones, and the incremental
   * marking steps of a whole-heap one, each with its time on the main thread.
   */
  gc: { minor: number; minorMs: number; major: number; majorMs: number; incremental: number; incrementalMs: number };
  /**
   * Busy ticks no process still running accounts for (at least 0): processes ended within the window, the kernel's
   * interrupts. The machine's ticks are sampled and each process's time is rounded to ticks, so a few are noise.
   */
  unaccounted: number;
  /** The machine's ticks given to other machines by the hypervisor, idle (and waiting on I/O), and in all. */
  steal: number;
  idle: number;
  machine: number;
  /** E.g. "2.31 s: this process 78% of a core (its main thread 70%, Temporal's 1%, the others 7%), PostgreSQL 47% (its busiest process 46%), others 1% (temporal 1%), ended meanwhile or the kernel's 0%; steal 0%, idle 37% of the 2 cores; this process's collector paused it 9 times for the young generation (7.5 ms in all) and 0 for the whole heap (0.0 ms), with 0 incremental marking steps (0.0 ms)". */
  line: string;
}

/** This process's garbage collections among `entries`: the young generation's, the whole heap's, incremental marking steps. */
function collections(entries: readonly PerformanceEntry[]): CpuWindowReading['gc'] {
  const gc = { minor: 0, minorMs: 0, major: 0, majorMs: 0, incremental: 0, incrementalMs: 0 };
  for (const e of entries) {
    const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
      gc.minor++;
      gc.minorMs += e.duration;
    } else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
      gc.major++;
      gc.majorMs += e.duration;
    } else if (kind === constants.NODE_PERFORMANCE_GC_INCREMENTAL) {
      gc.incremental++;
      gc.incrementalMs += e.duration;
    }
  }
  return gc;
}

/**
 * Starts a window; the function returned ends it (its readings are taken at once; the collector's entries, which
 * Node delivers on a later turn of the event loop, are awaited). Null off Linux.
 */
export function cpuWindow(cores: number): (() => Promise<CpuWindowReading>) | null {
  const start = read();
  if (!start) return null;
  const seen: PerformanceEntry[] = [];
  const observer = new PerformanceObserver((list) => seen.push(...list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  return async () => {
    const end = read()!;
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setTimeout(resolve, 0));
    observer.disconnect();
    const gc = collections(seen.filter((e) => e.startTime >= start.at && e.startTime <= end.at));
    const seconds = (end.at - start.at) / 1000;
    const pct = (ticks: number) => `${Math.round((100 * ticks) / TICKS / seconds)}%`;
    let own = 0;
    let postgres = 0;
    let busiestPostgres = 0;
    const byName = new Map<string, number>();
    for (const [pid, p] of end.procs) {
      const ticks = p.ticks - (start.procs.get(pid)?.ticks ?? 0);
      if (ticks <= 0) continue;
      if (pid === String(process.pid)) own += ticks;
      else if (p.name === 'postgres') {
        postgres += ticks;
        busiestPostgres = Math.max(busiestPostgres, ticks);
      } else byName.set(p.name, (byName.get(p.name) ?? 0) + ticks);
    }
    const others = [...byName].sort((a, b) => b[1] - a[1]);
    const otherTicks = others.reduce((n, [, t]) => n + t, 0);
    const steal = end.steal - start.steal;
    const idle = end.idle - start.idle;
    const busy = end.busy - start.busy;
    const machine = busy + idle + steal || 1;
    // Busy time no running process accounts for: processes that ended within the window (a compiler run, say),
    // and the kernel's interrupt work. The machine's ticks are sampled and each process's time rounded: a few are noise.
    const unaccounted = Math.max(0, busy - own - postgres - otherTicks);
    const share = (ticks: number) => `${Math.round((100 * ticks) / machine)}%`;
    const byKind = { main: 0, temporal: 0, other: 0 };
    for (const [tid, t] of end.threads)
      byKind[threadKind(tid, t.name)] += Math.max(0, t.ticks - (start.threads.get(tid)?.ticks ?? 0));
    const main = byKind.main;
    const line =
      `${seconds.toFixed(2)} s: this process ${pct(own)} of a core (its main thread ${pct(main)}, Temporal's ${pct(byKind.temporal)}, ` +
      `the others ${pct(byKind.other)}), PostgreSQL ${pct(postgres)} ` +
      `(its busiest process ${pct(busiestPostgres)}), others ${pct(otherTicks)}` +
      (others.length
        ? ` (${others
            .slice(0, 3)
            .map(([name, t]) => `${name} ${pct(t)}`)
            .join(', ')})`
        : '') +
      `, ended meanwhile or the kernel's ${pct(unaccounted)}; steal ${share(steal)}, idle ${share(idle)} of the ${cores} cores; ` +
      `this process's collector paused it ${gc.minor} times for the young generation (${gc.minorMs.toFixed(1)} ms in all) ` +
      `and ${gc.major} for the whole heap (${gc.majorMs.toFixed(1)} ms), with ${gc.incremental} incremental marking steps ` +
      `(${gc.incrementalMs.toFixed(1)} ms)`;
    return {
      seconds,
      own,
      main,
      temporalThreads: byKind.temporal,
      otherThreads: byKind.other,
      postgres,
      busiestPostgres,
      others,
      unaccounted,
      gc,
      steal,
      idle,
      machine,
      line,
    };
  };
}

/** A CPU profile of this process while `work` runs (`node:inspector`, a sample every `intervalUs` µs). */
export async function cpuProfile(work: () => Promise<void>, intervalUs = 25): Promise<unknown> {
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
    await session.post('Profiler.start');
    try {
      await work();
    } catch (err) {
      await session.post('Profiler.stop');
      throw err;
    }
    return (await session.post('Profiler.stop')).profile;
  } finally {
    session.disconnect();
  }
}
