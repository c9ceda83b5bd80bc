/**
 * The replicas topology (issue 33): two API processes and two worker processes, each an OS process
 * of its own, on one PostgreSQL database and one Temporal namespace (`REPLICAS_NAMESPACE`, so the
 * workers' Schedules, whose ids are fixed, meet no other file's). Hosted mode (tenant `acme`), so
 * the log relay between processes is on; both APIs share the data folder (its secrets key file), as
 * compose replicas share the volume or `PLATFORM_SECRETS_KEY`. No `PLATFORM_SIGNING_KEY`: download
 * links must verify on every replica without it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { inject } from 'vitest';
import { registerSearchAttributes } from '../../scripts/lib/temporal-config.js';
import { spawnApiProcess, type ApiProcess } from '../helpers/api-process.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { startFakeIdp, type FakeIdp } from '../helpers/fake-idp.js';
import { oidcEnv } from '../helpers/oidc-stack.js';
import { uniqueTaskQueue } from '../helpers/temporal.js';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';
import { REPLICAS_NAMESPACE } from '../setup/global-setup.js';
import { claims, INSTALLATION, TENANT } from '../hosted/support.js';
import { http } from '../helpers/stack.js';

const READY_MS = 180_000;

export interface Replicas {
  db: TestDatabase;
  idp: FakeIdp;
  /** What every process of the deployment gets (a test process loading it is one more replica). */
  env: Record<string, string>;
  apis: [ApiProcess, ApiProcess];
  workers: [WorkerProcess, WorkerProcess];
  close(): Promise<void>;
}

export async function startReplicas(extraEnv: Record<string, string> = {}): Promise<Replicas> {
  const [db, idp] = await Promise.all([createTestDatabase(), startFakeIdp()]);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'replicas-'));
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  await registerSearchAttributes(connection, REPLICAS_NAMESPACE).finally(() => connection.close());
  const env: Record<string, string> = {
    ...oidcEnv(idp),
    AUTH_PROVIDER: 'hosted',
    AUTH_INSTALLATION: INSTALLATION,
    PLATFORM_TENANT: TENANT,
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: '3',
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: REPLICAS_NAMESPACE,
    TEMPORAL_TASK_QUEUE: uniqueTaskQueue(),
    PLATFORM_DATA_DIR: dataDir,
    ...extraEnv,
  };
  const workerEnv = { ...env, WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'), WORKER_SCHEDULES: '1' };
  // Four processes starting at once on a shared, loaded machine: a generous readiness bound.
  const apis = await Promise.all([spawnApiProcess(env, READY_MS), spawnApiProcess(env, READY_MS)]);
  const workers = [spawnWorkerProcess(workerEnv, READY_MS), spawnWorkerProcess(workerEnv, READY_MS)];
  const close = async () => {
    await Promise.all([...apis.map((a) => a.stop(5_000)), ...workers.map((w) => w.stop(5_000))]);
    await idp.close();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await Promise.all([...apis.map((a) => a.ready), ...workers.map((w) => w.ready)]);
  } catch (err) {
    await close();
    throw err;
  }
  return {
    db,
    idp,
    env,
    apis: apis as [ApiProcess, ApiProcess],
    workers: workers as [WorkerProcess, WorkerProcess],
    close,
  };
}

/** The control plane makes `subject` the deployment's initial admin through `api`; answers their token. */
export async function initialAdmin(r: Replicas, api: string, subject = 'alice'): Promise<string> {
  const boot = await http(api, 'POST', '/api/hosted-identities/initial-admin', {
    token: await r.idp.sign(claims('control-plane', { scope: 'hosted.identity.bootstrap' })),
    body: { subject },
  });
  if (boot.status !== 201) throw new Error(`initial admin: ${boot.status} ${boot.text}`);
  return await r.idp.sign(claims(subject));
}
