import { proxyActivities } from '@temporalio/workflow';
import type { DesktopActivities } from '../activities/desktop.js';
import { ActivityProfiles } from '../shared/temporal/activity-profiles.js';
import type { AutoDiagnosticsOutcome } from './desktop-diagnostics-definitions.js';
import { trackOutcome } from './visibility.js';

// One attempt: an upload is not repeated blindly (the activity records the attempt before sending).
const desktop = proxyActivities<DesktopActivities>(ActivityProfiles.irreversible);

/**
 * The automatic diagnostics attempt, started by the `desktop-diagnostics-auto` Schedule every hour
 * (ensured at worker start when desktop mode is on). The activity decides whether anything is sent.
 */
export async function desktopDiagnosticsWorkflow(): Promise<AutoDiagnosticsOutcome> {
  return trackOutcome(
    'desktopDiagnosticsWorkflow',
    () => desktop.desktopDiagnosticsAutoAttempt(),
    ({ outcome }) => outcome,
  );
}
