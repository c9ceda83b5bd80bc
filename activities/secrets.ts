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

/** The re-seal workflow's steps (shared/secrets/rotation.ts); each is one transaction and idempotent. */
export function createSecretActivities(deps: { orm: MikroORM; config: AppConfig }) {
  return {
    beginSecretRotation(rotationId: string): Promise<{ targetKid: string; status: string }> {
      return beginRotation(deps.orm.em.fork(), rotationId);
    },
    resealSecretBatch(input: {
      rotationId: string;
      table: string;
      afterPk: string | null;
      batchSize: number;
    }): Promise<BatchResult> {
      return resealBatch(deps.orm.em.fork(), deps.config, input);
    },
    verifySecretRotation(rotationId: string): Promise<VerifyResult> {
      return verifyRotation(deps.orm.em.fork(), deps.config, rotationId);
    },
    retireSecretKeys(rotationId: string): Promise<{ retired: string[]; remaining: number }> {
      return retireKeys(deps.orm.em.fork(), rotationId);
    },
    finishSecretRotation(input: { rotationId: string; status: 'completed' | 'failed'; error?: string }): Promise<void> {
      return finishRotation(deps.orm.em.fork(), input);
    },
  };
}

export type SecretActivities = ReturnType<typeof createSecretActivities>;
