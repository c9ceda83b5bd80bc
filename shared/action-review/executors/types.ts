import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { PrincipalRef } from '../../auth/principal.js';
import type { AppConfig } from '../../config.js';
import type { ErrorCode } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Settings } from '../../settings/store.js';
import type { ActionType } from '../action-types.js';
import type { Payload } from '../payloads.js';
import type { EffectOutcome } from '../types.js';

export interface ExecutorContext {
  proposalId: string;
  tenant: string;
  executedBy: PrincipalRef;
  em: EntityManager;
  config: AppConfig;
  /** Aborted when the activity is cancelled (worker shutdown); executors stop what they can. */
  signal: AbortSignal;
  heartbeat(): void;
  /** For what a target system answered: its text goes here, never into a refusal or error detail. */
  log: Logger;
  /** Run-time settings (saved, env, default). */
  settings?: Settings;
  /** For effects that start workflows (a code-agent run); absent in a worker built without one. */
  temporal?: Client;
}

/**
 * Applies one action type's effect. Return `not_applied` only when certain nothing was written;
 * throw when the effect may have started but its outcome is unknown (the proposal then needs
 * reconciliation, never a retry): an `EffectOutcomeUnknownError` to say why in words a person may
 * read; anything else thrown is reported generically.
 */
export interface Executor<T extends ActionType> {
  actionType: T;
  execute(payload: Payload<T>, ctx: ExecutorContext): Promise<EffectOutcome>;
}

export const notApplied = (reason: ErrorCode, detail: string): EffectOutcome => ({
  outcome: 'not_applied',
  reason,
  detail,
});

/**
 * The effect may have happened and its outcome is unknown. The message is shown to people (it ends up
 * in `execution_error_detail`), so it is ours: classified, no target-system text; the raw failure
 * rides in `cause`, which goes to the log only.
 */
export class EffectOutcomeUnknownError extends Error {
  override name = 'EffectOutcomeUnknownError';
}
