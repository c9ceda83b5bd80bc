/**
 * Setting one secret field (`POST /api/config/secret-fields/{field_path}/set-value`): a saved provider's
 * credential (`llm_providers.…`) or any secret setting (`etl.runner_token`, the service-desk webhook
 * secret, …); and the IAM status of a provider (`GET /api/config/{provider}/iam-status`, meaningful for
 * Bedrock only).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppDeps } from '../app-deps.js';
import type { Principal } from '../auth/principal.js';
import type { AppConfig } from '../config.js';
import { secretBox } from '../secrets/secret-box.js';
import { iamStatus, NO_CREDENTIALS } from './iam-status.js';
import { withDefaults, type ProviderKind } from './provider-kinds.js';
import { testFields } from './provider-service.js';
import { findProvider, openFields, splitFields, writeProvider } from './provider-store.js';
import { SETTINGS, type SettingPath } from '../settings/definitions.js';
import { saveSettingValues } from '../settings/save-settings.js';

/** Every secret setting's path (sealed at rest, masked on read): what `set-value` takes besides provider credentials. */
export const SECRET_SETTING_PATHS = (Object.keys(SETTINGS) as SettingPath[]).filter((p) => SETTINGS[p].secret);

/**
 * Sets a provider credential (`llm_providers.<kind>[.<vendor>].<secret>`, `setProviderSecret`) or a secret
 * setting; a setting goes through the configuration apply like any saved setting (sealed, versioned,
 * recorded), so a process-level one (environment only) is refused there (400 `process_level`), nothing saved.
 */
export async function setSecretField(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  fieldPath: string,
  value: string,
) {
  if (fieldPath.startsWith('llm_providers.')) return setProviderSecret(deps, em, principal, fieldPath, value);
  await saveSettingValues(deps, em, principal, { [fieldPath as SettingPath]: value });
  return { success: true, message: `Secret ${fieldPath} is set.`, field_path: fieldPath };
}

/**
 * Sets the secret at `llm_providers.<kind>[.<sub>].<field>`. For a configured provider the save-time
 * connection test runs first; a failed test answers `success` false and changes nothing.
 */
async function setProviderSecret(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  fieldPath: string,
  value: string,
) {
  const parts = fieldPath.split('.');
  const kind = parts[1] as ProviderKind;
  const sub = kind === 'other' ? parts[2]! : '';
  const field = parts.at(-1)!;
  const box = secretBox(deps.config);
  const stored = await findProvider(em, principal.tenant, kind, sub);
  const fields = { ...(stored ? openFields(stored, box) : {}), [field]: value };
  // A configured provider's credential: the save-time test runs before anything is written.
  if (stored?.configured) {
    const test = await testFields(
      { em, config: deps.config, tenant: principal.tenant },
      kind,
      sub,
      withDefaults(kind, fields),
    );
    if (!test.ok)
      return {
        success: false,
        message: `Connection test failed: ${test.message} The secret was not changed.`,
        field_path: fieldPath,
      };
  }
  const row = { tenant: principal.tenant, kind, subProvider: sub, ...splitFields(kind, fields, box) };
  await writeProvider(
    em,
    { ...row, admission: stored?.admission ?? 'auto', configured: stored?.configured ?? false },
    principal.id,
  );
  return { success: true, message: `Secret ${fieldPath} is set.`, field_path: fieldPath };
}

/** IAM credentials apply to the Bedrock-type provider only; for it, what they are and (refreshed) whether STS accepts them. */
export async function providerIamStatus(config: AppConfig, provider: string, region: string, refresh: boolean) {
  if (provider !== 'bedrock')
    return {
      provider,
      region,
      applicable: false,
      ...NO_CREDENTIALS,
      message: 'IAM credentials apply to the Bedrock-type provider only.',
      checked_at: null,
      cached: false,
    };
  return { provider: 'bedrock', region, applicable: true, ...(await iamStatus(config, region, refresh)) };
}
