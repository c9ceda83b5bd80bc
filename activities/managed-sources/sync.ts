import { ApplicationFailure, Context } from '@temporalio/activity';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ManagedSourceEntity, type ManagedSourceRow } from '../../shared/db/entities/index.js';
import { GitSyncCodes } from '../../shared/managed-sources/error-codes.js';
import { documentFeedSummary, planDocumentFeed } from '../../shared/document-index/kb-feed.js';
import {
  classifyGitError,
  fetchRef,
  gitHostOf,
  resolveRemoteRef,
  rulesHash,
  unsupportedCheckoutRules,
  workingTreeExists,
  type GitCredentials,
  type ResolvedRef,
} from '../../shared/managed-sources/git.js';
import { checkoutListing } from '../../shared/managed-sources/checkout.js';
import { refListingOnce, type RefListing } from '../../shared/git/fetch-pack.js';
import { openRemote, sourcePaths } from '../../shared/managed-sources/source-access.js';
import { setSyncPhase } from '../../shared/managed-sources/sync-job-store.js';
import { hydrateSync } from '../../shared/managed-sources/sync-hydration.js';
import { emptySyncResult, finishSync, syncOutcome } from '../../shared/managed-sources/sync-result.js';
import { scanCheckout, type ScanSummary } from '../../shared/managed-sources/sync-scan.js';
import type {
  DocumentFeedPlan,
  DocumentFeedSummary,
  SourceSyncInput,
  SourceSyncResult,
} from '../../workflows/source-sync-definitions.js';
import { withHeartbeat } from '../heartbeat.js';
import type { ManagedSourceDeps } from './deps.js';
import { ManagedSourceCodes } from '../../shared/managed-sources/error-codes.js';

/**
 * The `source-sync` workflow's activities, one function each: resolve the release ref, fetch and check
 * out, scan, feed documents, record (hydration) or end the job. Each writes the job's phase first, so
 * progress is readable; Git failures become ApplicationFailures typed by their code.
 */
export interface CheckoutSummary {
  changed: boolean;
  files_checked_out: number;
  paths_excluded: number;
}

/**
 * Git failures become ApplicationFailures typed by their code; only transient ones are retried. A request
 * ended by the activity's cancellation is that cancellation (its CancelledFailure), not a Git failure.
 */
function toFailure(err: unknown, url: string, credKind?: GitCredentials['kind'] | null): never {
  Context.current().cancellationSignal.throwIfAborted();
  const g = classifyGitError(err, gitHostOf(url), credKind);
  throw g.retryable
    ? ApplicationFailure.retryable(g.message, g.code)
    : ApplicationFailure.nonRetryable(g.message, g.code);
}

async function loadSyncing(em: EntityManager, input: SourceSyncInput): Promise<ManagedSourceRow> {
  const row = await em.findOne(ManagedSourceEntity, { id: input.sourceId, tenant: input.tenant });
  if (!row) throw ApplicationFailure.nonRetryable('The managed source was deleted during the sync.', 'SOURCE_GONE');
  return row;
}

export type ResolveAnswer = { ref: ResolvedRef; refusal: null } | { ref: null; refusal: SourceSyncResult };

/** Lists the remote's refs and resolves `release_ref`; a moved release tag is a refusal (nothing applied). */
export async function managedSyncResolve(deps: ManagedSourceDeps, input: SourceSyncInput): Promise<ResolveAnswer> {
  const em = deps.orm.em.fork();
  await setSyncPhase(em, input.jobId, 'resolving');
  return resolveFor(em, deps, input, await loadSyncing(em, input));
}

/** The source's remote as `openRemote` answers it. */
type OpenedRemote = Awaited<ReturnType<typeof openRemote>>;

