import type { ProposalSubject } from './types.js';

/**
 * Which proposals a caller may see. A proposal is visible when every subject it touches (its
 * conversation thread, its explicit subject) is visible to the caller; the list probes at most
 * `budget` distinct subjects and says why it is incomplete, one reason by the spec's precedence.
 */

export const INCOMPLETE_REASONS = [
  'probe_failure',
  'probe_budget',
  'handler_unavailable',
  'row_unreadable',
  'scan_ceiling',
] as const;
export type IncompleteReason = (typeof INCOMPLETE_REASONS)[number];

/** Spec, Limits: up to 100 subjects probed per list. */
export const PROBE_BUDGET = 100;

export interface Viewer {
  kind: string;
  id: string;
  tenant: string;
}

/** Answers whether one subject is visible to the viewer; throwing means the probe failed. */
export type SubjectProbe = (subject: ProposalSubject, viewer: Viewer) => Promise<boolean>;

export function pickIncompleteReason(reasons: ReadonlySet<IncompleteReason>): IncompleteReason | null {
  return INCOMPLETE_REASONS.find((r) => reasons.has(r)) ?? null;
}

export interface FilterResult<R> {
  visible: R[];
  reasons: Set<IncompleteReason>;
  /** True when rows exist that were not looked at (budget or ceiling reached). */
  truncated: boolean;
}

export async function filterVisible<R>(
  rows: readonly R[],
  options: {
    viewer: Viewer;
    /** The row's subjects, or null when the row cannot be read. */
    subjectsOf: (row: R) => ProposalSubject[] | null;
    probes: Readonly<Record<string, SubjectProbe>>;
    budget: number;
  },
): Promise<FilterResult<R>> {
  const cache = new Map<string, boolean | 'failed' | 'unhandled'>();
  const reasons = new Set<IncompleteReason>();
  const visible: R[] = [];
  let probed = 0;
  for (const row of rows) {
    const subjects = options.subjectsOf(row);
    if (!subjects) {
      reasons.add('row_unreadable');
      continue;
    }
    let rowVisible = true;
    for (const subject of subjects) {
      const key = `${subject.kind}:${subject.id}`;
      let answer = cache.get(key);
      if (answer === undefined) {
        const probe = options.probes[subject.kind];
        if (!probe) answer = 'unhandled';
        else if (probed >= options.budget) {
          reasons.add('probe_budget');
          return { visible, reasons, truncated: true };
        } else {
          probed++;
          answer = await probe(subject, options.viewer).catch(() => 'failed' as const);
        }
        cache.set(key, answer);
      }
      if (answer === 'failed') reasons.add('probe_failure');
      if (answer === 'unhandled') reasons.add('handler_unavailable');
      if (answer !== true) rowVisible = false;
    }
    if (rowVisible) visible.push(row);
  }
  return { visible, reasons, truncated: false };
}
