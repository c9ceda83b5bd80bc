import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError } from '../errors.js';
import { sql } from '../db/sql.js';
import { DemoCodes } from '../demo/error-codes.js';

/**
 * Hosted mode's explicit identity links (spec, Hosted identity; Authentication 4). A verified
 * assertion's subject acts only through an `active` binding of the deployment's tenant and
 * installation; nothing here is cached, so a revoke holds from the next request on.
 */
export type BindingState = 'active' | 'revoked';
export type BindingRole = 'admin' | 'member';

export interface HostedScope {
  tenant: string;
  installation: string;
}

export interface ActiveBinding {
  bindingId: string;
  role: BindingRole;
}

/** What the hosted-identity routes answer: only the binding's id and its state. */
export interface BindingView {
  binding_id: string;
  state: BindingState;
}

/** Management assertion scopes (claim `scope`, space-separated, or `scp`, a list). */
export const HOSTED_SCOPES = {
  bootstrap: 'hosted.identity.bootstrap',
  emergencyRevoke: 'hosted.identity.emergency_revoke',
} as const;

const revocations = new EventEmitter();
revocations.setMaxListeners(0);

/** Called (in this process) right after a binding is revoked; open hosted WebSockets close on it. */
export function onBindingRevoked(listener: (bindingId: string) => void): () => void {
  revocations.on('revoked', listener);
  return () => revocations.off('revoked', listener);
}

function newBindingId(): string {
  return `hib_${randomBytes(12).toString('hex')}`;
}

interface Row {
  binding_id: string;
  subject: string;
  role: BindingRole;
  state: BindingState;
  initial_admin: boolean;
  create_operation_id: string | null;
  revoke_operation_id: string | null;
}

const COLUMNS = 'binding_id, subject, role, state, initial_admin, create_operation_id, revoke_operation_id';

const view = (row: Row): BindingView => ({ binding_id: row.binding_id, state: row.state });

export type BindingLookup = ActiveBinding | 'revoked' | 'none';

/** The subject's active link, else whether it only has revoked ones. */
export async function findBinding(em: EntityManager, scope: HostedScope, subject: string): Promise<BindingLookup> {
  const rows: Row[] = await sql(
    em,
    `select ${COLUMNS} from hosted_identity_bindings where tenant = ? and installation = ? and subject = ? order by state = 'active' desc limit 1`,
    [scope.tenant, scope.installation, subject],
  );
  const row = rows[0];
  if (!row) return 'none';
  if (row.state !== 'active') return 'revoked';
  return { bindingId: row.binding_id, role: row.role };
}

/** Whether a binding is still active (the WebSocket recheck). */
export async function bindingIsActive(em: EntityManager, bindingId: string): Promise<boolean> {
  const rows: { state: string }[] = await sql(em, `select state from hosted_identity_bindings where binding_id = ?`, [
    bindingId,
  ]);
  return rows[0]?.state === 'active';
}

async function insertBinding(
  em: EntityManager,
  scope: HostedScope,
  input: { subject: string; role: BindingRole; initialAdmin: boolean; operationId: string | null; createdBy: string },
): Promise<Row | undefined> {
  // Any unique index (the sole initial admin, one active link per subject, operation ids) makes this a no-op.
  const rows: Row[] = await sql(
    em,
    `insert into hosted_identity_bindings
       (binding_id, tenant, installation, subject, role, initial_admin, state, create_operation_id, created_by)
     values (?, ?, ?, ?, ?, ?, 'active', ?, ?)
     on conflict do nothing
     returning ${COLUMNS}`,
    [
      newBindingId(),
      scope.tenant,
      scope.installation,
      input.subject,
      input.role,
      input.initialAdmin,
      input.operationId,
      input.createdBy,
    ],
  );
  return rows[0];
}

async function selectOne(em: EntityManager, where: string, params: unknown[]): Promise<Row | undefined> {
  const rows: Row[] = await sql(em, `select ${COLUMNS} from hosted_identity_bindings where ${where} limit 1`, params);
  return rows[0];
}

