// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).

/** The Schedule starting the automatic diagnostics attempt (spec, Limits: at most one an hour). */
export const DESKTOP_DIAGNOSTICS_SCHEDULE_ID = 'desktop-diagnostics-auto';
export const DESKTOP_DIAGNOSTICS_INTERVAL_SECONDS = 3600;

/** What an upload sent (the manual send answers it; the automatic attempt's `sent` outcome carries it). */
export interface DiagnosticsSendResult {
  preview_id: string;
  upload_id: string;
  gzip: boolean;
  chunks_sent: number;
  bytes_sent: number;
  chunk_bytes: number;
  truncated: boolean;
}

/** The automatic attempt's outcome: the workflow's result and its `PlatformStatus`. */
export type AutoDiagnosticsOutcome =
  | { outcome: 'desktop_off' | 'disabled' | 'not_activated' | 'too_soon' | 'unchanged' }
  | { outcome: 'sent'; result: DiagnosticsSendResult }
  | { outcome: 'failed'; message: string };
