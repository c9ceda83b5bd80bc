/**
 * External access integrations on a PostgreSQL deployment (`/api/config/eai/…`): there is no warehouse
 * to apply them to, so a valid assignment is recorded and answered as not verified.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { toIso } from '../dates.js';
import { EaiAssignmentEntity } from '../db/entities/index.js';
import { sql } from '../db/sql.js';

export const EAI_NAME_PATTERN = /^[A-Za-z0-9_]+$/;
const NOT_VERIFIED = { checked: false, applied: false };

interface EaiAssignment {
  reference_name: string;
  integration_type: string;
}

function refused(body: EaiAssignment, fields: string[]) {
  return {
    success: false,
    message: `${fields.join(' and ')} may contain only letters, digits and underscore; nothing was recorded.`,
    reference_name: body.reference_name,
    integration_type: body.integration_type,
    recorded: false,
    verification: { ...NOT_VERIFIED },
  };
}

/** Records an assignment; names other than letters, digits and underscore answer `success` false. */
export async function assignEai(em: EntityManager, body: EaiAssignment, principal: Principal) {
  const bad = (['reference_name', 'integration_type'] as const).filter((field) => !EAI_NAME_PATTERN.test(body[field]));
  if (bad.length > 0) return refused(body, [...bad]);
  await sql(
    em,
    `insert into eai_assignments (reference_name, integration_type, assigned_at, assigned_by) values (?, ?, ?, ?)
     on conflict (reference_name) do update set integration_type = excluded.integration_type,
       assigned_at = excluded.assigned_at, assigned_by = excluded.assigned_by`,
    [body.reference_name, body.integration_type, new Date(), principal.id],
  );
  return {
    success: true,
    message:
      'Recorded. This deployment stores metadata in PostgreSQL: there is no warehouse to apply it to or verify it in.',
    reference_name: body.reference_name,
    integration_type: body.integration_type,
    recorded: true,
    verification: { ...NOT_VERIFIED },
  };
}

export async function eaiAssignment(em: EntityManager, referenceName: string) {
  const row = await em.findOne(EaiAssignmentEntity, { referenceName });
  return {
    reference_name: referenceName,
    assigned: row !== null,
    integration_type: row?.integrationType ?? null,
    assigned_at: toIso(row?.assignedAt),
    assigned_by: row?.assignedBy ?? null,
    verification: { ...NOT_VERIFIED },
  };
}
