/**
 * The replicas topology (issue 33): two API processes and two worker processes, each an OS process
 * of its own, on one PostgreSQL database and one Temporal namespace (`REPLICAS_NAMESPACE`, so the
 * workers' Schedules, whose ids are fixed, meet no other file's). Hosted mode (tenant `acme`), so
 * the log relay between processes is on; both APIs share the data folder (its secrets key file), as
 * compose replicas share the volume or `PLATFORM_SECRETS_KEY`. No `PLATFORM_SIGNING_KEY`: download
 * links must verify on every replica without it. The identity provider also serves the console's sign-in
 * (it signs `alice` in at once).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { inject } from 'vitest';
import { registerSearchAttributes } from '../../scripts/lib/temporal-config.js';
import { spawnApiProcess, type ApiProcess } from '../helpers/api-process.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { startFakeOidc, type FakeOidc } from '../helpers/fake-oidc.js';
import { uniqueTaskQueue } from '../helpers/temporal.js';
import { spawnWorkerProcess, type WorkerProcess } from '../helpers/worker-process.js';
import { REPLICAS_NAMESPACE } from '../setup/global-setup.js';
import { claims, INSTALLATION, TENANT } from '../hosted/support.js';
import { http } from '../helpers/stack.js';

const READY_MS = 180_000;

export interface Replicas {
  db: TestDatabase;
  /** Signs hosted assertions; its console sign-in signs `alice` in at once. */
  idp: FakeOidc;
  /** What every process of the deployment gets (a test process loading it is one more replica). */
  env: Record<string, string>;
  apis: [ApiProcess, ApiProcess];
  workers: [WorkerProcess, WorkerProcess];
  close(): Promise<void>;
}

/**
 * `namespace`: the Temporal namespace of this topology; two topologies running at once must not share
 * one (each's workers re-point the fixed-id Schedules at their own task queue).
 */
export async function startReplicas(
  extraEnv: Record<string, string> = {},
  namespace: string = REPLICAS_NAMESPACE,
): Promise<Replicas> {
  const [db, idp] = await Promise.all([
    createTestDatabase(),
    startFakeOidc({ subject: 'alice', claims: claims('alice') }),
  ]);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'replicas-'));
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  await registerSearchAttributes(connection, namespace).finally(() => connection.close());
  const env: Record<string, string> = {
    AUTH_JWKS_URL: idp.jwksUrl,
    AUTH_ISSUER: idp.issuer,
    AUTH_AUDIENCE: idp.audience,
    // The review console signs people in through the same provider (authorization code with PKCE).
    AUTH_CLIENT_ID: idp.clientId,
    AUTH_CLIENT_SECRET: idp.clientSecret,
    AUTH_PROVIDER: 'hosted',
    AUTH_INSTALLATION: INSTALLATION,
    PLATFORM_TENANT: TENANT,
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: '3',
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: namespace,
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
