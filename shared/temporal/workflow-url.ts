import type { AppConfig } from '../config.js';

/**
 * The Temporal UI page of a workflow (`<TEMPORAL_UI_URL>/namespaces/<ns>/workflows/<id>[/<run id>]`),
 * so a person goes from an API answer to its history in one click; null when no UI URL is configured.
 */
export function workflowUrl(config: AppConfig, workflowId: string, runId?: string): string | null {
  const base = config.temporal.uiUrl?.replace(/\/+$/, '');
  if (!base) return null;
  const path = `${base}/namespaces/${encodeURIComponent(config.temporal.namespace)}/workflows/${encodeURIComponent(workflowId)}`;
  return runId ? `${path}/${encodeURIComponent(runId)}/history` : path;
}
