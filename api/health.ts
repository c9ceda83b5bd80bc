import type { AppDeps } from '../shared/app-deps.js';
import { sql } from '../shared/db/sql.js';

export type CheckResult = 'ok' | 'unavailable';

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Asks PostgreSQL and Temporal to answer, each within 3 seconds; the causes go to the log only. */
export async function checkDependencies(deps: AppDeps): Promise<{ database: CheckResult; temporal: CheckResult }> {
  const database = withTimeout(sql(deps.orm.em, 'select 1'), 3_000).then(
    () => 'ok' as const,
    (err: unknown) => {
      deps.log.warn('readiness: database check failed', { error_message: String((err as Error)?.message ?? err) });
      return 'unavailable' as const;
    },
  );
  const temporal = withTimeout(
    deps.temporalConnection.withDeadline(Date.now() + 3_000, () =>
      deps.temporalConnection.workflowService.getSystemInfo({}),
    ),
    3_500,
  ).then(
    () => 'ok' as const,
    (err: unknown) => {
      deps.log.warn('readiness: temporal check failed', { error_message: String((err as Error)?.message ?? err) });
      return 'unavailable' as const;
    },
  );
  return { database: await database, temporal: await temporal };
}
