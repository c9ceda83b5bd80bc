// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Error codes of document indexes.
 * @error-codes: a family module (docs/architecture.md "Error codes"); the wire string is the key, in the spec's casing.
 */
export const DocumentIndexCodes = {
  rechunk_in_progress: 'rechunk_in_progress',
  managed_repo_guard: 'managed_repo_guard',
  knowledge_base_name_taken: 'knowledge_base_name_taken',
  unknown_index_names: 'unknown_index_names',
  unknown_knowledge_bases: 'unknown_knowledge_bases',
} as const;
export type DocumentIndexCode = (typeof DocumentIndexCodes)[keyof typeof DocumentIndexCodes];
