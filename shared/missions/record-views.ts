// The wire shapes of a mission's records, shared by the record routes and the `mission` tool.
import { z } from 'zod';
import { GOAL_STATUSES, SERVER_RECORD_KINDS, SERVER_RECORD_STATES, VERIFICATIONS } from './records-store.js';

export const GoalStatus = z.enum(GOAL_STATUSES);
export const Verification = z.enum(VERIFICATIONS).nullable();
export const Planned = z.strictObject({ total: z.number().int(), done: z.number().int() });

export const LastNote = z.strictObject({
  goal: z.string(),
  at: z.string(),
  actor: z.string().describe('Who recorded it: a person or agent id, or `mission` for phase completion'),
  principal: z.string().describe('The person the actor acted for'),
  kind: z.enum(['waiver', 'verification', 'finding', 'evidence', 'status']),
  verification: Verification,
  status: GoalStatus,
  person_turn: z.boolean(),
});

export const recordFields = {
  id: z.string(),
  name: z.string(),
  project_type: z.literal('mission'),
  principal: z.string().describe('The person the mission acts for (its requester)'),
  opened_by: z.string().describe('Who started the mission'),
  thread_id: z.string().nullable().describe('The root thread'),
  created_at: z.string(),
  closed_at: z.string().nullable(),
  goal_total: z.number().int(),
  status_counts: z.record(GoalStatus, z.number().int()),
  last_note: LastNote.nullable(),
  plan_incomplete: z.boolean().describe('Some goal has server records that have not succeeded'),
  planned: z.record(z.string(), Planned).describe('Per goal: its server records (total) and those succeeded (done)'),
};

export const ProjectRecordItem = z.strictObject(recordFields).meta({ id: 'ProjectRecordItem' });

export const ServerRecord = z.strictObject({
  kind: z.enum(SERVER_RECORD_KINDS),
  evidence_id: z.string(),
  asset_id: z.string().nullable(),
  target_table: z.string().nullable(),
  state: z.enum(SERVER_RECORD_STATES),
  reason: z.string().nullable(),
  attempts: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const Goal = z.strictObject({
  id: z.string(),
  name: z.string(),
  status: GoalStatus,
  acceptance_criterion: z.string().nullable(),
  skill_ref: z.string().describe('`<blueprint_name>#<phase id>`: the blueprint phase that holds the goal'),
  preconditions: z.array(z.string()).describe('Goals of earlier phases'),
  asset_refs: z.array(z.string()),
  input_versions: z.record(z.string(), z.string()),
  status_qualifier: z.strictObject({ planned_scope: z.enum(['none', 'partial', 'complete']) }),
  planned: Planned,
  server_records: z.array(ServerRecord).describe('Newest first'),
});

export const Note = z.strictObject({
  id: z.string(),
  sequence: z.number().int(),
  goal: z.string(),
  actor: z.string(),
  principal: z.string(),
  at: z.string(),
  evidence: z.string().nullable(),
  asset: z.string().nullable(),
  finding: z.string().nullable(),
  waive_reason: z.string().nullable(),
  person_turn: z.boolean(),
  verification: Verification,
  verification_reason: z.string().nullable(),
  server_check_result: z.enum(['matched', 'not_found']).nullable(),
  previous_status: GoalStatus,
  status: GoalStatus,
  input_versions: z.record(z.string(), z.string()),
});
