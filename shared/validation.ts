// @workflow-safe: pure functions over zod results and plain values, no Node APIs.
/**
 * One way to turn untrusted input into a typed value or a 400: every route, tool call and MCP action
 * validates through `parseInput`. Text containing NUL (U+0000) is refused wherever it is in what the
 * schema keeps (a value or a key, at any depth; undeclared fields a schema strips are never stored):
 * PostgreSQL cannot store it in text or jsonb, and no platform input has a use for it.
 */
import type { z } from 'zod';
import { BadRequestError } from './errors.js';
import { RequestCodes } from './http/error-codes.js';

export interface FieldIssue {
  field: string;
  message: string;
  code: string;
  /** For an unknown field (`unrecognized_keys`): the fields its object declares, so the caller can correct it. */
  known?: string[];
}

const NUL = '\u0000';

/** Dotted paths (under `prefix`) of every string, key or value, that contains NUL. */
export function nulFields(value: unknown, prefix: readonly string[]): string[] {
  const found: string[] = [];
  const walk = (v: unknown, path: string[], depth: number) => {
    if (typeof v === 'string') {
      if (v.includes(NUL)) found.push(path.join('.'));
    } else if (v && typeof v === 'object' && depth < 64) {
      for (const [key, child] of Object.entries(v)) {
        if (key.includes(NUL)) found.push([...path, key.replaceAll(NUL, '\\u0000')].join('.'));
        walk(child, [...path, key], depth + 1);
      }
    }
  };
  walk(value, [...prefix], 0);
  return found;
}

type Def = {
  type?: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  discriminator?: string;
};
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;
const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'nonoptional', 'readonly', 'catch']);

/**
 * The keys the object schema at `path` of `value` declares: through wrappers, arrays, records and the
 * branch of a discriminated union that `value` picks. `undefined` where no one object applies.
 */
export function declaredKeys(schema: z.ZodType, value: unknown, path: readonly PropertyKey[]): string[] | undefined {
  const def = defOf(schema);
  if (def.type && WRAPPERS.has(def.type) && def.innerType) return declaredKeys(def.innerType, value, path);
  if (def.type === 'pipe' && def.in) return declaredKeys(def.in, value, path);
  if (def.type === 'union' && def.discriminator && def.options) {
    const tag = (value as Record<string, unknown> | null)?.[def.discriminator];
    const branch = def.options.find((o) =>
      (o as unknown as { _zod: { propValues?: Record<string, Set<unknown>> } })._zod.propValues?.[
        def.discriminator!
      ]?.has(tag),
    );
    return branch ? declaredKeys(branch, value, path) : undefined;
  }
  const child = (value as Record<PropertyKey, unknown> | null)?.[path[0]!];
  if (def.type === 'object' && def.shape) {
    if (path.length === 0) return Object.keys(def.shape);
    const field = def.shape[String(path[0])];
    return field ? declaredKeys(field, child, path.slice(1)) : undefined;
  }
  if (path.length === 0) return undefined;
  if (def.type === 'array' && def.element) return declaredKeys(def.element, child, path.slice(1));
  if (def.type === 'record' && def.valueType) return declaredKeys(def.valueType, child, path.slice(1));
  return undefined;
}

/**
 * The `fields` of a 400 for a zod failure, each path under `prefix` (e.g. `['body']`). Given the schema
 * and the value, an unknown field (a strict object's `unrecognized_keys`) is named on its own with the
 * fields its object declares (`known`).
 */
export function issueFields(
  prefix: readonly string[],
  error: z.ZodError,
  source?: { schema: z.ZodType; value: unknown },
): FieldIssue[] {
  const at = (path: readonly PropertyKey[]) => [...prefix, ...path.map(String)].join('.') || '(root)';
  return error.issues.flatMap((issue): FieldIssue[] => {
    if (issue.code !== 'unrecognized_keys')
      return [{ field: at(issue.path), message: issue.message, code: issue.code }];
    const known = source && declaredKeys(source.schema, source.value, issue.path);
    return issue.keys.map((key) => ({
      field: at([...issue.path, key]),
      message: known
        ? `unknown field; the known ones are: ${known.length ? known.join(', ') : '(none)'}`
        : 'unknown field',
      code: issue.code,
      ...(known ? { known } : {}),
    }));
  });
}

/** A 400 naming every failing field; `what` says what was invalid ("request body", "arguments for x"). */
export function invalidInput(what: string, fields: FieldIssue[], extra: Record<string, unknown> = {}): BadRequestError {
  return new BadRequestError(`Invalid ${what}: ${fields.map((f) => `${f.field}: ${f.message}`).join('; ')}`, {
    ...extra,
    fields,
  });
}

/** Refuses NUL anywhere in `value` with a 400 naming the fields. */
export function refuseNul(
  value: unknown,
  prefix: readonly string[],
  what: string,
  extra: Record<string, unknown> = {},
): void {
  const fields = nulFields(value, prefix);
  if (fields.length === 0) return;
  throw invalidInput(
    what,
    fields.map((field) => ({
      field,
      message: 'text may not contain the NUL character (\\u0000)',
      code: RequestCodes.nul_character,
    })),
    extra,
  );
}

/** Validates `value` against `schema` (NUL refused first); a failure is a 400 naming each field under `prefix`. */
export function parseInput<S extends z.ZodType>(
  schema: S,
  value: unknown,
  prefix: readonly string[],
  what: string,
  extra: Record<string, unknown> = {},
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidInput(what, issueFields(prefix, parsed.error, { schema, value }), extra);
  refuseNul(parsed.data, prefix, what, extra);
  return parsed.data;
}