async function resolveFor(
  em: EntityManager,
  deps: ManagedSourceDeps,
  input: SourceSyncInput,
  row: ManagedSourceRow,
  opened?: OpenedRemote,
): Promise<ResolveAnswer> {
  const { remote, creds, lapsed } = opened ?? (await openRemote(em, deps.config, row));
  if (lapsed) toFailure(lapsed, row.repoUrl);
  let ref: ResolvedRef;
  try {
    ref = await resolveRemoteRef({ ...remote, releaseRef: row.releaseRef });
  } catch (err) {
    toFailure(err, row.repoUrl, creds?.kind);
  }
  const anchor = row.tagAnchor;
  if (ref.kind !== 'tag' || !anchor || anchor.tag !== row.releaseRef || anchor.commit_sha === ref.commitSha)
    return { ref, refusal: null };
  return {
    ref: null,
    refusal: {
      ...emptySyncResult(input, row),
      ref_kind: 'tag',
      commit_sha: anchor.commit_sha,
      error_code: ManagedSourceCodes.RELEASE_TAG_CHANGED_ON_REMOTE,
      error: `Release tag ${anchor.tag} now names commit ${ref.commitSha} on the remote, not the synced ${anchor.commit_sha}. Nothing was applied; acknowledge with PATCH acknowledge_moved_tag: true to sync the new commit.`,
      moved_tag: { tag: anchor.tag, anchored_commit_sha: anchor.commit_sha, remote_commit_sha: ref.commitSha },
    },
  };
}

function checkCheckoutRules(rules: readonly string[]): void {
  const unsupported = unsupportedCheckoutRules(rules);
  if (unsupported.length)
    throw ApplicationFailure.nonRetryable(
      `checkout_exclude cannot re-include a path below an excluded directory (${unsupported.join(', ')}): Git sparse rules never re-include a file whose parent directory is excluded. Exclude the directory's contents (\`dir/*\`) instead of the directory (\`dir/\`), then re-include.`,
      ManagedSourceCodes.SPARSE_CHECKOUT_UNSUPPORTED,
    );
}

/** Shallow fetch of the release commit, then a fresh working tree with `checkout_exclude` applied (skipped when nothing changed). */
export async function managedSyncFetch(
  deps: ManagedSourceDeps,
  input: SourceSyncInput & { resolved: ResolvedRef },
): Promise<CheckoutSummary> {
  const em = deps.orm.em.fork();
  const { summary } = await fetchFor(em, deps, input, await loadSyncing(em, input));
  return summary;
}

/** True when the source last synced `commitSha` under its current checkout rules. */
const syncedAlready = (row: ManagedSourceRow, commitSha: string) =>
  row.syncedCommitSha === commitSha && row.checkoutRulesHash === rulesHash(row.settings.checkout_exclude);

/** The fetch and checkout of `input.resolved`, answering also the files checked out (null when nothing changed). */
async function fetchFor(
  em: EntityManager,
  deps: ManagedSourceDeps,
  input: SourceSyncInput & { resolved: ResolvedRef },
  row: ManagedSourceRow,
  opened?: OpenedRemote,
): Promise<{ summary: CheckoutSummary; files: string[] | null }> {
  const paths = sourcePaths(deps.config, row.id);
  const same = syncedAlready(row, input.resolved.commitSha);
  if (same && (await workingTreeExists(paths.workdir)))
    return { summary: { changed: false, files_checked_out: 0, paths_excluded: 0 }, files: null };
  checkCheckoutRules(row.settings.checkout_exclude);
  await setSyncPhase(em, input.jobId, 'fetching');
  const { remote, creds } = opened ?? (await openRemote(em, deps.config, row));
  const fetched = await withHeartbeat(10_000, () =>
    fetchRef({ ...remote, gitdir: paths.gitdir, resolved: input.resolved }),
  ).catch((err: unknown) => toFailure(err, row.repoUrl, creds?.kind));
  await setSyncPhase(em, input.jobId, 'checking_out');
  const counts = await withHeartbeat(10_000, () =>
    checkoutListing({
      gitdir: paths.gitdir,
      commitSha: input.resolved.commitSha,
      workdir: paths.workdir,
      checkoutExclude: row.settings.checkout_exclude,
      tag: input.jobId,
      fetched,
    }),
  ).catch((err: unknown) => toFailure(err, row.repoUrl));
  return {
    summary: { changed: !same, files_checked_out: counts.files, paths_excluded: counts.excluded },
    files: counts.paths,
  };
}

