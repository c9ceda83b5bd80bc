// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
/**
 * Error codes of agents, threads and rooms.
 * @error-codes: a family module (docs/architecture.md "Error codes"); the wire string is the key, in the spec's casing.
 */
export const AgentCodes = {
  AGENT_NAME_TAKEN: 'AGENT_NAME_TAKEN',
  AGENT_NOT_EDITABLE: 'AGENT_NOT_EDITABLE',
  BUILT_IN_AGENT: 'BUILT_IN_AGENT',
  default_agent_unavailable: 'default_agent_unavailable',
  no_accessible_agent: 'no_accessible_agent',
  ambiguous_agent_id: 'ambiguous_agent_id',
  ROOM_NAME_TAKEN: 'ROOM_NAME_TAKEN',
  ROOM_NOT_JOINED: 'ROOM_NOT_JOINED',
} as const;
export type AgentCode = (typeof AgentCodes)[keyof typeof AgentCodes];
