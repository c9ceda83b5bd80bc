import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { getRecord, queryRecords, updateRecord } from './rest.js';
import { CrmSession } from './session.js';
import { loadConnection } from './store.js';
import { FieldName } from './survivorship.js';
import { BadRequestError, ForbiddenError } from '../errors.js';
import type { AppDeps } from '../app-deps.js';
import { CrmCodes } from './error-codes.js';

/** Bounds on the plain reads and writes, so one call cannot pull or change a whole org. */
export const CRM_TOOL_LIMITS = {
  maxQueryRows: 200,
  defaultQueryRows: 50,
  maxSoqlChars: 4_000,
  maxFields: 50,
  maxValueChars: 32_000,
  maxUpdateChars: 100_000,
} as const;

/**
 * Kinds update_record may write: everyday business records. Anything else is refused, notably setup
 * objects (User, Profile, PermissionSet…), whose fields decide who may do what in the org.
 */
export const WRITABLE_KINDS = [
  'Account',
  'Contact',
  'Lead',
  'Opportunity',
  'Case',
  'Task',
  'Event',
  'Campaign',
  'CampaignMember',
] as const;

/** The permission a person needs to write through a connection (view_connections only reads). */
export const WRITE_PERMISSION = 'manage_all_connections';

const Conn = z.string().trim().min(1).max(100);
const RecordId = z.string().regex(/^[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?$/, 'a 15- or 18-character CRM record id');
const Kind = z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/, 'an object API name');
const Value = z.union([z.string(), z.number(), z.boolean(), z.null()]);

export const RecordActionInputs = [
  z.strictObject({
    action: z.literal('query'),
    connection_name: Conn,
    soql: z.string().min(1).max(CRM_TOOL_LIMITS.maxSoqlChars),
    max_rows: z.number().int().min(1).max(CRM_TOOL_LIMITS.maxQueryRows).default(CRM_TOOL_LIMITS.defaultQueryRows),
  }),
  z.strictObject({
    action: z.literal('get_record'),
    connection_name: Conn,
    record_kind: Kind,
    record_id: RecordId,
    fields: z.array(FieldName).min(1).max(CRM_TOOL_LIMITS.maxFields),
  }),
  z.strictObject({
    action: z.literal('update_record'),
    connection_name: Conn,
    record_kind: Kind,
    record_id: RecordId,
    fields: z.record(FieldName, Value),
  }),
] as const;
type RecordActionInput = z.output<(typeof RecordActionInputs)[number]>;
type UpdateInput = Extract<RecordActionInput, { action: 'update_record' }>;

const refuse = (field: string, message: string, extra: Record<string, unknown> = {}) =>
  new BadRequestError(`${field.replace(/^body\.arguments\./, '')} ${message}.`, {
    fields: [{ field, message }],
    ...extra,
  });

/**
 * Who may write, and what: a person with the write permission (an agent's write to a customer
 * system is a governed action, so agents are pointed to Action Review), a known kind, 1 to
 * `maxFields` fields, bounded values and body. Checked before anything reaches the CRM.
 */
function checkUpdate(input: UpdateInput, principal: Principal): void {
  if (principal.kind === 'agent') {
    throw new ForbiddenError(
      'Agents cannot call update_record: a write to a customer system is a governed action that a person decides in Action Review (the action_review tool). Merges go through request_merge_approval (a crm.merge.v1 proposal); for other field changes, ask a person to make them.',
      { code: CrmCodes.governed_action, use_tool: 'action_review' },
    );
  }
  if (!principal.permissions.has(WRITE_PERMISSION)) {
    throw new ForbiddenError(
      `Permission denied: update_record writes to the CRM and needs the "${WRITE_PERMISSION}" permission. Ask an administrator to grant you a role that includes it.`,
      {
        required_permission: WRITE_PERMISSION,
      },
    );
  }
  if (!(WRITABLE_KINDS as readonly string[]).includes(input.record_kind)) {
    throw refuse(
      'body.arguments.record_kind',
      `"${input.record_kind}" is not a kind update_record writes; writable kinds are ${WRITABLE_KINDS.join(', ')}`,
      { writable_kinds: WRITABLE_KINDS },
    );
  }
  const names = Object.keys(input.fields);
  if (names.length === 0 || names.length > CRM_TOOL_LIMITS.maxFields) {
    throw refuse('body.arguments.fields', `must name 1 to ${CRM_TOOL_LIMITS.maxFields} fields (got ${names.length})`);
  }
  for (const [name, value] of Object.entries(input.fields)) {
    if (typeof value === 'string' && value.length > CRM_TOOL_LIMITS.maxValueChars) {
      throw refuse(
        `body.arguments.fields.${name}`,
        `is ${value.length} characters; a value may have at most ${CRM_TOOL_LIMITS.maxValueChars}`,
      );
    }
  }
  const size = JSON.stringify(input.fields).length;
  if (size > CRM_TOOL_LIMITS.maxUpdateChars)
    throw refuse(
      'body.arguments.fields',
      `are ${size} characters as JSON; one update may carry at most ${CRM_TOOL_LIMITS.maxUpdateChars}`,
    );
}

/** query (SELECT only, row cap), get_record, update_record: limits first, then one session on the connection. */
export async function runRecordAction(
  input: RecordActionInput,
  principal: Principal,
  deps: AppDeps,
  em: EntityManager,
): Promise<unknown> {
  if (input.action === 'query' && !/^\s*select\s/i.test(input.soql))
    throw refuse('body.arguments.soql', 'must start with SELECT (only queries are allowed)');
  if (input.action === 'update_record') checkUpdate(input, principal);
  const session = new CrmSession(
    await loadConnection(em, deps.config, principal.tenant, input.connection_name),
    em,
    deps.config,
  );
  switch (input.action) {
    case 'query': {
      const result = await queryRecords(session, input.soql, input.max_rows);
      return {
        total_size: result.totalSize,
        returned: result.records.length,
        truncated: result.truncated,
        max_rows: input.max_rows,
        records: result.records,
      };
    }
    case 'get_record': {
      const record = await getRecord(session, input.record_kind, input.record_id, input.fields);
      return { id: record.id, last_modified: record.lastModified, fields: record.fields };
    }
    case 'update_record':
      await updateRecord(session, input.record_kind, input.record_id, input.fields);
      return {
        updated: true,
        record_kind: input.record_kind,
        record_id: input.record_id,
        fields: Object.keys(input.fields),
      };
  }
}
