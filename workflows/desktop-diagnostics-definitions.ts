// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).

/** The Schedule starting the automatic diagnostics attempt (spec, Limits: at most one an hour). */
export const DESKTOP_DIAGNOSTICS_SCHEDULE_ID = 'desktop-diagnostics-auto';
export const DESKTOP_DIAGNOSTICS_INTERVAL_SECONDS = 3600;
