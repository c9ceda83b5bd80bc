import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { AppConfig } from '../config.js';
import type { ManagedSourceRow } from '../db/entities/index.js';
import { rename as renameBlueprint } from '../blueprints/service.js';
import { readRemoteBlueprints, sourcePrincipal, syncRemoteBlueprints } from '../blueprints/remote.js';
import { resolveBlueprint } from '../blueprints/store.js';
import { applySkillPackages, readSkillPackages } from '../skills/packages.js';
import {
  blueprintRenameWorkflowId,
  BLUEPRINT_RENAME_SYNCED_SIGNAL,
} from '../../workflows/blueprint-rename-definitions.js';
import type {
  DegradedArtifactView,
  HydrateTypeView,
  HydrationResult,
  PreviewView,
  SyncApplyRequest,
} from '../../workflows/source-sync-definitions.js';
import { applyApps, readAppManifests } from './apps.js';
import { importMissions, readMissionManifests } from './missions.js';
import { pendingFlowChanges, recordFlowPromotion } from './flow-promotions.js';
import { applyAgents, applyRoles, planAgents, planRoles, readAgentManifests, readRoleManifests } from './hydrate.js';
import { sourcePaths } from './source-access.js';
import type { ScanSummary } from './sync-scan.js';
import { emptyHydration } from './sync-result.js';

/**
 * Hydration, the last step of a sync: per enabled scan type the manifests the scan found are read
 * (`hydrate.ts`, `apps.ts`, shared/skills, shared/blueprints) and imported. Agents and roles are
 * previewed and applied only when auto-promoted or confirmed against the pinned preview; flows wait
 * as pending promotions unless auto-promoted; skills, apps and blueprints are imported at once; declared
 * missions start once each.
 */
export interface HydrationDeps {
  config: AppConfig;
  /** Present on the worker: wakes blueprint renames waiting for the sync. */
  temporal?: Client;
}

interface Step {
  em: EntityManager;
  deps: HydrationDeps;
  h: HydrationResult;
  row: ManagedSourceRow;
  src: { id: string; tenant: string };
  workdir: string;
  commitSha: string;
  scan: ScanSummary;
  autoPromote: boolean;
  apply: SyncApplyRequest;
}

type Pins = { apply?: boolean; commit?: string; hash?: string };

/**
 * Whether a plan is applied now: with `auto_promote_on_sync`, or when the caller asked and pinned the
 * preview it saw (commit and plan hash equal to this sync's). A pin that no longer matches is stale:
 * nothing of that type is applied and the fresh preview is answered.
 */
function decide(
  kind: 'AGENT' | 'ROLE',
  changes: number,
  autoPromote: boolean,
  pins: Pins,
  preview: { commit_sha: string; plan_hash: string },
): { apply: boolean; error: { code: string; message: string } | null } {
  if (changes === 0) return { apply: false, error: null };
  if (autoPromote) return { apply: true, error: null };
  if (!pins.apply) return { apply: false, error: null };
  const what = kind === 'AGENT' ? 'agent' : 'role';
  if (!pins.commit || !pins.hash)
    return {
      apply: false,
      error: {
        code: `${kind}_PREVIEW_REQUIRED`,
        message: `Applying ${what} changes needs expected_${what}_commit and expected_${what}_plan_hash from a preview.`,
      },
    };
  if (pins.commit !== preview.commit_sha || pins.hash !== preview.plan_hash)
    return {
      apply: false,
      error: {
        code: `${kind}_PREVIEW_STALE`,
        message: `The ${what} changes drifted since the preview (now commit ${preview.commit_sha}, plan ${preview.plan_hash}); review the new preview and pin it.`,
      },
    };
  return { apply: true, error: null };
}

/** Manifests found for a type: the readable ones and the degraded ones. */
const foundIn = (read: { desired: unknown[]; degraded: unknown[] }) => read.desired.length + read.degraded.length;

/** A type imported at once, without a preview (skills, apps, blueprints): nothing waits. */
function importedAtOnce(found: number, r: { applied: number; degraded: DegradedArtifactView[] }): HydrateTypeView {
  return { found, applied: r.applied, waiting: 0, degraded_artifacts: r.degraded };
}

/**
 * A previewed type (agents, roles): its plan is applied now when auto-promoted or confirmed against the
 * pinned preview, else it waits; the result records the preview, the counts and any refusal.
 */
async function hydratePreviewed(
  s: Step,
  kind: 'agent' | 'role',
  found: number,
  plan: { preview: PreviewView; degraded: DegradedArtifactView[] },
  applyPlan: () => Promise<unknown>,
): Promise<void> {
  const { h, apply } = s;
  const n = plan.preview.changes.length;
  const pins = {
    apply: apply[`apply_${kind}_changes`],
    commit: apply[`expected_${kind}_commit`],
    hash: apply[`expected_${kind}_plan_hash`],
  };
  const d = decide(kind === 'agent' ? 'AGENT' : 'ROLE', n, s.autoPromote, pins, plan.preview);
  if (d.apply) await applyPlan();
  const type = `${kind}s` as const;
  if (d.error) h.hydrate_errors.push({ type, ...d.error });
  h[`${kind}_preview`] = plan.preview;
  h[`${kind}_auto_apply`] = { applied: d.apply ? n : 0, waiting: d.apply ? 0 : n };
  h[`requires_${kind}_apply_confirmation`] = !d.apply && n > 0;
  h.hydrate[type] = { found, applied: d.apply ? n : 0, waiting: d.apply ? 0 : n, degraded_artifacts: plan.degraded };
}