/** Walks the working tree under `include`/`exclude`, counting files (progress on the job row) and artifact candidates. */
export async function managedSyncScan(deps: ManagedSourceDeps, input: SourceSyncInput): Promise<ScanSummary> {
  const em = deps.orm.em.fork();
  await setSyncPhase(em, input.jobId, 'scanning', 0);
  const scan = await scanFor(em, deps, input, await loadSyncing(em, input), null);
  await setSyncPhase(em, input.jobId, 'recording', scan.files_scanned);
  return scan;
}

/** The scan of the working tree (`files`: the paths the checkout just wrote, null to read them from the commit). */
function scanFor(
  em: EntityManager,
  deps: ManagedSourceDeps,
  input: SourceSyncInput,
  row: ManagedSourceRow,
  files: readonly string[] | null,
): Promise<ScanSummary> {
  const progress = async (n: number) => {
    beat();
    await setSyncPhase(em, input.jobId, 'scanning', n);
  };
  return scanCheckout(sourcePaths(deps.config, row.id), row.settings, progress, files);
}

/**
 * What `managedSyncPrepare` answers: a refusal (moved tag), the recorded result (no ingestion to run),
 * or what the record needs once the document feed's ingestion child workflows ran.
 */
export type PrepareAnswer =
  | { refusal: SourceSyncResult; result: null }
  | { refusal: null; result: SourceSyncResult }
  | {
      refusal: null;
      result: null;
      resolved: ResolvedRef;
      checkout: CheckoutSummary;
      scan: ScanSummary;
      plan: DocumentFeedPlan;
    };

/** What a sync's activities take: the workflow's input and, from `managedSyncQuick`, the ref listing it read. */
export type PrepareInput = SourceSyncInput & { listing?: RefListing | null };

/** The start of a sync: the job's phase, the source, its remote (replaying one ref listing) and the resolved ref. */
async function resolveSync(deps: ManagedSourceDeps, input: PrepareInput) {
  const em = deps.orm.em.fork();
  await setSyncPhase(em, input.jobId, 'resolving');
  const row = await loadSyncing(em, input);
  // One remote for the resolve and the fetch: the fetch reuses the resolve's ref listing. Its requests end
  // when the activity is cancelled (a heartbeating one's cancel, a local one's timeout).
  const opened = await openRemote(em, deps.config, row, { signal: Context.current().cancellationSignal });
  const http = refListingOnce(opened.remote.http, input.listing ?? null);
  opened.remote.http = http;
  const resolved = await resolveFor(em, deps, input, row, opened);
  return { em, row, opened, resolved, listing: () => http.listing() };
}

/**
 * A sync in one activity unless the document feed has files to ingest (one load of the source, job-row
 * writes only for the steps that run): resolve the release ref, fetch and check out when the commit or
 * the rules changed, scan (a saved scan when nothing changed), plan the document feed, then record as
 * `managedSyncRecord` does. A resync that finds the synced commit does no fetch and no walk. With
 * files to ingest it answers the plan; the workflow runs the ingestion, then `managedSyncRecord`.
 * `input.listing`: the ref listing `managedSyncQuick` read, replayed instead of listing the refs again.
 */
export async function managedSyncPrepare(deps: ManagedSourceDeps, input: PrepareInput): Promise<PrepareAnswer> {
  const sync = await resolveSync(deps, input);
  if (sync.resolved.refusal) return { refusal: sync.resolved.refusal, result: null };
  return prepareResolved(deps, input, sync, sync.resolved.ref);
}

/** What `managedSyncQuick` answers: the sync as `managedSyncPrepare` answers it, or null with the ref listing it read. */
export type QuickAnswer = { prepared: PrepareAnswer } | { prepared: null; listing: RefListing | null };

/**
 * A resync that finds the synced commit, as a local activity in the workflow's first task
 * (`patched('sync-quick')`: no activity task and no second workflow task): resolve the release ref
 * and, when the source synced that commit under the same rules and its working tree is there, go on
 * as `managedSyncPrepare` does (saved scan, feed plan, record). Otherwise (another commit, a moved
 * tag aside, or a blueprint repository, whose record imports blueprints and must heartbeat) it answers
 * null with the ref listing, and the workflow runs `managedSyncPrepare`, which replays that listing.
 */
