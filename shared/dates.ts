// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Dates as the API writes them: ISO 8601 in UTC (`2026-11-22T10:00:00.000Z`), null stays null.
 * Takes what the database hands back (a `Date`, or a string or number from raw SQL). Pure; workflow-safe.
 */
export function toIso(value: Date | string | number): string;
export function toIso(value: Date | string | number | null | undefined): string | null;
export function toIso(value: Date | string | number | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
