// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Error codes of blueprints: import, versions, WIP sessions, remote-backed renames.
 * @error-codes: a family module (docs/architecture.md "Error codes"); the wire string is the key, in the spec's casing.
 */
export const BlueprintCodes = {
  BLUEPRINT_HAS_ACTIVE_MISSIONS: 'BLUEPRINT_HAS_ACTIVE_MISSIONS',
  BLUEPRINT_IDENTITY_MISMATCH: 'BLUEPRINT_IDENTITY_MISMATCH',
  BLUEPRINT_MANAGED_BY_SOURCE: 'BLUEPRINT_MANAGED_BY_SOURCE',
  BLUEPRINT_NAME_TAKEN: 'BLUEPRINT_NAME_TAKEN',
  BLUEPRINT_NOT_VERSIONED: 'BLUEPRINT_NOT_VERSIONED',
  BLUEPRINT_RENAME_PENDING: 'BLUEPRINT_RENAME_PENDING',
  BLUEPRINT_VERSIONS_RESTORING: 'BLUEPRINT_VERSIONS_RESTORING',
  BLUEPRINT_SOURCE_PATH_MISSING: 'BLUEPRINT_SOURCE_PATH_MISSING',
  BLUEPRINT_VERSION_TARGET_NOT_UNIQUE: 'BLUEPRINT_VERSION_TARGET_NOT_UNIQUE',
  BLUEPRINT_WIP_SESSION_ACTIVE: 'BLUEPRINT_WIP_SESSION_ACTIVE',
  BLUEPRINT_WIP_SESSION_CLOSED: 'BLUEPRINT_WIP_SESSION_CLOSED',
  BLUEPRINT_WIP_SESSION_CONFLICT: 'BLUEPRINT_WIP_SESSION_CONFLICT',
  DEFAULT_BLUEPRINT: 'DEFAULT_BLUEPRINT',
  LEGACY_BLUEPRINT_CONFIRMATION_REQUIRED: 'LEGACY_BLUEPRINT_CONFIRMATION_REQUIRED',
  // archive upload and validation
  UNSAFE_ZIP: 'UNSAFE_ZIP',
  INVALID_BLUEPRINT_ARCHIVE: 'INVALID_BLUEPRINT_ARCHIVE',
  manifest_invalid: 'manifest_invalid',
  path_traversal: 'path_traversal',
  unknown_role: 'unknown_role',
  invalid_combination: 'invalid_combination',
} as const;
export type BlueprintCode = (typeof BlueprintCodes)[keyof typeof BlueprintCodes];
