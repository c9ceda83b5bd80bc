import { Context } from '@temporalio/activity';

/**
 * Runs `work` while heartbeating every `intervalMs`, so a worker that dies mid-call is noticed at
 * the activity's heartbeat timeout instead of its start-to-close limit. Used around the long calls
 * of activities (the language-model call, the Action Review effect). Must run inside an activity.
 */
export async function withHeartbeat<T>(
  intervalMs: number,
  work: () => Promise<T>,
  ctx: Context = Context.current(),
): Promise<T> {
  const timer = setInterval(() => ctx.heartbeat(), intervalMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
