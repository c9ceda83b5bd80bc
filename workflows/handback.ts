import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { HandbackActivities } from '../activities/handback.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type { HandbackInput, HandbackResult, HandbackSweepInput, HandbackSweepResult } from './handback-definitions.js';
import { setLifecycleStatus, trackFailure } from './visibility.js';

/**
 * Delivers one decision into the conversation that raised the proposal, retrying with backoff
 * while the conversation store fails. The delivery is idempotent (keyed by proposal), so this
 * workflow and the sweep may both try without a duplicate message.
 */
export async function actionReviewHandbackWorkflow(input: HandbackInput): Promise<HandbackResult> {
  const { deliverHandback } = proxyActivities<HandbackActivities>(ActivityProfiles.handbackDelivery(input.maxAttempts));
  return trackFailure('actionReviewHandbackWorkflow', async () => {
    try {
      const r = await deliverHandback({ proposalId: input.proposalId });
      setLifecycleStatus('actionReviewHandbackWorkflow', r.delivered ? 'delivered' : 'pending');
      return { proposalId: input.proposalId, delivered: r.delivered, messageId: r.messageId };
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // Out of attempts: the hand-back stays pending in PostgreSQL and the scheduled sweep retries it.
      setLifecycleStatus('actionReviewHandbackWorkflow', 'pending');
      return { proposalId: input.proposalId, delivered: false, messageId: null };
    }
  });
}

/** Run by the `action-review-handback-sweep` schedule: retries every hand-back still pending. */
export async function actionReviewHandbackSweepWorkflow(input: HandbackSweepInput = {}): Promise<HandbackSweepResult> {
  const { listPendingHandbacks } = proxyActivities<HandbackActivities>(ActivityProfiles.database);
  const { deliverHandback } = proxyActivities<HandbackActivities>(ActivityProfiles.handbackSweepDelivery);
  return trackFailure('actionReviewHandbackSweepWorkflow', async () => {
    const pending = await listPendingHandbacks({ limit: input.limit ?? 500 });
    let delivered = 0;
    let failed = 0;
    for (const proposalId of pending) {
      try {
        if ((await deliverHandback({ proposalId })).delivered) delivered++;
      } catch (err) {
        if (!(err instanceof ActivityFailure)) throw err;
        failed++; // the next sweep tries again
      }
    }
    setLifecycleStatus('actionReviewHandbackSweepWorkflow', failed > 0 ? 'completed_with_failures' : 'completed');
    return { pending: pending.length, delivered, failed };
  });
}
