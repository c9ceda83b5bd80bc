import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { ConflictError } from '../errors.js';
import { mergeDigest, type MergeSelection } from './merge-selection.js';
import { getRecord } from './rest.js';
import { CrmSession } from './session.js';
import { loadConnection, type LoadedConnection } from './store.js';
import {
  policyFields,
  projectMerge,
  type CrmRecord,
  type MergeProjection,
  type SurvivorshipPolicy,
} from './survivorship.js';
import { CrmCodes } from './error-codes.js';

export interface MergePreview {
  selection: MergeSelection;
  policy: SurvivorshipPolicy;
  survivor: CrmRecord;
  losers: CrmRecord[];
  projection: MergeProjection;
  digest: string;
}

/** The connection, if merges are enabled on it (refused with the rule named otherwise). */
export async function mergeConnection(
  em: EntityManager,
  config: AppConfig,
  tenant: string,
  name: string,
): Promise<LoadedConnection & { policy: SurvivorshipPolicy }> {
  const conn = await loadConnection(em, config, tenant, name);
  if (!conn.row.mergeEnabled || !conn.policy) {
    throw new ConflictError(
      `Merges are not enabled on connection "${name}" (set merge_enabled and merge_survivorship_policy).`,
      {
        code: CrmCodes.merge_not_enabled,
        rule: 'merge_enabled',
      },
    );
  }
  return conn as LoadedConnection & { policy: SurvivorshipPolicy };
}

/** Reads the records fresh and applies the policy. Nothing is written. */
export async function computePreview(
  session: CrmSession,
  policy: SurvivorshipPolicy,
  selection: MergeSelection,
): Promise<MergePreview> {
  const fields = policyFields(policy);
  const survivor = await getRecord(session, selection.kind, selection.survivorId, fields);
  const losers: CrmRecord[] = [];
  for (const id of selection.loserIds) losers.push(await getRecord(session, selection.kind, id, fields));
  return {
    selection,
    policy,
    survivor,
    losers,
    projection: projectMerge(policy, survivor, losers),
    digest: mergeDigest(selection, policy.version, survivor, losers),
  };
}

/** Opens the connection's session and previews. */
export async function previewMerge(
  em: EntityManager,
  config: AppConfig,
  tenant: string,
  selection: MergeSelection,
): Promise<MergePreview> {
  const conn = await mergeConnection(em, config, tenant, selection.connectionName);
  return computePreview(new CrmSession(conn, em, config), conn.policy, selection);
}

/** The preview as the API and tool answer it: the projected survivor with `preview_fields` first. */
export function previewView(p: MergePreview) {
  return {
    connection_name: p.selection.connectionName,
    record_kind: p.selection.kind,
    survivor_id: p.selection.survivorId,
    loser_ids: p.selection.loserIds,
    policy_version: p.policy.version,
    preview_fields: p.policy.preview_fields,
    projected_survivor: Object.fromEntries(p.projection.fields.map((f) => [f, p.projection.values[f]])),
    field_sources: p.projection.sources,
    field_writes: p.projection.writes,
    records: [p.survivor, ...p.losers].map((r, i) => ({
      id: r.id,
      role: i === 0 ? 'survivor' : 'loser',
      last_modified: r.lastModified,
      fields: r.fields,
    })),
    digest: p.digest,
  };
}
export type PreviewView = ReturnType<typeof previewView>;
