// @workflow-safe: pure functions over zod results and plain values, no Node APIs.
/**
 * One way to turn untrusted input into a typed value or a 400: every route, tool call and MCP action
 * validates through `parseInput`. Text containing NUL (U+0000) is refused wherever it is in what the
 * schema keeps (a value or a key, at any depth; undeclared fields a schema strips are never stored):
 * PostgreSQL cannot store it in text or jsonb, and no platform input has a use for it.
 */
import type { z } from 'zod';
import { BadRequestError } from './errors.js';

export interface FieldIssue {
  field: string;
  message: string;
  code: string;
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

/** The `fields` of a 400 for a zod failure, each path under `prefix` (e.g. `['body']`). */
export function issueFields(prefix: readonly string[], error: z.ZodError): FieldIssue[] {
  return error.issues.map((issue) => ({
    field: [...prefix, ...issue.path.map(String)].join('.') || '(root)',
    message: issue.message,
    code: issue.code,
  }));
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
      code: 'nul_character',
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
  if (!parsed.success) throw invalidInput(what, issueFields(prefix, parsed.error), extra);
  refuseNul(parsed.data, prefix, what, extra);
  return parsed.data;
}
