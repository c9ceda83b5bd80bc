/** The hidden-blueprint purge: its Schedule. Plain data, imported by the worker's start and the tests. */
export const BLUEPRINT_HIDDEN_PURGE_SCHEDULE_ID = 'blueprint-hidden-purge';
/** How often hidden blueprints whose missions have all ended are purged. */
export const BLUEPRINT_HIDDEN_PURGE_INTERVAL_SECONDS = 3600;

export interface BlueprintHiddenPurgeResult {
  purged: Array<{ blueprint_id: string; tenant: string; name: string }>;
}
