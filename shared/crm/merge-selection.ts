import { createHash } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from '../action-review/digest.js';
import { BadRequestError } from '../errors.js';
import type { CrmRecord } from './survivorship.js';
import { CrmCodes } from './error-codes.js';

/** Limits (spec, "Limits": CRM merge). */
export const MERGEABLE_KINDS = ['Lead', 'Contact', 'Account'] as const;
export type MergeableKind = (typeof MERGEABLE_KINDS)[number];
export const MAX_LOSERS = 2;

/** CRM record ids: 15 or 18 letters and digits. */
const RecordId = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?$/, 'a 15- or 18-character CRM record id');

/** The selection every merge step takes; limits are checked by `checkSelection` so the refusal names the rule. */
export const MergeSelectionSchema = z.object({
  connection_name: z.string().trim().min(1).max(100),
  // Published as an enum; validated by `checkSelection` so the refusal names the rule (merge_rule_violated).
  record_kind: z
    .string()
    .trim()
    .min(1)
    .max(40)
    .describe('Lead, Contact or Account')
    .meta({ enum: [...MERGEABLE_KINDS] }),
  survivor_id: RecordId.optional().describe('The master record that survives'),
  loser_ids: z
    .array(RecordId)
    .max(10)
    .default([])
    .describe('One or two records merged into the survivor, in order')
    .meta({ minItems: 1, maxItems: MAX_LOSERS }),
});
export type MergeSelectionInput = z.output<typeof MergeSelectionSchema>;

export interface MergeSelection {
  connectionName: string;
  kind: MergeableKind;
  survivorId: string;
  loserIds: string[];
}

const refuse = (rule: string, field: string, message: string) =>
  new BadRequestError(message, { code: CrmCodes.merge_rule_violated, rule, fields: [{ field, message }] });

/** Kind, one survivor, one or two losers, no duplicates: refused with the rule named. */
export function checkSelection(input: MergeSelectionInput): MergeSelection {
  if (!(MERGEABLE_KINDS as readonly string[]).includes(input.record_kind)) {
    throw refuse(
      'mergeable_kinds',
      'body.record_kind',
      `Record kind "${input.record_kind}" cannot be merged; mergeable kinds are ${MERGEABLE_KINDS.join(', ')}.`,
    );
  }
  if (!input.survivor_id)
    throw refuse('one_survivor', 'body.survivor_id', 'A merge needs exactly one survivor (survivor_id).');
  if (input.loser_ids.length === 0)
    throw refuse('at_least_one_loser', 'body.loser_ids', 'A merge needs one or two losers (loser_ids).');
  if (input.loser_ids.length > MAX_LOSERS) {
    throw refuse(
      'max_two_losers',
      'body.loser_ids',
      `At most ${MAX_LOSERS} records can be merged into the survivor (got ${input.loser_ids.length}).`,
    );
  }
  const ids = [input.survivor_id, ...input.loser_ids].map((id) => id.slice(0, 15));
  if (new Set(ids).size !== ids.length)
    throw refuse(
      'distinct_records',
      'body.loser_ids',
      'The survivor and losers must be distinct records (an id appears twice).',
    );
  return {
    connectionName: input.connection_name,
    kind: input.record_kind as MergeableKind,
    survivorId: input.survivor_id,
    loserIds: input.loser_ids,
  };
}

/**
 * SHA-256 over the canonical form of what the approval binds: connection, kind, survivor, losers
 * (in order), policy version and every record's last-modified stamp, so any change makes it stale.
 */
export function mergeDigest(
  selection: MergeSelection,
  policyVersion: string,
  survivor: CrmRecord,
  losers: CrmRecord[],
): string {
  const canonical = canonicalJson({
    connection: selection.connectionName,
    kind: selection.kind,
    survivor: selection.survivorId,
    losers: selection.loserIds,
    policy_version: policyVersion,
    last_modified: [survivor, ...losers].map((r) => [r.id, r.lastModified]),
  });
  return `sha256:${createHash('sha256').update(canonical).digest('hex')}`;
}
