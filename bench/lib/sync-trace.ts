/**
 * `BENCH_SYNC_TRACE=1` in the managed-sync benchmark: where one sync's wall time went, from the
 * client's clock and the workflow's history (event times relative to the request), and the CPU the
 * benchmark process (API, worker and the benchmark itself), its live children (PostgreSQL, the Temporal
 * dev server) and its reaped ones (`git http-backend` and the `git` it runs) used meanwhile.
 */
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import type { Client } from '@temporalio/client';

/** Clock ticks per second of /proc's CPU times (100 on Linux). */
const TICKS = 100;

interface ProcStat {
  pid: number;
  ppid: number;
  comm: string;
  /** utime + stime, and the reaped children's cutime + cstime, in ms. */
  own: number;
  reaped: number;
}

function procStat(pid: number | 'self'): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = text.lastIndexOf(')');
    const comm = text.slice(text.indexOf('(') + 1, close);
    const f = text.slice(close + 2).split(' ');
    // After the name: state ppid … utime (14th field overall = index 11 here) stime cutime cstime.
    const ms = (i: number) => (Number(f[i]) * 1000) / TICKS;
    return {
      pid: Number(text.slice(0, text.indexOf(' '))),
      ppid: Number(f[1]),
      comm,
      own: ms(11) + ms(12),
      reaped: ms(13) + ms(14),
    };
  } catch {
    return null;
  }
}

/** CPU ms by group: this process, its reaped children, and each live descendant command. */
export function cpuSnapshot(): Map<string, number> {
  const out = new Map<string, number>();
  if (os.platform() !== 'linux') return out;
  const self = procStat('self');
  if (!self) return out;
  out.set('bench process (API + worker)', self.own);
  out.set('reaped children (git http-backend, git)', self.reaped);
  const all = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => procStat(Number(d)))
    .filter((s): s is ProcStat => s !== null);
  const children = new Map<number, ProcStat[]>();
  for (const s of all) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
  const walk = (pid: number, group: string | null) => {
    for (const c of children.get(pid) ?? []) {
      const g = group ?? c.comm;
      out.set(g, (out.get(g) ?? 0) + c.own + c.reaped);
      walk(c.pid, g);
    }
  };
  walk(self.pid, null);
  return out;
}

const fmtMs = (ms: number) => `${ms.toFixed(0)} ms`;

/**
 * The trace of one sync that ran between `startedAt` and `endedAt` (epoch ms, the client's clock):
 * each history event at its offset from the request, and the CPU used by group between `before` and `after`.
 */
export async function syncTrace(
  client: Client,
  workflowId: string,
  startedAt: number,
  endedAt: number,
  before: Map<string, number>,
  after: Map<string, number>,
): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
    Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
  const lines = [`trace of ${workflowId} (wall ${fmtMs(endedAt - startedAt)}; offsets from the request):`];
  let prev = startedAt;
  for (const e of history.events ?? []) {
    const at = ms(e.eventTime);
    const attrs = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]);
    const type = attrs?.replace(/EventAttributes$/, '') ?? String(e.eventType);
    const activity = e.activityTaskScheduledEventAttributes?.activityType?.name;
    lines.push(`  +${fmtMs(at - startedAt)} (+${fmtMs(at - prev)}) ${type}${activity ? ` ${activity}` : ''}`);
    prev = at;
  }
  lines.push(`  +${fmtMs(endedAt - startedAt)} (+${fmtMs(endedAt - prev)}) answer received by the client`);
  lines.push(`  ${cpuSpent(before, after)}`);
  return lines.join('\n');
}

/** The CPU used by group between two snapshots. */
export function cpuSpent(before: Map<string, number>, after: Map<string, number>): string {
  const cpu = [...after]
    .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${fmtMs(v)}`);
  return `CPU meanwhile: ${cpu.join(', ')}`;
}
