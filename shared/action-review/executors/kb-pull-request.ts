import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openCredentials } from '../../managed-sources/source-access.js';
import { ManagedSourceEntity } from '../../db/entities/index.js';
import { clearStagedEdits, kbEditBranch } from '../../document-index/kb-edits.js';
import { openPullRequest, repoCoordinates } from '../../git/forge.js';
import {
  checkoutNewBranch,
  cloneBranch,
  commitAs,
  gitRemote,
  hasCommit,
  pushBranch,
  stagePath,
} from '../../git/worktree.js';
import { classifyGitError, resolveRemoteRef } from '../../managed-sources/git.js';
import { EffectOutcomeUnknownError, notApplied, type Executor } from './types.js';
import { GitSyncCodes } from '../../managed-sources/error-codes.js';
import { ActionReviewCodes } from '../refusals.js';

export const KB_EDIT_BOT = { name: 'Platform Knowledge Base', email: 'kb-edit@platform.invalid' };

/** Push failures that prove the server took nothing (refused before any ref moved). */
const NOTHING_PUSHED = new Set<string>([
  GitSyncCodes.GIT_AUTH_FAILED,
  GitSyncCodes.GIT_REPOSITORY_NOT_FOUND,
  GitSyncCodes.GIT_EGRESS_REFUSED,
]);

/**
 * An approved `kb.pull_request.v1` (issue 13, `open_kb_pull_request`): clones the managed source's
 * branch with the source's saved credentials, commits the staged files on branch
 * `kb-edit/<proposal id>` on top of the commit they were staged against, pushes it and opens the
 * pull request through the forge client; the receipt carries `pr_url` and `changed_files`, and the
 * staged edits it carried are cleared. Anything refused before the push is `not_applied`; a pushed
 * branch whose pull request could not be opened is an unknown outcome (reconciliation).
 */
export const kbPullRequestExecutor: Executor<'kb.pull_request.v1'> = {
  actionType: 'kb.pull_request.v1',
  async execute(p, ctx) {
    const row = await ctx.em.findOne(ManagedSourceEntity, { id: p.source_id, tenant: ctx.tenant }, { refresh: true });
    if (!row || row.deletionState)
      return notApplied(
        ActionReviewCodes.source_not_found,
        `The managed source ${p.source_id} no longer exists; nothing pushed.`,
      );
    const creds = await openCredentials(ctx.em, ctx.config, row).catch(() => null);
    if (!creds)
      return notApplied(
        ActionReviewCodes.source_credentials_missing,
        `The managed source ${row.id} has no usable saved credentials to push with; nothing pushed.`,
      );
    const url = row.repoUrl;
    const remote = gitRemote(ctx.config.egress, url, creds);
    const host = new URL(url).host;
    const branch = kbEditBranch(ctx.proposalId);
    const dir = await mkdtemp(path.join(tmpdir(), 'kb-edit-'));
    try {
      let baseBranch: string;
      let sha: string;
      try {
        let resolved = await resolveRemoteRef({ ...remote, releaseRef: row.releaseRef });
        if (resolved.kind !== 'branch') resolved = await resolveRemoteRef({ ...remote, releaseRef: null });
        baseBranch = resolved.ref.slice('refs/heads/'.length);
        await cloneBranch(remote, dir, baseBranch);
        ctx.heartbeat();
        const haveBase = await hasCommit(dir, p.base_commit);
        await checkoutNewBranch(dir, branch, haveBase ? p.base_commit : resolved.commitSha);
        for (const f of p.files) {
          if ((f.status === 'D' || f.status === 'R') && (f.status === 'D' ? f.path : f.previous_path)) {
            const gone = f.status === 'D' ? f.path : f.previous_path!;
            await rm(path.join(dir, ...gone.split('/')), { force: true });
            await stagePath(dir, gone, 'remove');
          }
          if (f.status === 'D') continue;
          const target = path.join(dir, ...f.path.split('/'));
          await mkdir(path.dirname(target), { recursive: true });
          await writeFile(target, f.content, 'utf8');
          await stagePath(dir, f.path, 'add');
        }
        sha = await commitAs(dir, KB_EDIT_BOT, `${p.commit_message}\n\nAction Review proposal ${ctx.proposalId}.`);
      } catch (err) {
        const e = classifyGitError(err, host, creds.kind);
        return notApplied(
          ActionReviewCodes.git_failed,
          `Preparing ${branch} failed (${e.code}): ${e.message} Nothing was pushed.`,
        );
      }
      if (ctx.signal.aborted)
        return notApplied(ActionReviewCodes.interrupted, 'The worker stopped before the push; nothing pushed.');
      try {
        await pushBranch(remote, dir, branch);
      } catch (err) {
        const e = classifyGitError(err, host, creds.kind);
        if (NOTHING_PUSHED.has(e.code))
          return notApplied(ActionReviewCodes.push_refused, `Pushing ${branch} was refused (${e.code}): ${e.message}`);
        throw new EffectOutcomeUnknownError(
          `Pushing ${branch} failed (${e.code}); whether it reached the server is unknown.`,
          {
            cause: err,
          },
        );
      }
      ctx.heartbeat();
      let pr;
      try {
        pr = await openPullRequest({
          policy: ctx.config.egress,
          coordinates: repoCoordinates(
            url,
            (await ctx.settings?.get('enhancements.knowledge_base.forge_api_url')) ?? null,
          ),
          token: creds.secret,
          title: p.title,
          head: branch,
          base: baseBranch,
          body: `${p.body}\n\n---\nKnowledge-base edit through Action Review proposal ${ctx.proposalId}.`,
          signal: ctx.signal,
        });
      } catch (err) {
        throw new EffectOutcomeUnknownError(
          `The branch ${branch} was pushed but the pull request could not be opened: ${(err as Error).message}`,
          { cause: err },
        );
      }
      await clearStagedEdits(ctx.em, ctx.tenant, p.source_id, p.staged_by, p.files);
      return {
        outcome: 'executed',
        result: {
          pr_url: pr.html_url,
          pr_number: pr.number,
          branch,
          base_branch: baseBranch,
          commit_sha: sha,
          changed_files: p.files.map((f) => ({ path: f.path, status: f.status })),
        },
      };
    } finally {
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }
  },
};
