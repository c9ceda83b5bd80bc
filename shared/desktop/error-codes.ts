// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Error codes of desktop mode: sign-in, activation, credit, updates, MCP clients, diagnostics.
 * @error-codes: a family module (docs/architecture.md "Error codes"); the wire string is the key, in the spec's casing.
 */
export const DesktopCodes = {
  not_signed_in: 'not_signed_in',
  not_activated: 'not_activated',
  device_credential_refused: 'device_credential_refused',
  platform_ai_only: 'platform_ai_only',
  no_credit_reading: 'no_credit_reading',
  update_unavailable: 'update_unavailable',
  sign_in_attempt_finished: 'sign_in_attempt_finished',
  desktop_mode_unavailable: 'desktop_mode_unavailable',
  mcp_client_not_installed: 'mcp_client_not_installed',
  mcp_client_config_unreadable: 'mcp_client_config_unreadable',
  browser_tool_not_managed: 'browser_tool_not_managed',
} as const;
export type DesktopCode = (typeof DesktopCodes)[keyof typeof DesktopCodes];
