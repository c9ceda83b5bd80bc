// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Error codes of configuration, secrets, language-model providers and the license.
 * @error-codes: a family module (docs/architecture.md "Error codes"); the wire string is the key, in the spec's casing.
 */
export const SettingsCodes = {
  container_service_mode_required: 'container_service_mode_required',
  mesh_auth_key_not_mounted: 'mesh_auth_key_not_mounted',
  tags_too_long: 'tags_too_long',
  provider_not_configured: 'provider_not_configured',
  provider_denied: 'provider_denied',
  LICENSE_SEAT_LIMIT_EXCEEDED: 'LICENSE_SEAT_LIMIT_EXCEEDED',
} as const;
export type SettingsCode = (typeof SettingsCodes)[keyof typeof SettingsCodes];