async function hydrateAgents(s: Step): Promise<void> {
  const read = await readAgentManifests(s.workdir, s.scan.agent_files ?? []);
  const plan = await planAgents(s.em, s.src, s.commitSha, read);
  await hydratePreviewed(s, 'agent', foundIn(read), plan, () =>
    s.em.transactional((tx) => applyAgents(tx, s.src, plan)),
  );
}

async function hydrateRoles(s: Step): Promise<void> {
  const read = await readRoleManifests(s.workdir, s.scan.role_files ?? []);
  const plan = await planRoles(s.em, s.src, s.commitSha, read);
  await hydratePreviewed(s, 'role', foundIn(read), plan, () => s.em.transactional((tx) => applyRoles(tx, s.src, plan)));
}

/** Skill packages are imported at once (no preview): see shared/skills/packages.ts. */
async function hydrateSkills(s: Step): Promise<void> {
  const read = await readSkillPackages(s.workdir, s.scan.skill_files ?? []);
  const r = await s.em.transactional((tx) => applySkillPackages(tx, s.src, s.commitSha, read));
  s.h.hydrate.skills = importedAtOnce(foundIn(read), r);
}

/**
 * Flows wait as pending promotions (flow-promotions.ts) unless auto_promote_on_sync promotes every
 * valid change now; a flow that cannot be promoted is a degraded artifact either way.
 */
async function hydrateFlows(s: Step): Promise<void> {
  const { em, row, commitSha } = s;
  const synced = { ...row, syncedCommitSha: commitSha } as ManagedSourceRow;
  const { changes, flows } = await pendingFlowChanges(em, s.deps.config, synced);
  const valid = changes.filter((c) => c.valid);
  const degraded = changes
    .filter((c) => !c.valid)
    .map((c) => ({ artifact_id: c.flow_name, reason: c.invalid_reason ?? 'invalid flow' }));
  if (s.autoPromote && valid.length)
    await em.transactional(async (tx) => {
      for (const c of valid)
        await recordFlowPromotion(tx, row, c, flows.get(c.flow_name), {
          commitSha,
          promotedBy: 'auto_promote_on_sync',
        });
    });
  const applied = s.autoPromote ? valid.length : 0;
  s.h.flow_auto_apply = { applied, waiting: valid.length - applied };
  s.h.hydrate.flows = { found: flows.size, applied, waiting: valid.length - applied, degraded_artifacts: degraded };
}

/** Apps are recorded at once (no preview): see apps.ts. */
async function hydrateApps(s: Step): Promise<void> {
  const read = await readAppManifests(s.workdir, s.scan.app_files ?? []);
  const r = await s.em.transactional((tx) => applyApps(tx, s.src, s.commitSha, read));
  s.h.hydrate.apps = importedAtOnce(foundIn(read), r);
}

/** Remote-backed blueprints are applied at once (no preview): see shared/blueprints/remote.ts. */
async function hydrateBlueprints(s: Step): Promise<void> {
  const { em, row } = s;
  const root = s.deps.config.blueprints.dir;
  const read = await readRemoteBlueprints(s.workdir, row.id, s.scan.blueprint_files ?? []);
  const r = await syncRemoteBlueprints(em, root, s.src, s.commitSha, read, async (bpRow, newName) => {
    const ctx = { em, principal: sourcePrincipal(row.id, row.tenant), root };
    await renameBlueprint(ctx, await resolveBlueprint(em, root, row.tenant, bpRow.name), newName);
  });
  // A rename waiting for this sync: wake its workflow (it also polls, so a lost signal only delays it).
  for (const id of r.renamed_paths)
    await s.deps.temporal?.workflow
      .getHandle(blueprintRenameWorkflowId(id))
      .signal(BLUEPRINT_RENAME_SYNCED_SIGNAL)
      .catch(() => undefined);
  s.h.hydrate.blueprints = importedAtOnce(r.found, r);
}

/** Declared missions start once each (no preview), after the blueprints they may name: see missions.ts. */
async function hydrateMissions(s: Step): Promise<void> {
  const read = await readMissionManifests(s.workdir, s.scan.mission_files ?? []);
  const r = await importMissions(s.em, s.deps, s.src, s.commitSha, read);
  s.h.hydrate.missions = importedAtOnce(foundIn(read), r);
}

/** The hydration steps, in the order they run. */
const STEPS: ReadonlyArray<[string, (s: Step) => Promise<void>]> = [
  ['agents', hydrateAgents],
  ['roles', hydrateRoles],
  ['skills', hydrateSkills],
  ['flows', hydrateFlows],
  ['apps', hydrateApps],
  ['blueprints', hydrateBlueprints],
  ['missions', hydrateMissions],
];

/** Reads the manifests, plans agents and roles, and applies what is confirmed or auto-promoted. */
export async function hydrateSync(
  em: EntityManager,
  deps: HydrationDeps,
  row: ManagedSourceRow,
  sync: { apply?: SyncApplyRequest; commitSha: string; scan: ScanSummary },
): Promise<HydrationResult> {
  const h = emptyHydration();
  const step: Step = {
    ...{ em, deps, h, row, commitSha: sync.commitSha, scan: sync.scan, apply: sync.apply ?? {} },
    src: { id: row.id, tenant: row.tenant },
    workdir: sourcePaths(deps.config, row.id).workdir,
    autoPromote: row.settings.auto_promote_on_sync,
  };
  const types = new Set(row.settings.scan_types_enabled);
  for (const [type, run] of STEPS) if (types.has(type)) await run(step);
  h.degraded_artifact_count = Object.values(h.hydrate).reduce((n, t) => n + t.degraded_artifacts.length, 0);
  h.partial_success = h.degraded_artifact_count > 0 || h.hydrate_errors.length > 0;
  return h;
}
