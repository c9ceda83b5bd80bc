import type { AppConfig } from '../config.js';
import { ConflictError, NotFoundError } from '../errors.js';
import type { Settings } from '../settings/store.js';
import { ProvisionerClient } from './provisioner.js';
import { DesktopCodes } from './error-codes.js';

/** What desktop-mode code needs from its process (the API's deps and the worker's activity deps both fit). */
export interface DesktopDeps {
  config: AppConfig;
  settings: Settings;
}

export interface DesktopSetup {
  provisioner: ProvisionerClient | null;
  platformAiOnly: boolean;
}

/** Desktop mode's deployment settings; off answers 404 (the notice routes pass `conflict` for their 409). */
export async function desktopSetup(
  deps: DesktopDeps,
  whenOff: 'not_found' | 'conflict' = 'not_found',
): Promise<DesktopSetup> {
  if (!(await deps.settings.get('desktop.enabled'))) {
    const message = 'Desktop mode is not enabled in this deployment.';
    const payload = { code: DesktopCodes.desktop_mode_unavailable };
    throw whenOff === 'conflict' ? new ConflictError(message, payload) : new NotFoundError(message, payload);
  }
  const baseUrl = await deps.settings.get('desktop.provisioner_url');
  return {
    provisioner: baseUrl
      ? new ProvisionerClient({
          baseUrl,
          clientId: await deps.settings.get('desktop.provisioner_client_id'),
          clientSecret: await deps.settings.get('desktop.provisioner_client_secret'),
          egress: deps.config.egress,
        })
      : null,
    platformAiOnly: await deps.settings.get('desktop.platform_ai_only'),
  };
}
