import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import { ConflictError, ForbiddenError } from '../errors.js';
import { uuidFromKey } from '../ids.js';
import { proposeKbEdit, resolveKbSource, stagedEdits, type ProposeInput } from './kb-edits.js';
import { createProposal } from '../action-review/create.js';
import { rowView } from '../action-review/views.js';

/** Staging is per proposer: a person, an agent (bot), an app. */
const proposerOf = (p: Principal) => (p.kind === 'agent' && p.botId ? `agent:${p.botId}` : `${p.kind}:${p.id}`);

export async function proposeKbEditAction(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  input: ProposeInput & { source_id_or_index: string },
) {
  const source = await resolveKbSource(em, principal.tenant, input.source_id_or_index);
  return proposeKbEdit(em, deps.config, principal.tenant, proposerOf(principal), source, input);
}

/**
 * Collects the caller's staged edits of the source and raises an Action Review proposal
 * `kb.pull_request.v1` carrying them (the reviewer sees exactly what will be pushed); a person
 * approves and executes it, and the execution pushes the branch and opens the pull request.
 */
export async function openKbPullRequestAction(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  input: { source_id_or_index: string; target_index: string; title: string; body: string; commit_message: string },
  idempotencyKey: string | null,
) {
  const source = await resolveKbSource(em, principal.tenant, input.source_id_or_index);
  const proposer = proposerOf(principal);
  const target = input.target_index.trim();
  const edits = await stagedEdits(em, principal.tenant, source.row.id, proposer, target);
  if (!edits.length)
    throw new ConflictError(
      `No staged knowledge-base edits for the source ${source.row.id}${target ? ` through the index "${target}"` : ''}; stage them with propose_kb_edit first.`,
      { reason: 'no_staged_edits', source_id: source.row.id },
    );
  const bases = [...new Set(edits.map((e) => e.base_commit))];
  if (bases.length > 1 || bases[0] !== source.syncedCommit)
    throw new ConflictError(
      `The source ${source.row.id} was synced to another commit since some edits were staged; stage them again with propose_kb_edit.`,
      {
        reason: 'staged_edits_stale',
        source_id: source.row.id,
        stale_paths: edits.filter((e) => e.base_commit !== source.syncedCommit).map((e) => e.path),
      },
    );
  const changed_files = edits.map((e) =>
    e.status === 'R'
      ? { path: e.path, status: e.status, previous_path: e.previous_path }
      : { path: e.path, status: e.status },
  );
  const title =
    input.title.trim() ||
    `Knowledge base: ${edits
      .map((e) => e.path)
      .slice(0, 3)
      .join(', ')}${edits.length > 3 ? ` and ${edits.length - 3} more` : ''}`.slice(0, 500);
  const notes = edits.filter((e) => e.note).map((e) => `- ${e.path}: ${e.note}`);
  const payload = {
    source_id: source.row.id,
    base_commit: source.syncedCommit,
    title,
    body: (input.body || notes.join('\n')).slice(0, 20_000),
    commit_message: input.commit_message.trim() || title,
    staged_by: proposer,
    files: edits.map((e) => ({ path: e.path, status: e.status, previous_path: e.previous_path, content: e.content })),
  };
  let botId: string | null = null;
  let threadId: string | null = null;
  if (principal.kind === 'agent') {
    if (!principal.botId || !principal.threadId)
      throw new ForbiddenError('This sandbox token is not bound to a bot and thread.');
    botId = principal.botId;
    threadId = principal.threadId;
  }
  const proposal = await createProposal(deps, em, principal, {
    actionType: 'kb.pull_request.v1',
    payload,
    expectedEffect: `Push branch kb-edit/<proposal id> to ${source.row.repoUrl} with ${edits.length} changed file(s) (${changed_files
      .map((f) => `${f.status} ${f.path}`)
      .join(', ')
      .slice(0, 2000)}) and open a pull request.`,
    requestedStatement: null,
    botId,
    threadId,
    subject: null,
    executionOrigin: null,
    proposalId: idempotencyKey ? uuidFromKey(`kb-pr:${idempotencyKey}`) : undefined,
  });
  return {
    Success: true,
    status: 'pending_review',
    source_id: source.row.id,
    changed_files,
    proposal: rowView(proposal, { scope: 'full', includeStatement: true }),
  };
}
