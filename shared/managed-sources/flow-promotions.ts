import { createHash } from 'node:crypto';
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { parse as parseYaml } from 'yaml';
import { sourcePaths } from './source-access.js';
import type { AppConfig } from '../config.js';
import type { Principal } from '../auth/principal.js';
import { ManagedFlowEntity, ManagedSourceEntity, type ManagedSourceRow } from '../db/entities/index.js';
import { AuthenticationError, BadRequestError, NotFoundError } from '../errors.js';
import { listFiles } from './git.js';
import { ManagedSourceCodes } from './error-codes.js';

/**
 * Flows of managed sources wait for promotion: a flow is a folder `<flows_root>/<flow_name>/` (default
 * root `flows`) holding `flow.yaml` or `flow.yml`, read from the working tree of the last sync. What
 * was promoted is recorded in `managed_flows` (content hash and commit); a pending change is any
 * difference between the two: `added`, `modified` or `removed`. A change's id hashes the source, the
 * flow, the kind and the new content, so a change superseded by a later sync is gone (404), never
 * promoted by mistake.
 */
const FLOW_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const MAX_FLOW_BYTES = 512 * 1024;

export interface CheckedOutFlow {
  flowName: string;
  manifest: string;
  contentHash: string;
  /** The manifest's text (what a run of the flow executes once promoted). */
  text: string;
  /** Null when the manifest is a YAML mapping; else why it cannot be promoted. */
  invalidReason: string | null;
}

export interface PendingFlowChange {
  change_id: string;
  source_id: string;
  source_name: string;
  flow_name: string;
  change: 'added' | 'modified' | 'removed';
  commit_sha: string;
  content_hash: string | null;
  promoted_content_hash: string | null;
  promoted_commit_sha: string | null;
  valid: boolean;
  invalid_reason: string | null;
}

async function isDir(p: string): Promise<boolean> {
  return stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

/** The flows in a source's working tree (none before the first sync or without the `flows` scan type). */
export async function checkedOutFlows(config: AppConfig, row: ManagedSourceRow): Promise<CheckedOutFlow[]> {
  if (!row.syncedCommitSha || !row.settings.scan_types_enabled.includes('flows')) return [];
  const root = (row.settings.flows_root ?? 'flows').replace(/^\/+|\/+$/g, '');
  const dir = path.join(sourcePaths(config, row.id).workdir, ...root.split('/'));
  if (!(await isDir(dir))) return [];
  const flows: CheckedOutFlow[] = [];
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    if (!e.isDirectory() || !FLOW_NAME.test(e.name)) continue;
    const folder = path.join(dir, e.name);
    const chosen = await manifestName(folder);
    if (!chosen) continue;
    const hash = createHash('sha256');
    let total = 0;
    for await (const rel of listFiles(folder)) {
      const content = await readFile(path.join(folder, ...rel.split('/')));
      total += content.length;
      hash.update(rel).update('\0').update(content).update('\0');
    }
    const text = await readFile(path.join(folder, chosen), 'utf8');
    flows.push({
      flowName: e.name,
      manifest: `${root}/${e.name}/${chosen}`,
      contentHash: hash.digest('hex'),
      text,
      invalidReason:
        total > MAX_FLOW_BYTES ? `the flow folder is larger than ${MAX_FLOW_BYTES} bytes` : yamlProblem(text),
    });
  }
  return flows;
}

async function manifestName(folder: string): Promise<string | null> {
  for (const m of ['flow.yaml', 'flow.yml'])
    if (
      await stat(path.join(folder, m)).then(
        (s) => s.isFile(),
        () => false,
      )
    )
      return m;
  return null;
}

function yamlProblem(text: string): string | null {
  try {
    const doc: unknown = parseYaml(text);
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return 'flow.yaml is not a YAML mapping';
    return null;
  } catch {
    return 'flow.yaml is not valid YAML';
  }
}

function changeId(sourceId: string, flowName: string, kind: string, hash: string | null): string {
  return `fc_${createHash('sha256')
    .update(`${sourceId}\0${flowName}\0${kind}\0${hash ?? ''}`)
    .digest('hex')
    .slice(0, 32)}`;
}

/** The pending flow changes of one source: checkout against what was promoted. */
export async function pendingFlowChanges(
  em: EntityManager,
  config: AppConfig,
  row: ManagedSourceRow,
): Promise<{ changes: PendingFlowChange[]; flows: Map<string, CheckedOutFlow> }> {
  const flows = new Map((await checkedOutFlows(config, row)).map((f) => [f.flowName, f]));
  const promoted = new Map(
    (await em.find(ManagedFlowEntity, { sourceId: row.id })).map((p) => [p.flowName, p] as const),
  );
  const changes: PendingFlowChange[] = [];
  const names = [...new Set([...flows.keys(), ...promoted.keys()])].sort();
  for (const name of names) {
    const now = flows.get(name);
    const was = promoted.get(name);
    const kind = !was ? 'added' : !now ? 'removed' : was.contentHash !== now.contentHash ? 'modified' : null;
    if (!kind) continue;
    changes.push({
      change_id: changeId(row.id, name, kind, now?.contentHash ?? null),
      source_id: row.id,
      source_name: row.name,
      flow_name: name,
      change: kind,
      commit_sha: row.syncedCommitSha ?? '',
      content_hash: now?.contentHash ?? null,
      promoted_content_hash: was?.contentHash ?? null,
      promoted_commit_sha: was?.commitSha ?? null,
      valid: !now?.invalidReason,
      invalid_reason: now?.invalidReason ?? null,
    });
  }
  return { changes, flows };
}

