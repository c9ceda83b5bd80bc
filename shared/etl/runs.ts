// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/** ETL run states and the one view `run_etl_job`, `get_etl_run` and the remote runner's `/run/{run_id}` answer. */

export const ETL_RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'timed_out', 'interrupted'] as const;
export type EtlRunStatus = (typeof ETL_RUN_STATUSES)[number];
export const ETL_TERMINAL_STATUSES: readonly EtlRunStatus[] = ['succeeded', 'failed', 'timed_out', 'interrupted'];

/** Characters of output one page answers by default, and at most. */
export const ETL_OUTPUT_PAGE_DEFAULT = 16_000;
export const ETL_OUTPUT_PAGE_MAX = 64_000;

export interface EtlOutputPage {
  text: string;
  offset: number;
  /** Where the next page starts; null when this page reaches the end of what is kept so far. */
  next_offset: number | null;
  total_chars: number;
  /** Bytes the job wrote in all; more than is kept when `truncated`. */
  bytes_seen: number;
  truncated: boolean;
}

export interface EtlRunView {
  run_id: string;
  job_name: string;
  status: EtlRunStatus;
  context: string | null;
  /** Names of the context parameters given (values are never answered: they may carry credentials). */
  context_params: string[];
  timeout_seconds: number;
  exit_code: number | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  output: EtlOutputPage;
}

/** One page of the kept output. */
export function pageOutput(
  text: string,
  meta: { bytes_seen: number; truncated: boolean },
  offset = 0,
  limit = ETL_OUTPUT_PAGE_DEFAULT,
): EtlOutputPage {
  const start = Math.min(offset, text.length);
  const end = Math.min(text.length, start + limit);
  return {
    text: text.slice(start, end),
    offset: start,
    next_offset: end < text.length ? end : null,
    total_chars: text.length,
    bytes_seen: meta.bytes_seen,
    truncated: meta.truncated,
  };
}
