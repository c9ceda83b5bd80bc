/**
 * Operators find every lifecycle in the Temporal UI by tenant, resource id and a status that a failure
 * changes (issue 28, item 7). Statically: every workflow of workflows/index.ts has its entry in
 * LIFECYCLE_VISIBILITY, sets its status, and every start site passes the start attributes. On the
 * shared dev server: each lifecycle runs (the real workflow bundle, stub activities driving a failure
 * where it has one) and is then found through the visibility API (`client.workflow.list`) by tenant,
 * resource id and status; a failed source sync, which completes normally, by `PlatformStatus = "failed"`.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WithStartWorkflowOperation, type Client, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { AppConfig } from '../../shared/config.js';
import { ensureIntervalSchedule, type ScheduledWorkflowName } from '../../shared/temporal/interval-schedule.js';
import {
  ALL_TENANTS,
  LIFECYCLE_VISIBILITY,
  lifecycleSearchAttributes,
  type LifecycleName,
  type LifecycleStatus,
} from '../../shared/temporal/lifecycle-visibility.js';
import { SearchAttributes } from '../../shared/temporal/search-attributes.js';
import { workflowRef, type Workflows } from '../../shared/temporal/workflow-refs.js';
import * as workflows from '../../workflows/index.js';
import { approveAndExecuteUpdate } from '../../workflows/action-review-definitions.js';
import { wipSessionClosedSignal } from '../../workflows/blueprint-wip-definitions.js';
import { mergeSettledSignal } from '../../workflows/crm-merge-definitions.js';
import { sourceSyncWorkflowId } from '../../workflows/source-sync-definitions.js';
import { postMessageUpdate } from '../../workflows/thread-definitions.js';
import { installQuietRuntime, uniqueTaskQueue } from '../helpers/temporal.js';
import { managedSources, startGitStack, type GitStack } from '../managed-sources/support.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (rel: string) => readFileSync(path.join(root, rel), 'utf8');

describe('every lifecycle declares and sets tenant, resource id and status (static)', () => {
  const exported = Object.keys(workflows).sort();
  const registered = JSON.parse(read('temporal-config/search-attributes.json')).searchAttributes as Record<
    string,
    string
  >;

  it('has one LIFECYCLE_VISIBILITY entry per workflow exported by workflows/index.ts', () => {
    expect(exported.length).toBeGreaterThan(20);
    expect(Object.keys(LIFECYCLE_VISIBILITY).sort()).toEqual(exported);
  });

  it.each(exported)('%s: a registered status key, failure statuses among its statuses', (name) => {
    const entry = LIFECYCLE_VISIBILITY[name as LifecycleName];
    expect(registered[entry.statusKey]).toBe('Keyword');
    expect(entry.statuses.length).toBeGreaterThan(0);
    for (const failure of entry.failures) expect(entry.statuses).toContain(failure);
    expect(entry.failures.length).toBeGreaterThan(0);
    expect([SearchAttributes.tenant.name, SearchAttributes.resourceId.name].every((k) => k in registered)).toBe(true);
  });

  /** The module that defines each exported workflow (index.ts re-exports them). */
  const moduleOf = (name: string): string => {
    const line = read('workflows/index.ts')
      .split('\n')
      .find((l) => new RegExp(`\\b${name}\\b`).test(l));
    return `workflows/${/from '\.\/(.+)\.js'/.exec(line ?? '')?.[1]}.ts`;
  };

  it.each(exported)('%s sets its status in the workflow', (name) => {
    const source = read(moduleOf(name));
    const key = LIFECYCLE_VISIBILITY[name as LifecycleName].statusKey;
    const areaKey = key === 'ProposalStatus' ? 'proposalStatus' : key === 'MissionStatus' ? 'missionStatus' : null;
    if (areaKey) expect(source).toContain(`SearchAttributes.${areaKey}`);
    else expect(source).toMatch(new RegExp(`(setLifecycleStatus|trackFailure|trackOutcome)\\(\\s*'${name}'`));
  });

  /** `workflowRef('X')` calls that start a workflow, with their options object. */
  function startSites(): Array<{ file: string; name: string; options: string }> {
    const sites: Array<{ file: string; name: string; options: string }> = [];
    const walk = (dir: string): string[] =>
      readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
      );
    for (const file of ['api', 'activities', 'shared', 'worker'].flatMap(walk)) {
      // Comments may show a call as an example.
      const source = read(file).replace(/\/\*[\s\S]*?\*\//g, '');
      for (const m of source.matchAll(
        /(?:\.start|\.execute|WithStartWorkflowOperation)\(workflowRef\('(\w+)'\),\s*\{/g,
      )) {
        let depth = 0;
        let end = m.index + m[0].length - 1;
        for (; end < source.length; end++) {
          if (source[end] === '{') depth++;
          if (source[end] === '}' && --depth === 0) break;
        }
        sites.push({ file, name: m[1]!, options: source.slice(m.index, end + 1) });
      }
    }
    return sites;
  }

  it('every start site (API, activities) passes tenant, resource id and status at start', () => {
    const sites = startSites();
    expect(sites.length).toBeGreaterThan(15);
    const missing = sites
      .filter((s) => !/typedSearchAttributes: lifecycleSearchAttributes\(|SearchAttributes\.resourceId/.test(s.options))
      .map((s) => `${s.file}: ${s.name}`);
    expect(missing).toEqual([]);
    const withoutStatus = sites
      .filter((s) => /SearchAttributes\.resourceId/.test(s.options))
      .filter((s) => !/SearchAttributes\.(status|proposalStatus|missionStatus)/.test(s.options))
      .map((s) => `${s.file}: ${s.name}`);
    expect(withoutStatus).toEqual([]);
  });

  it('child workflows are started with their attributes (under the patch)', () => {
    for (const file of readdirSync(path.join(root, 'workflows')).filter((f) => f.endsWith('.ts'))) {
      const source = read(`workflows/${file}`);
      for (const m of source.matchAll(/(executeChild|startChild)(<[^(]*>)?\(/g)) {
        const call = source.slice(m.index, source.indexOf('});', m.index));
        expect(call, file).toMatch(/typedSearchAttributes|childSearchAttributes\(/);
      }
    }
  });
});

let env: TestWorkflowEnvironment;
let client: Client;
let worker: Worker;
let running: Promise<void>;
const taskQueue = uniqueTaskQueue();
/** One tenant per run: the dev server is shared with other test files. */
const tenant = `vis-${randomUUID()}`;
const deploymentTenant = `vis-deploy-${randomUUID()}`;
const config = { temporal: { taskQueue }, auth: { deploymentTenant } } as AppConfig;
const schedules: string[] = [];

const nonRetryable = (type: string, message = 'refused') => ApplicationFailure.nonRetryable(message, type);

/** The activities each lifecycle calls, driving the outcome the scenario wants (a failure where there is one). */
const activities = {
  // echo
  recordEcho: async () => {
    throw nonRetryable('DatabaseDown', 'the row could not be written');
  },
  // action review
  recordProposalCreated: async () => undefined,
  recordProposalTransition: async () => undefined,
  runProposalEffect: async () => ({ outcome: 'not_applied', reason: 'tracker_refused', detail: '422' }),
  // hand-back and its sweep (the sweep's proposals fail delivery)
  deliverHandback: async ({ proposalId }: { proposalId: string }) => {
    if (proposalId.startsWith('sweep-')) throw nonRetryable('ConversationStoreDown');
    return { delivered: false, messageId: null };
  },
  listPendingHandbacks: async () => [`sweep-${randomUUID()}`],
  // thread: no model provider configured
  recordUserMessage: async () => undefined,
  callModel: async () => {
    throw ApplicationFailure.create({
      type: 'LlmError',
      nonRetryable: true,
      message: 'No model provider is configured.',
      details: [{ kind: 'not_configured', message: 'No model provider.', action: 'Configure one.', error_id: 'e1' }],
    });
  },
  runToolCall: async () => undefined,
  // CRM merge
  recordMergeApproved: async () => undefined,
  expireMergeApproval: async () => ({ expired: false }),
  // secret re-seal
  beginSecretRotation: async () => ({ status: 'failed', targetKid: 'k2' }),
  // embedding re-index: the provider keeps failing
  beginEmbeddingReindex: async () => ({ status: 'running', consumers: ['documents'] }),
  reembedBatch: async () => {
    throw nonRetryable('ProviderDown');
  },
  finishEmbeddingReindex: async () => undefined,
  embeddingConsumerDone: async () => undefined,
  // source sync (its one activity, `managedSyncPrepare`): the remote refuses the credentials
  managedSyncPrepare: async () => {
    throw nonRetryable('GIT_AUTH_FAILED', 'Authentication failed.');
  },
  managedSyncFail: async (input: { sourceId: string; jobId: string; errorCode: string; message: string }) => ({
    outcome: 'failed',
    source_id: input.sourceId,
    job_id: input.jobId,
    error_code: input.errorCode,
    error: input.message,
  }),
  // source delete
  managedDeleteCleanup: async () => ({ agents: [], roles: [] }),
  managedDeleteRemove: async () => undefined,
  // auto-sync: one eligible source, whose sync fails
  autoSyncList: async (input: { tenant?: string }) => [
    { sourceId: `auto-${input.tenant}`, tenant: input.tenant, eligible: true, ineligibleReason: null },
  ],
  autoSyncStartJob: async () => `job-${randomUUID()}`,
  autoSyncRecord: async () => undefined,
  managedReleasePoll: async () => undefined,
  // ETL run: the job failed
  etlRunExecute: async () => 'failed',
  etlRunMarkInterrupted: async () => 'interrupted',
  // flow run: its one step fails
  flowRunStep: async () => 'failed',
  flowRunStepAbandoned: async () => 'failed',
  flowRunFinish: async (input: { status: string }) => input.status,
  // rechunk: the index is gone
  beginIndexRechunk: async () => ({ missing: true }),
  // ingest: a batch fails for good
  ingestDocumentBatch: async () => {
    throw nonRetryable('IngestRefused');
  },
  compactDocumentChunks: async () => undefined,
  buildDocumentVectorIndexes: async () => ({ built: 0 }),
  // desktop diagnostics: the upload failed
  desktopDiagnosticsAutoAttempt: async () => ({ outcome: 'failed', message: 'upload refused' }),
  // code agent (local runner): the run failed
  codeAgentLocalRun: async () => 'failed',
  codeAgentFinish: async (input: { status: string }) => input.status,
  // tracker poll: the tracker is unreachable
  trackerPoll: async (input: { poller: string }) => ({
    poller: input.poller,
    ok: false,
    error: { code: 'tracker_unreachable', message: 'connection refused' },
  }),
  // demo version and run
  demoVersionMarkValidating: async () => undefined,
  demoVersionValidate: async () => 'failed',
  demoRunStart: async () => ({ started: false, steps: [] }),
  // ticket RCA: the ticket could not be filed
  ticketRcaFileTicket: async () => ({ ok: false, code: 'TICKETING_SETUP_REQUIRED', message: 'No tracker.' }),
  ticketRcaFinish: async () => undefined,
  // blueprint rename past its deadline
  blueprintRenameCheck: async () => ({ status: 'waiting', reason: 'not merged' }),
  blueprintRenameExpire: async () => undefined,
  // hidden-blueprint purge
  purgeHiddenBlueprints: async () => ({ purged: [] }),
};

beforeAll(async () => {
  installQuietRuntime();
  env = await TestWorkflowEnvironment.createFromExistingServer({ address: inject('temporalAddress') });
  client = env.client;
  worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities,
  });
  running = worker.run();
});

afterAll(async () => {
  for (const id of schedules) await client?.schedule.getHandle(id).delete();
  worker?.shutdown();
  await running;
  await env?.teardown();
});

/** Waits (bounded) until visibility answers the query with this workflow: the dev server indexes asynchronously. */
async function expectFound(query: string, workflowId: string) {
  const ids = async () => {
    const out: string[] = [];
    for await (const w of client.workflow.list({ query })) out.push(w.workflowId);
    return out;
  };
  await expect.poll(ids, { timeout: 30_000, interval: 200 }).toContain(workflowId);
}

const q = (ids: { tenant: string; resourceId: string }, key: string, status: string) =>
  `${SearchAttributes.tenant.name} = "${ids.tenant}" AND ${SearchAttributes.resourceId.name} = "${ids.resourceId}" AND ${key} = "${status}"`;

/** Starts a lifecycle as its start site does (tenant, resource id, first status), to the stub worker. */
async function start<N extends LifecycleName>(
  name: N,
  args: Parameters<Workflows[N]>,
  ids: { resourceId: string; status: LifecycleStatus<N> },
): Promise<WorkflowHandle> {
  return client.workflow.start(workflowRef(name) as (...a: unknown[]) => Promise<unknown>, {
    taskQueue,
    workflowId: `${name}/${ids.resourceId}`,
    args: args as unknown[],
    typedSearchAttributes: lifecycleSearchAttributes(name, { tenant, ...ids }),
  });
}

/** Runs it to its end (a failure is an outcome here) and finds it by tenant, resource id and its final status. */
async function expectLifecycle<N extends LifecycleName>(
  name: N,
  handle: WorkflowHandle,
  resourceId: string,
  finalStatus: LifecycleStatus<N>,
  ends: 'completes' | 'fails' = 'completes',
) {
  if (ends === 'fails') await expect(handle.result()).rejects.toThrow();
  else await handle.result();
  const key = LIFECYCLE_VISIBILITY[name].statusKey;
  await expectFound(q({ tenant, resourceId }, key, finalStatus), handle.workflowId);
  const described = await handle.describe();
  expect(described.typedSearchAttributes.get(SearchAttributes.tenant)).toBe(tenant);
  expect(described.typedSearchAttributes.get(SearchAttributes.resourceId)).toBe(resourceId);
}

const id = () => randomUUID();

describe('each lifecycle is found through the visibility API by tenant, resource id and status', () => {
  it('a failed source sync completes normally and is found by PlatformStatus = "failed"', async () => {
    const sourceId = id();
    const jobId = id();
    const handle = await start('sourceSyncWorkflow', [{ sourceId, jobId, tenant, trigger: 'api' }], {
      resourceId: sourceId,
      status: 'running',
    });
    expect(await handle.result()).toMatchObject({ outcome: 'failed', error_code: 'GIT_AUTH_FAILED' });
    expect((await handle.describe()).status.name).toBe('COMPLETED');
    await expectFound(q({ tenant, resourceId: sourceId }, 'PlatformStatus', 'failed'), handle.workflowId);
    await expectFound(`PlatformStatus = "failed" AND ExecutionStatus = "Completed"`, handle.workflowId);
    const stillRunning: string[] = [];
    for await (const w of client.workflow.list({
      query: q({ tenant, resourceId: sourceId }, 'PlatformStatus', 'running'),
    }))
      stillRunning.push(w.workflowId);
    expect(stillRunning).not.toContain(handle.workflowId);
  });

  it('ingest: a batch that fails for good leaves PlatformStatus = "failed"', async () => {
    const indexName = `idx-${id()}`;
    const input = {
      tenant,
      indexName,
      root: '/docs',
      files: ['a.md'],
      skipped: [],
      chunkConfig: {} as never,
      batchSize: 10,
      checkpointInterval: 100,
      checkpointSleepMs: 0,
    };
    const handle = await start('ingestWorkflow', [input], { resourceId: indexName, status: 'running' });
    await expectLifecycle('ingestWorkflow', handle, indexName, 'failed', 'fails');
  });

  it('thread: a turn whose model call failed shows PlatformStatus = "turn_failed"', async () => {
    const threadId = id();
    const result = await client.workflow.executeUpdateWithStart(postMessageUpdate, {
      args: [{ messageId: id(), content: 'hello', authorKind: 'person', authorId: 'rita' }],
      startWorkflowOperation: new WithStartWorkflowOperation(workflowRef('threadWorkflow'), {
        taskQueue,
        workflowId: `threadWorkflow/${threadId}`,
        args: [{ threadId, tenant, agentId: 'agent' }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: lifecycleSearchAttributes('threadWorkflow', {
          tenant,
          resourceId: threadId,
          status: 'idle',
        }),
      }),
    });
    expect(result).toMatchObject({ ok: false, llmFailure: { kind: 'not_configured' } });
    await expectFound(
      q({ tenant, resourceId: threadId }, 'PlatformStatus', 'turn_failed'),
      `threadWorkflow/${threadId}`,
    );
    await client.workflow.getHandle(`threadWorkflow/${threadId}`).terminate('test done');
  });

  it('proposal: an effect not applied is found by ProposalStatus = "not_applied"', async () => {
    const proposalId = id();
    const rita = { kind: 'person', id: 'rita', tenant, label: 'rita', credential: 'idp_jwt' } as const;
    const record = {
      proposalId,
      tenant,
      actionType: 'ticket.write.v1',
      payload: { title: 'x', body: 'y', labels: [] },
      payloadDigest: 'digest',
      expectedEffect: 'One issue.',
      requestedStatement: null,
      requester: rita,
      requesterKind: 'person',
      botId: null,
      threadId: null,
      subject: null,
      executionOrigin: 'any',
      createdAt: new Date().toISOString(),
    } as const;
    const handle = await start(
      'actionReviewProposalWorkflow',
      [{ record, runtime: { effectTimeoutSeconds: 30, effectHeartbeatSeconds: 10, handbackMaxAttempts: 1 } }] as never,
      { resourceId: proposalId, status: 'requested' },
    );
    await handle.executeUpdate(approveAndExecuteUpdate, {
      args: [
        {
          caller: { ...rita, id: 'ravi', label: 'ravi' },
          reason: null,
          expectedVersion: null,
          expectedPayloadDigest: null,
          origin: { surface: 'api', threadId: null },
        },
      ],
    });
    await expectFound(q({ tenant, resourceId: proposalId }, 'ProposalStatus', 'not_applied'), handle.workflowId);
  });

  it('code-agent run (local runner) that failed: PlatformStatus = "failed"', async () => {
    const runId = id();
    const handle = await start(
      'codeAgentRunWorkflow',
      [{ runId, tenant, adapter: 'local', timeoutSeconds: 60, pollSeconds: 1 }],
      { resourceId: runId, status: 'queued' },
    );
    await expectLifecycle('codeAgentRunWorkflow', handle, runId, 'failed');
  });

  it('ETL run whose job failed: PlatformStatus = "failed"', async () => {
    const runId = id();
    const handle = await start('etlRunWorkflow', [{ runId, tenant, timeoutSeconds: 60 }], {
      resourceId: runId,
      status: 'running',
    });
    await expectLifecycle('etlRunWorkflow', handle, runId, 'failed');
  });

  it('flow run whose step failed: PlatformStatus = "failed"', async () => {
    const runId = id();
    const handle = await start('flowRunWorkflow', [{ runId, tenant, steps: [{ index: 0, runConcurrently: false }] }], {
      resourceId: runId,
      status: 'running',
    });
    await expectLifecycle('flowRunWorkflow', handle, runId, 'failed');
  });

  it('CRM merge settled without the merge applied: PlatformStatus = "not_applied"', async () => {
    const approvalId = id();
    const handle = await start(
      'crmMergeApprovalWorkflow',
      [{ approvalId, tenant, connectionName: 'crm', ttlSeconds: 600, settleWaitSeconds: 600 }],
      { resourceId: approvalId, status: 'open' },
    );
    await handle.signal(mergeSettledSignal, { finalStatus: 'not_applied' });
    await expectLifecycle('crmMergeApprovalWorkflow', handle, approvalId, 'not_applied');
  });

  it('rechunk of a missing index: PlatformStatus = "failed"', async () => {
    const indexName = `idx-${id()}`;
    const handle = await start(
      'rechunkWorkflow',
      [{ tenant, indexName, runId: id(), config: {} as never, batchSize: 10 }],
      { resourceId: indexName, status: 'running' },
    );
    await expectLifecycle('rechunkWorkflow', handle, indexName, 'failed');
  });

  it('blueprint rename past its deadline: PlatformStatus = "expired"', async () => {
    const blueprintId = id();
    const input = {
      tenant,
      blueprintId,
      oldName: 'a',
      newName: 'b',
      newPath: 'blueprints/b',
      deadlineMs: Date.now() - 1000,
    };
    const handle = await start('blueprintRenameWorkflow', [input], { resourceId: blueprintId, status: 'waiting' });
    await expectLifecycle('blueprintRenameWorkflow', handle, blueprintId, 'expired');
  });

  it('blueprint WIP session discarded: PlatformStatus = "discarded"', async () => {
    const sessionId = id();
    const handle = await start(
      'blueprintWipSessionWorkflow',
      [{ sessionId, tenant, blueprintId: id(), ttlSeconds: 3600 }],
      { resourceId: sessionId, status: 'open' },
    );
    await handle.signal(wipSessionClosedSignal, { status: 'discarded' });
    await expectLifecycle('blueprintWipSessionWorkflow', handle, sessionId, 'discarded');
  });

  it('echo whose activity failed for good: PlatformStatus = "failed" and the workflow Failed', async () => {
    const jobId = id();
    const handle = await start('echoWorkflow', [{ jobId, tenant, message: 'hi', requestedBy: 'rita' }], {
      resourceId: jobId,
      status: 'running',
    });
    await expectLifecycle('echoWorkflow', handle, jobId, 'failed', 'fails');
    await expectFound(
      `${q({ tenant, resourceId: jobId }, 'PlatformStatus', 'failed')} AND ExecutionStatus = "Failed"`,
      handle.workflowId,
    );
  });

  it('hand-back out of attempts: PlatformStatus = "pending"', async () => {
    const proposalId = id();
    const handle = await start('actionReviewHandbackWorkflow', [{ proposalId, maxAttempts: 1 }], {
      resourceId: proposalId,
      status: 'running',
    });
    await expectLifecycle('actionReviewHandbackWorkflow', handle, proposalId, 'pending');
  });

  it('secret re-seal whose rotation failed, embedding re-index whose provider failed, source delete', async () => {
    const rotationId = id();
    const reseal = await start('secretResealWorkflow', [{ rotationId, batchSize: 10, pauseMs: 0 }], {
      resourceId: rotationId,
      status: 'running',
    });
    await expectLifecycle('secretResealWorkflow', reseal, rotationId, 'failed');
    const runId = id();
    const identity = { provider_kind: 'openai', sub_provider: '', model_name: 'm' };
    const reindex = await start(
      'embeddingReindexWorkflow',
      [{ tenant, runId, identity, previous: null, batchSize: 10 }] as never,
      { resourceId: runId, status: 'running' },
    );
    await expectLifecycle('embeddingReindexWorkflow', reindex, runId, 'failed');
    const sourceId = id();
    const del = await start('sourceDeleteWorkflow', [{ sourceId, tenant }], {
      resourceId: sourceId,
      status: 'deleting',
    });
    await expectLifecycle('sourceDeleteWorkflow', del, sourceId, 'deleted');
  });

  it('demo version and run that failed, ticket RCA that could not file its ticket', async () => {
    const versionId = id();
    const version = await start('demoVersionWorkflow', [{ versionId }], {
      resourceId: versionId,
      status: 'validating',
    });
    await expectLifecycle('demoVersionWorkflow', version, versionId, 'failed');
    const runId = id();
    const run = await start('demoRunWorkflow', [{ runId }], { resourceId: runId, status: 'running' });
    await expectLifecycle('demoRunWorkflow', run, runId, 'failed');
    const psid = id();
    const rca = await start('ticketRcaWorkflow', [{ tenant, presenterSessionId: psid, attempt: 1 }], {
      resourceId: psid,
      status: 'preparing',
    });
    await expectLifecycle('ticketRcaWorkflow', rca, psid, 'failed');
  });

  /** A schedule of the worker, triggered once: its run carries the schedule's attributes. */
  async function triggerSchedule<N extends ScheduledWorkflowName>(workflow: N, args: Parameters<Workflows[N]>) {
    const scheduleId = `vis-${workflow}-${id()}`;
    await ensureIntervalSchedule(client, config, { scheduleId, workflow, args, everySeconds: 3600, purpose: 'test' });
    schedules.push(scheduleId);
    await client.schedule.getHandle(scheduleId).trigger();
    return scheduleId;
  }

  /** Waits until the schedule's run shows the status (tenant `*` for a sweep, PLATFORM_TENANT otherwise). */
  async function expectScheduledRun(workflow: ScheduledWorkflowName, scheduleId: string, status: string) {
    const t = LIFECYCLE_VISIBILITY[workflow].tenant === 'all' ? ALL_TENANTS : deploymentTenant;
    const query = `${q({ tenant: t, resourceId: scheduleId }, 'PlatformStatus', status)} AND WorkflowType = "${workflow}"`;
    await expect
      .poll(
        async () => {
          const out: string[] = [];
          for await (const w of client.workflow.list({ query })) out.push(w.workflowId);
          return out.length;
        },
        { timeout: 30_000, interval: 200 },
      )
      .toBe(1);
  }

  it('scheduled runs: auto-sync (its failed child sync found too), hand-back sweep, tracker poll, diagnostics, purge', async () => {
    const autoSync = await triggerSchedule('managedSourceAutoSyncWorkflow', [{ tenant }]);
    await expectScheduledRun('managedSourceAutoSyncWorkflow', autoSync, 'completed_with_failures');
    // The child sync of the auto-sync: its source's tenant and id, and its failure.
    const child: string[] = [];
    const childQuery = `${q({ tenant, resourceId: `auto-${tenant}` }, 'PlatformStatus', 'failed')} AND WorkflowType = "sourceSyncWorkflow"`;
    await expect
      .poll(
        async () => {
          child.length = 0;
          for await (const w of client.workflow.list({ query: childQuery })) child.push(w.workflowId);
          return child.length;
        },
        { timeout: 30_000, interval: 200 },
      )
      .toBe(1);
    expect(child[0]).toMatch(new RegExp(`^${sourceSyncWorkflowId(`auto-${tenant}`, '')}`));

    const sweep = await triggerSchedule('actionReviewHandbackSweepWorkflow', [{ limit: 10 }]);
    await expectScheduledRun('actionReviewHandbackSweepWorkflow', sweep, 'completed_with_failures');
    const poll = await triggerSchedule('trackerPollWorkflow', [{ poller: 'issue_tracker', trigger: 'schedule' }]);
    await expectScheduledRun('trackerPollWorkflow', poll, 'failed');
    const diagnostics = await triggerSchedule('desktopDiagnosticsWorkflow', []);
    await expectScheduledRun('desktopDiagnosticsWorkflow', diagnostics, 'failed');
    const purge = await triggerSchedule('blueprintHiddenPurgeWorkflow', []);
    await expectScheduledRun('blueprintHiddenPurgeWorkflow', purge, 'completed');
  });
});

describe('a source sync failed through the API, as an operator looks for it', () => {
  let git: GitStack;
  beforeAll(async () => {
    git = await startGitStack({ dataDirPrefix: 'vis-data-' });
  });
  afterAll(() => git?.close());

  it('is a Completed workflow found by tenant, source id and PlatformStatus = "failed"', async () => {
    const repo = git.gitServer.repo('vis');
    repo.write({ 'x.md': 'x' });
    const sources = managedSources(() => git, { name: 'vis repo', scan_types_enabled: ['agents'] });
    const sourceId = await sources.create(repo, { credentials: { kind: 'basic', username: 'bot', password: 'wrong' } });
    const res = await sources.sync(sourceId);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ outcome: 'failed', error_code: 'GIT_AUTH_FAILED' });
    const workflowId = sourceSyncWorkflowId(sourceId, res.body.data.job_id as string);
    const ids = { tenant: git.stack.config.auth.deploymentTenant, resourceId: sourceId };
    await expectFound(`${q(ids, 'PlatformStatus', 'failed')} AND ExecutionStatus = "Completed"`, workflowId);
  });
});