/** The tenant's sources (one with `sourceId`), oldest first. */
export async function tenantSources(em: EntityManager, tenant: string, sourceId?: string) {
  return em.find(
    ManagedSourceEntity,
    { tenant, ...(sourceId ? { id: sourceId } : {}) },
    { orderBy: { createdAt: 'asc', id: 'asc' } },
  );
}

/** Flow promotion (and a flow run) needs an acting user: a person, not the system identity or an agent (401 otherwise). */
export function checkActingUser(principal: Principal, what = 'Promoting flows'): void {
  if (principal.kind !== 'person')
    throw new AuthenticationError(
      `${what} needs an acting user: sign in as a person (identity-provider login or your own personal access token).`,
      { principal_kind: principal.kind },
    );
}

/** The pending flow changes of the tenant's sources (of one with `sourceId`: 404 when it is not the tenant's). */
export async function listPendingFlowChanges(
  em: EntityManager,
  config: AppConfig,
  tenant: string,
  sourceId?: string,
): Promise<PendingFlowChange[]> {
  const sources = await tenantSources(em, tenant, sourceId);
  if (sourceId && !sources.length) throw new NotFoundError(`No managed source ${sourceId}.`);
  const changes: PendingFlowChange[] = [];
  for (const row of sources) changes.push(...(await pendingFlowChanges(em, config, row)).changes);
  return changes;
}

/**
 * Records one change as promoted (not flushed): a removal forgets the flow, else `managed_flows`
 * holds the flow's content hash and commit, promoted by `promotedBy`.
 */
export async function recordFlowPromotion(
  em: EntityManager,
  row: ManagedSourceRow,
  change: PendingFlowChange,
  flow: CheckedOutFlow | undefined,
  promotion: { commitSha: string; promotedBy: string },
): Promise<void> {
  const existing = await em.findOne(ManagedFlowEntity, { sourceId: row.id, flowName: change.flow_name });
  if (change.change === 'removed') {
    if (existing) em.remove(existing);
    return;
  }
  const fields = {
    tenant: row.tenant,
    contentHash: flow!.contentHash,
    commitSha: promotion.commitSha,
    manifestPath: flow!.manifest,
    definition: flow!.text,
    promotedAt: new Date(),
    promotedBy: promotion.promotedBy,
  };
  if (existing) Object.assign(existing, fields);
  else em.create(ManagedFlowEntity, { sourceId: row.id, flowName: change.flow_name, ...fields });
}

/**
 * Promotes one pending change of one of the tenant's sources for an acting user: 404 when it is gone,
 * 400 `FLOW_CHANGE_STALE` when the source moved past `expectedCommit`, 400 `FLOW_INVALID` when invalid.
 */
export async function promotePendingFlowChange(
  em: EntityManager,
  config: AppConfig,
  principal: Principal,
  target: { sourceId: string; changeId: string; expectedCommit?: string },
) {
  checkActingUser(principal);
  const [row] = await tenantSources(em, principal.tenant, target.sourceId);
  if (!row) throw new NotFoundError(`No managed source ${target.sourceId}.`);
  const { changes, flows } = await pendingFlowChanges(em, config, row);
  const change = changes.find((c) => c.change_id === target.changeId);
  if (!change) throw new NotFoundError(`No pending flow change ${target.changeId} of managed source ${row.id}.`);
  checkPromotable(row, change, target.expectedCommit);
  await recordFlowPromotion(em, row, change, flows.get(change.flow_name), {
    commitSha: row.syncedCommitSha!,
    promotedBy: principal.id,
  });
  await em.flush();
  return { change, promoted: true as const, pending_count: changes.length - 1 };
}

function checkPromotable(row: ManagedSourceRow, change: PendingFlowChange, expectedCommit?: string): void {
  if (expectedCommit && expectedCommit !== row.syncedCommitSha)
    throw new BadRequestError(
      `Managed source ${row.id} is synced at ${row.syncedCommitSha}, not ${expectedCommit}; list the pending changes again.`,
      { code: ManagedSourceCodes.FLOW_CHANGE_STALE, commit_sha: row.syncedCommitSha },
    );
  if (!change.valid)
    throw new BadRequestError(`Flow ${change.flow_name} cannot be promoted: ${change.invalid_reason}.`, {
      code: ManagedSourceCodes.FLOW_INVALID,
      flow_name: change.flow_name,
      reason: change.invalid_reason,
    });
}