export async function managedSyncQuick(deps: ManagedSourceDeps, input: SourceSyncInput): Promise<QuickAnswer> {
  // Past its timeout the workflow has moved on to managedSyncPrepare: the SDK cancels this attempt, which
  // ends its ref listing and records nothing (the cancellation's CancelledFailure, not the listing's error).
  const cancelled = Context.current().cancellationSignal;
  const sync = await resolveSync(deps, input).catch((err: unknown) => {
    cancelled.throwIfAborted();
    throw err;
  });
  cancelled.throwIfAborted();
  if (sync.resolved.refusal) return { prepared: { refusal: sync.resolved.refusal, result: null } };
  const { row } = sync;
  const ref = sync.resolved.ref;
  const quick =
    !row.settings.scan_types_enabled.includes('blueprints') &&
    syncedAlready(row, ref.commitSha) &&
    (await workingTreeExists(sourcePaths(deps.config, row.id).workdir));
  if (!quick) return { prepared: null, listing: sync.listing() };
  cancelled.throwIfAborted();
  return { prepared: await prepareResolved(deps, input, sync, ref) };
}

/** The sync after its resolve: fetch and checkout (when the commit or rules changed), scan, feed plan, record. */
async function prepareResolved(
  deps: ManagedSourceDeps,
  input: SourceSyncInput,
  sync: Awaited<ReturnType<typeof resolveSync>>,
  ref: ResolvedRef,
): Promise<PrepareAnswer> {
  const { em, row, opened } = sync;
  const checkout = await fetchFor(em, deps, { ...input, resolved: ref }, row, opened);
  if (checkout.summary.changed) await setSyncPhase(em, input.jobId, 'scanning', 0);
  const scan = await scanFor(em, deps, input, row, checkout.files);
  const found = { ...input, resolved: ref, checkout: checkout.summary, scan };
  let plan: DocumentFeedPlan;
  try {
    plan = await planFeedFor(em, deps, input, row);
  } catch (err) {
    return { refusal: null, result: await recordFor(em, deps, row, { ...found, documentFeedError: feedErrorOf(err) }) };
  }
  if (!plan.ingests.length)
    return { refusal: null, result: await recordFor(em, deps, row, { ...found, feed: { plan, ingested: {} } }) };
  return { refusal: null, result: null, resolved: ref, checkout: checkout.summary, scan, plan };
}

/** A document feed failure as a hydrate error (its classified code when it has one). */
function feedErrorOf(err: unknown): { code: string; message: string } {
  const code = (err as { code?: unknown }).code;
  return {
    code: typeof code === 'string' && /^[A-Z_]+$/.test(code) ? code : GitSyncCodes.DOCUMENT_FEED_FAILED,
    message: err instanceof Error ? err.message : 'The document feed failed.',
  };
}

/**
 * The document feed's plan (shared/document-index/kb-feed.ts): per first-level folder of
 * `documents_root` the index (found or created linked to the source), removed documents, and the
 * changed files for an ingestion child workflow.
 */
export async function managedDocumentFeedPlan(
  deps: ManagedSourceDeps,
  input: SourceSyncInput,
): Promise<DocumentFeedPlan> {
  const em = deps.orm.em.fork();
  await setSyncPhase(em, input.jobId, 'feeding_documents');
  return planFeedFor(em, deps, input, await loadSyncing(em, input));
}

function planFeedFor(
  em: EntityManager,
  deps: ManagedSourceDeps,
  input: SourceSyncInput,
  row: ManagedSourceRow,
): Promise<DocumentFeedPlan> {
  const { workdir } = sourcePaths(deps.config, row.id);
  const plan = () =>
    planDocumentFeed(em, deps.config, row, { jobId: input.jobId, workdir, overwriteIndexes: input.overwriteIndexes });
  return Context.current().info.isLocal ? plan() : withHeartbeat(2_000, plan);
}

/** A heartbeat, except in a local activity (`managedSyncQuick`), which has none. */
function beat(): void {
  const ctx = Context.current();
  if (!ctx.info.isLocal) ctx.heartbeat();
}

/** The feed summary per index after the ingestion child workflows (`ingested`: documents per index). */
export async function managedDocumentFeedSummary(
  deps: ManagedSourceDeps,
  input: SourceSyncInput & { plan: DocumentFeedPlan; ingested: Record<string, number> },
): Promise<DocumentFeedSummary> {
  const em = deps.orm.em.fork();
  const row = await loadSyncing(em, input);
  return documentFeedSummary(em, row, input.plan, input.ingested);
}

