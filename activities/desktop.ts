import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../shared/config.js';
import { autoDiagnosticsAttempt } from '../shared/desktop/diagnostics.js';
import type { Logger } from '../shared/log.js';
import type { Settings } from '../shared/settings/store.js';
import type { AutoDiagnosticsOutcome } from '../workflows/desktop-diagnostics-definitions.js';

/** Desktop mode's background work: the hourly automatic diagnostics attempt. */
export function createDesktopActivities(deps: { orm: MikroORM; config: AppConfig; settings: Settings; log: Logger }) {
  return {
    /** At most one attempt an hour: the attempt time is recorded before sending, so a retry does nothing. */
    async desktopDiagnosticsAutoAttempt(): Promise<AutoDiagnosticsOutcome> {
      const outcome = await autoDiagnosticsAttempt(deps, deps.orm.em.fork());
      if (outcome.outcome === 'sent' || outcome.outcome === 'failed')
        deps.log.info('desktop diagnostics automatic attempt', { outcome: outcome.outcome });
      return outcome;
    },
  };
}

export type DesktopActivities = ReturnType<typeof createDesktopActivities>;
