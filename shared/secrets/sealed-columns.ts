// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).

/**
 * Every table column that holds values sealed by the secret box (shared/secrets/secret-box.ts), in
 * one place. The re-seal workflow (workflows/secret-reseal.ts) walks exactly these, and the status
 * and verify routes count them. A new table with sealed values joins here AND gets the trigger
 * `refuse_retired_secret_key(<columns>)` in its migration (see Migration20261123110000Secrets), which
 * refuses a write under a retired key; tests/secrets checks both lists agree.
 */
export interface SealedTable {
  /** Table name (trusted SQL identifier). */
  table: string;
  /** Primary key column (text), used for stable batch order. */
  pk: string;
  /** Nullable or not, each holds one sealed value. */
  columns: readonly string[];
}

export const SEALED_TABLES: readonly SealedTable[] = [
  { table: 'crm_connections', pk: 'id', columns: ['secrets_sealed', 'tokens_sealed', 'oauth_pending_sealed'] },
  { table: 'mesh_settings', pk: 'id', columns: ['auth_key_sealed'] },
  { table: 'platform_settings', pk: 'path', columns: ['sealed'] },
  // `id` is generated from (tenant, provider_kind, sub_provider); every secret field is in one sealed JSON object.
  { table: 'llm_providers', pk: 'id', columns: ['secrets_sealed'] },
  // Git credentials (token or basic) as one sealed JSON object.
  { table: 'managed_sources', pk: 'id', columns: ['credentials_sealed'] },
  // An ETL run's context parameters (connection settings a job reads) as one sealed JSON object.
  { table: 'etl_runs', pk: 'run_id', columns: ['context_sealed'] },
  // Desktop mode: the device credential and AI key as one sealed JSON object (one row).
  { table: 'desktop_state', pk: 'id', columns: ['credentials_sealed'] },
];

export const SEALED_TABLE_NAMES: readonly string[] = SEALED_TABLES.map((t) => t.table);