export type SyncRecordInput = SourceSyncInput & {
  resolved: ResolvedRef;
  checkout: CheckoutSummary;
  scan: ScanSummary;
  /** The document feed's summary, or the error that stopped it (recorded as a hydrate error). */
  documentFeed?: DocumentFeedSummary;
  documentFeedError?: { code: string; message: string };
  /** Instead of `documentFeed` (`managedSyncPrepare`'s path): the feed's plan and documents ingested per index, summarised here. */
  feed?: { plan: DocumentFeedPlan; ingested: Record<string, number> };
};

/** The feed summary of `input.feed` (when it ran), or the error that stopped it. */
async function feedSummaryOf(em: EntityManager, row: ManagedSourceRow, input: SyncRecordInput) {
  if (input.documentFeed || input.documentFeedError || !input.feed?.plan.enabled)
    return { documentFeed: input.documentFeed, documentFeedError: input.documentFeedError };
  try {
    return { documentFeed: await documentFeedSummary(em, row, input.feed.plan, input.feed.ingested) };
  } catch (err) {
    return { documentFeedError: feedErrorOf(err) };
  }
}

/** Records a successful sync: hydration, the source's commit, tag anchor and checkout rules; the job `complete`. */
export async function managedSyncRecord(deps: ManagedSourceDeps, input: SyncRecordInput): Promise<SourceSyncResult> {
  const em = deps.orm.em.fork();
  return recordFor(em, deps, await loadSyncing(em, input), input);
}

/** `managedSyncRecord` with the source row its activity loaded already. */
async function recordFor(
  em: EntityManager,
  deps: ManagedSourceDeps,
  row: ManagedSourceRow,
  input: SyncRecordInput,
): Promise<SourceSyncResult> {
  // A cancelled activity records nothing (a local one past its timeout: the workflow has moved on).
  Context.current().cancellationSignal.throwIfAborted();
  const { resolved, checkout, scan } = input;
  const { documentFeed, documentFeedError } = await feedSummaryOf(em, row, input);
  const hydration = await hydrateSync(em, deps, row, { apply: input.apply, commitSha: resolved.commitSha, scan });
  if (documentFeedError) {
    hydration.hydrate_errors.push({ type: 'document_indexes', ...documentFeedError });
    hydration.partial_success = true;
  }
  const result: SourceSyncResult = {
    ...emptySyncResult(input, row),
    ...hydration,
    outcome: syncOutcome(checkout.changed, hydration),
    ref_kind: resolved.kind,
    commit_sha: resolved.commitSha,
    files_checked_out: checkout.files_checked_out,
    paths_excluded: checkout.paths_excluded,
    files_scanned: scan.files_scanned,
    candidates: scan.candidates,
    ...(documentFeed ? { document_feed: documentFeed } : {}),
  };
  return finishSync(deps.orm.em.fork(), input, result, {
    syncedCommitSha: resolved.commitSha,
    checkoutRulesHash: rulesHash(row.settings.checkout_exclude),
    tagAnchor:
      resolved.kind === 'tag' && row.releaseRef ? { tag: row.releaseRef, commit_sha: resolved.commitSha } : null,
  });
}

/** Ends a refused sync (moved tag): the job `error` with the result; nothing applied to the source. */
export function managedSyncFinish(
  deps: ManagedSourceDeps,
  input: SourceSyncInput & { result: SourceSyncResult },
): Promise<SourceSyncResult> {
  return finishSync(deps.orm.em.fork(), input, input.result);
}

/** Ends a failed sync with its classified code. */
export async function managedSyncFail(
  deps: ManagedSourceDeps,
  input: SourceSyncInput & { errorCode: string; message: string },
): Promise<SourceSyncResult> {
  const em = deps.orm.em.fork();
  const row = await em.findOne(ManagedSourceEntity, { id: input.sourceId, tenant: input.tenant });
  const result = { ...emptySyncResult(input, row), error_code: input.errorCode, error: input.message };
  return finishSync(deps.orm.em.fork(), input, result);
}
