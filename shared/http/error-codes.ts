// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Cross-cutting request codes: a missing or refused body, file or field (`payload.fields[].code`), and
 * the generic jobs route.
 * @error-codes: a family module (docs/architecture.md "Error codes"); the wire string is the key, in the spec's casing.
 */
export const RequestCodes = {
  body_required: 'body_required',
  file_required: 'file_required',
  file_empty: 'file_empty',
  nul_character: 'nul_character',
  invalid_redirect: 'invalid_redirect',
  JOB_ID_TAKEN: 'JOB_ID_TAKEN',
} as const;
export type RequestCode = (typeof RequestCodes)[keyof typeof RequestCodes];
