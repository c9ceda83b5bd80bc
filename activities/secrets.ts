import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../shared/config.js';
import {
  beginRotation,
  finishRotation,
  resealBatch,
  retireKeys,
  verifyRotation,
  type BatchResult,
  type VerifyResult,
} from '../shared/secrets/rotation.js';
import { withHeartbeat } from './heartbeat.js';

/** Every step heartbeats: a worker that dies mid-batch is noticed at the profile's heartbeat timeout (10 s). */
const beating = <T>(work: () => Promise<T>) => withHeartbeat(2_000, work);

/** The re-seal workflow's steps (shared/secrets/rotation.ts); each is one transaction and idempotent. */
export function createSecretActivities(deps: { orm: MikroORM; config: AppConfig }) {
  return {
    beginSecretRotation(rotationId: string): Promise<{ targetKid: string; status: string }> {
      return beating(() => beginRotation(deps.orm.em.fork(), rotationId));
    },
    resealSecretBatch(input: {
      rotationId: string;
      table: string;
      afterPk: string | null;
      batchSize: number;
    }): Promise<BatchResult> {
      return beating(() => resealBatch(deps.orm.em.fork(), deps.config, input));
    },
    verifySecretRotation(rotationId: string): Promise<VerifyResult> {
      return beating(() => verifyRotation(deps.orm.em.fork(), deps.config, rotationId));
    },
    retireSecretKeys(rotationId: string): Promise<{ retired: string[]; remaining: number }> {
      return beating(() => retireKeys(deps.orm.em.fork(), rotationId));
    },
    finishSecretRotation(input: { rotationId: string; status: 'completed' | 'failed'; error?: string }): Promise<void> {
      return beating(() => finishRotation(deps.orm.em.fork(), input));
    },
  };
}

export type SecretActivities = ReturnType<typeof createSecretActivities>;