function alreadyBound(subject: string): ConflictError {
  return new ConflictError('This subject already has an active identity link.', {
    code: DemoCodes.HOSTED_IDENTITY_ALREADY_BOUND,
    subject,
  });
}

function operationReused(): ConflictError {
  return new ConflictError('This operation_id was already used for another identity link; choose a new one.', {
    code: DemoCodes.HOSTED_IDENTITY_OPERATION_REUSED,
  });
}

/**
 * Creates the sole initial admin binding, once. Repeating the call with the same subject and
 * operation_id answers the binding it made (`created` false); anything else after that is a 409.
 */
export async function createInitialAdmin(
  em: EntityManager,
  scope: HostedScope,
  input: { subject: string; operationId: string | null; createdBy: string },
): Promise<{ binding: BindingView; created: boolean }> {
  const row = await insertBinding(em, scope, { ...input, role: 'admin', initialAdmin: true });
  if (row) return { binding: view(row), created: true };
  const existing = await selectOne(em, 'tenant = ? and installation = ? and initial_admin', [
    scope.tenant,
    scope.installation,
  ]);
  if (!existing) throw alreadyBound(input.subject);
  if (input.operationId !== null && existing.create_operation_id === input.operationId) {
    if (existing.subject !== input.subject) throw operationReused();
    return { binding: view(existing), created: false };
  }
  throw new ConflictError('The initial admin binding of this installation already exists; it is created only once.', {
    code: DemoCodes.HOSTED_INITIAL_ADMIN_EXISTS,
  });
}

/** Creates one ordinary (member) binding; the same operation_id again answers that binding (`created` false). */
export async function inviteIdentity(
  em: EntityManager,
  scope: HostedScope,
  input: { subject: string; operationId: string | null; createdBy: string },
): Promise<{ binding: BindingView; created: boolean }> {
  const row = await insertBinding(em, scope, { ...input, role: 'member', initialAdmin: false });
  if (row) return { binding: view(row), created: true };
  if (input.operationId !== null) {
    const byOp = await selectOne(em, 'tenant = ? and installation = ? and create_operation_id = ?', [
      scope.tenant,
      scope.installation,
      input.operationId,
    ]);
    if (byOp) {
      if (byOp.subject !== input.subject || byOp.initial_admin) throw operationReused();
      return { binding: view(byOp), created: false };
    }
  }
  throw alreadyBound(input.subject);
}

/**
 * Revokes a binding, idempotent by operation_id: the same operation again (or a revoke of a binding
 * already revoked) answers its revoked state; an operation_id already used for another binding is a 409.
 */
export async function revokeBinding(
  em: EntityManager,
  scope: HostedScope,
  input: { bindingId: string; operationId: string; revokedBy: string },
): Promise<BindingView> {
  const byOp = await selectOne(em, 'tenant = ? and installation = ? and revoke_operation_id = ?', [
    scope.tenant,
    scope.installation,
    input.operationId,
  ]);
  if (byOp && byOp.binding_id !== input.bindingId) throw operationReused();
  let rows: Row[];
  try {
    rows = await sql(
      em,
      `update hosted_identity_bindings
         set state = 'revoked', revoke_operation_id = ?, revoked_by = ?, revoked_at = now()
       where binding_id = ? and tenant = ? and installation = ? and state = 'active'
       returning ${COLUMNS}`,
      [input.operationId, input.revokedBy, input.bindingId, scope.tenant, scope.installation],
    );
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) throw operationReused();
    throw err;
  }
  if (rows[0]) {
    revocations.emit('revoked', input.bindingId);
    return view(rows[0]);
  }
  const existing = await selectOne(em, 'binding_id = ? and tenant = ? and installation = ?', [
    input.bindingId,
    scope.tenant,
    scope.installation,
  ]);
  if (!existing) throw new NotFoundError(`No identity link ${input.bindingId} in this installation.`);
  return view(existing);
}
