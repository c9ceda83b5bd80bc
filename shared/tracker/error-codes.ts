// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Error codes of the issue-tracker client (`TrackerReadError`).
 * @error-codes: a family module (docs/architecture.md "Error codes"); the wire string is the key, in the spec's casing.
 */
export const TrackerCodes = {
  tracker_unreachable: 'tracker_unreachable',
  tracker_refused: 'tracker_refused',
  tracker_bad_answer: 'tracker_bad_answer',
} as const;
export type TrackerCode = (typeof TrackerCodes)[keyof typeof TrackerCodes];
