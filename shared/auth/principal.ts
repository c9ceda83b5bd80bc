// @workflow-safe: workflows/ may import this module (no Node built-ins, I/O or clocks; see shared/README.md).
import type { Permission } from './rbac.js';

/** Who is calling: a person, an agent (sandbox thread token), the system (service token) or an app-only client. */
export type PrincipalKind = 'person' | 'agent' | 'system' | 'app';

/** The credential that proved the caller. */
export type CredentialKind =
  | 'idp_jwt'
  | 'pat'
  | 'sandbox_token'
  | 'service_token'
  | 'auth_disabled'
  /** The container-service ingress authenticated the user with their own warehouse credentials (MCP gateway). */
  | 'ingress';

export interface Principal {
  kind: PrincipalKind;
  id: string;
  tenant: string;
  displayName: string;
  roles: string[];
  permissions: Set<Permission>;
  credential: CredentialKind;
  /** Set for `pat`: which token, so it can be audited. */
  patId?: string;
  /** Set for agents (`gsk_`): the bot and thread the token is bound to. */
  botId?: string;
  threadId?: string;
  /** Hosted mode (`idp_jwt`): the active identity link the subject acts through. */
  bindingId?: string;
}

/** The plain, serialisable part of a principal: what workflows and events record as "who". */
export interface PrincipalRef {
  kind: PrincipalKind;
  id: string;
  tenant: string;
  label: string;
  credential: CredentialKind;
}

export function principalRef(p: Principal): PrincipalRef {
  return { kind: p.kind, id: p.id, tenant: p.tenant, label: p.displayName, credential: p.credential };
}

/** True for a genuinely authenticated person: an IdP user token, their own PAT, or the local admin with auth off. */
export function isPerson(p: Principal): boolean {
  return p.kind === 'person';
}
