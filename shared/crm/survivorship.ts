import { z } from 'zod';

/** Field API names only: they go into REST `fields=` lists and SOQL. */
export const FieldName = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_]{0,79}$/, 'a field API name (letters, digits, underscores)');

export const SURVIVORSHIP_RULES = ['prefer_survivor', 'prefer_non_null', 'prefer_most_recent', 'prefer_loser'] as const;
export type SurvivorshipRule = (typeof SURVIVORSHIP_RULES)[number];

export const SurvivorshipPolicySchema = z.object({
  version: z.string().trim().min(1, 'version must be a non-empty string'),
  preview_fields: z.array(FieldName).min(1, 'preview_fields must list at least one field'),
  rules: z.record(FieldName, z.enum(SURVIVORSHIP_RULES)).default({}),
});
export type SurvivorshipPolicy = z.output<typeof SurvivorshipPolicySchema>;

/** One CRM record as read: its id, last-modified stamp and field values. */
export interface CrmRecord {
  id: string;
  lastModified: string;
  fields: Record<string, unknown>;
}

export interface MergeProjection {
  /** The fields the policy covers, `preview_fields` first. */
  fields: string[];
  /** The survivor's values after the merge. */
  values: Record<string, unknown>;
  /** Which record each value comes from. */
  sources: Record<string, string>;
  /** The subset the merge writes to the survivor (values that differ from what it holds now). */
  writes: Record<string, unknown>;
}

const present = (v: unknown) => v !== null && v !== undefined && v !== '';

/** Fields the policy decides: preview fields, then fields that only have a rule. */
export function policyFields(policy: SurvivorshipPolicy): string[] {
  return [...new Set([...policy.preview_fields, ...Object.keys(policy.rules)])];
}

function pick(rule: SurvivorshipRule, field: string, survivor: CrmRecord, losers: CrmRecord[]): CrmRecord {
  const withValue = (records: CrmRecord[]) => records.find((r) => present(r.fields[field]));
  switch (rule) {
    case 'prefer_survivor':
      return survivor;
    case 'prefer_non_null':
      return withValue([survivor, ...losers]) ?? survivor;
    case 'prefer_loser':
      return withValue(losers) ?? survivor;
    case 'prefer_most_recent': {
      // Latest stamp wins; ties keep the earlier record in order (the survivor first).
      const candidates = [survivor, ...losers].filter((r) => present(r.fields[field]));
      let best = candidates[0];
      for (const r of candidates.slice(1)) if (Date.parse(r.lastModified) > Date.parse(best!.lastModified)) best = r;
      return best ?? survivor;
    }
  }
}

/** Applies the policy field by field (default `prefer_survivor`). Pure: nothing is read or written. */
export function projectMerge(policy: SurvivorshipPolicy, survivor: CrmRecord, losers: CrmRecord[]): MergeProjection {
  const fields = policyFields(policy);
  const values: Record<string, unknown> = {};
  const sources: Record<string, string> = {};
  const writes: Record<string, unknown> = {};
  for (const field of fields) {
    const source = pick(policy.rules[field] ?? 'prefer_survivor', field, survivor, losers);
    const value = source.fields[field] ?? null;
    values[field] = value;
    sources[field] = source.id;
    if (source.id !== survivor.id && value !== (survivor.fields[field] ?? null)) writes[field] = value;
  }
  return { fields, values, sources, writes };
}
