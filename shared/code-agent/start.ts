import { createHash, randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import path from 'node:path';
import { CodeAgentRunEntity, CrmConnectionEntity, type CodeAgentRunRow } from '../db/entities/index.js';
import type { AppConfig } from '../config.js';
import type { Settings } from '../settings/store.js';
import { workflowRef } from '../temporal/workflow-refs.js';
import { codeAgentStatusQuery, codeAgentWorkflowId } from '../../workflows/code-agent-definitions.js';
import { CODING_AGENT_UNSUPPORTED, isUnsupported, resolveLauncher, type LauncherUnsupported } from './launcher.js';
import { CODE_AGENT_TERMINAL, type CodeAgentLiveStatus, type CodeAgentRunView } from './runs.js';
import { lifecycleSearchAttributes } from '../temporal/lifecycle-visibility.js';

export interface StartCodeAgentRequest {
  prompt: string;
  ticket_key?: string | undefined;
}

export interface StartDeps {
  em: EntityManager;
  settings: Settings;
  temporal: Client;
  config: AppConfig;
}

/** A run id: derived from an idempotency key (a retried tool call, an approved proposal) so a retry finds its run. */
export const codeAgentRunIdFor = (key: string | undefined) =>
  key ? `car_${createHash('sha256').update(key).digest('hex').slice(0, 24)}` : `car_${randomBytes(12).toString('hex')}`;

/**
 * Records a run and starts workflow `code-agent/<run_id>` with the launcher the settings resolve
 * to; answers `CODING_AGENT_UNSUPPORTED` (nothing written) when no adapter is usable. The same run
 * id twice answers the run it started.
 */
export async function startCodeAgentRun(
  deps: StartDeps,
  run: { runId: string; tenant: string; requestedBy: string },
  request: StartCodeAgentRequest,
): Promise<{ row: CodeAgentRunRow } | { unsupported: LauncherUnsupported }> {
  const { em } = deps;
  const existing = await em.findOne(CodeAgentRunEntity, { runId: run.runId, tenant: run.tenant });
  if (existing) return { row: existing };
  const launcher = await resolveLauncher(deps.settings, em);
  if (isUnsupported(launcher)) return { unsupported: launcher };
  if (launcher.adapter === 'agent_cli') {
    // Both connections must exist (api_key) before anything is written.
    const missing: string[] = [];
    for (const [key, name] of [
      ['enhancements.coding_agent.agent_cli.connection_name', launcher.connectionName],
      ['enhancements.coding_agent.agent_cli.git_connection_name', launcher.gitConnectionName],
    ] as const) {
      const conn = await em.findOne(CrmConnectionEntity, { tenant: run.tenant, name, type: 'api_key' });
      if (!conn) missing.push(key);
    }
    if (missing.length)
      return {
        unsupported: {
          code: CODING_AGENT_UNSUPPORTED,
          message: `The agent-CLI backend names no saved api_key connection in ${missing.join(' and ')}.`,
          missing,
        },
      };
  }
  const pollSeconds = await deps.settings.get('enhancements.code_agent.poll_interval_seconds');
  const now = new Date();
  const row = em.create(CodeAgentRunEntity, {
    runId: run.runId,
    tenant: run.tenant,
    adapter: launcher.adapter,
    status: 'queued',
    prompt: request.prompt,
    ticketKey: request.ticket_key ?? null,
    connectionName: launcher.adapter === 'local' ? null : launcher.connectionName,
    targetRepoUrl: launcher.targetRepoUrl || null,
    targetBaseRef: launcher.targetBaseRef,
    autoCreatePr: launcher.adapter === 'cloud' ? launcher.autoCreatePr : false,
    timeoutSeconds: launcher.timeoutSeconds,
    remoteAgentId: null,
    remoteRunId: null,
    remoteStatus: null,
    prUrl: null,
    branch: null,
    summary: null,
    exitCode: null,
    error: null,
    steps: [{ at: now.toISOString(), step: 'requested', detail: `${launcher.adapter} adapter` }],
    output: '',
    outputBytes: 0,
    outputTruncated: false,
    workerHost: null,
    processId: null,
    requestedBy: run.requestedBy,
    createdAt: now,
    startedAt: null,
    finishedAt: null,
    updatedAt: now,
    worktreePath: launcher.adapter === 'agent_cli' ? path.join(launcher.worktreeRoot, run.runId) : null,
    gitConnectionName: launcher.adapter === 'agent_cli' ? launcher.gitConnectionName : null,
    outcome: null,
  });
  await em.persistAndFlush(row);
  await deps.temporal.workflow.start(workflowRef('codeAgentRunWorkflow'), {
    taskQueue: deps.config.temporal.taskQueue,
    workflowId: codeAgentWorkflowId(run.runId),
    args: [
      {
        runId: run.runId,
        tenant: run.tenant,
        adapter: launcher.adapter,
        timeoutSeconds: launcher.timeoutSeconds,
        pollSeconds: pollSeconds ?? 15,
      },
    ],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: lifecycleSearchAttributes('codeAgentRunWorkflow', {
      tenant: run.tenant,
      resourceId: run.runId,
      status: 'queued',
    }),
  });
  return { row };
}

/** The run as the row has it, with the workflow's live view while it runs (best effort: null when it cannot answer). */
export async function codeAgentRunView(row: CodeAgentRunRow, temporal?: Client): Promise<CodeAgentRunView> {
  let live: CodeAgentLiveStatus | null = null;
  if (temporal && !CODE_AGENT_TERMINAL.includes(row.status)) {
    live = await temporal.workflow
      .getHandle(codeAgentWorkflowId(row.runId))
      .query(codeAgentStatusQuery)
      .catch(() => null);
  }
  return {
    run_id: row.runId,
    adapter: row.adapter,
    status: row.status,
    ticket_key: row.ticketKey,
    target_repo_url: row.targetRepoUrl,
    target_base_ref: row.targetBaseRef,
    auto_create_pr: row.autoCreatePr,
    remote_agent_id: row.remoteAgentId,
    remote_run_id: row.remoteRunId,
    remote_status: row.remoteStatus,
    pr_url: row.prUrl,
    branch: row.branch,
    outcome: row.outcome,
    summary: row.summary,
    exit_code: row.exitCode,
    error: row.error,
    steps: row.steps,
    output:
      row.adapter !== 'cloud'
        ? { text: row.output.slice(-16_000), bytes_seen: row.outputBytes, truncated: row.outputTruncated }
        : null,
    requested_by: row.requestedBy,
    created_at: row.createdAt.toISOString(),
    started_at: row.startedAt?.toISOString() ?? null,
    finished_at: row.finishedAt?.toISOString() ?? null,
    live,
  };
}
