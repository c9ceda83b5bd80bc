import { z } from 'zod';

/**
 * A setting's type: how a saved (JSON) value is validated and how its environment variable (text)
 * is read. `fromEnv` throws an Error whose message says what was wrong with the text.
 */
export interface SettingKind<T> {
  type: 'integer' | 'number' | 'boolean' | 'string' | 'enum' | 'string_list';
  schema: z.ZodType<T>;
  fromEnv(raw: string): T;
}

const TRUTHY = ['1', 'true', 'yes', 'on'];
const FALSY = ['0', 'false', 'no', 'off', ''];

export function integer(min: number, max: number): SettingKind<number> {
  return {
    type: 'integer',
    schema: z.number().int().min(min).max(max),
    fromEnv(raw) {
      const n = Number(raw.trim());
      if (raw.trim() === '' || !Number.isInteger(n) || n < min || n > max)
        throw new Error(`must be an integer from ${min} to ${max} (got "${raw}")`);
      return n;
    },
  };
}

export function number(min: number): SettingKind<number> {
  return {
    type: 'number',
    schema: z.number().min(min),
    fromEnv(raw) {
      const n = Number(raw.trim());
      if (raw.trim() === '' || !Number.isFinite(n) || n < min)
        throw new Error(`must be a number >= ${min} (got "${raw}")`);
      return n;
    },
  };
}

/** Env text is truthy (`1`, `true`, `yes`, `on`) or falsy (`0`, `false`, `no`, `off`), as elsewhere in the config. */
export const boolean: SettingKind<boolean> = {
  type: 'boolean',
  schema: z.boolean(),
  fromEnv(raw) {
    const v = raw.trim().toLowerCase();
    if (TRUTHY.includes(v)) return true;
    if (FALSY.includes(v)) return false;
    throw new Error(`must be true or false (got "${raw}")`);
  },
};

export function string(max = 2048): SettingKind<string> {
  return {
    type: 'string',
    schema: z.string().max(max),
    fromEnv: (raw) => raw.trim(),
  };
}

/** An http(s) URL, stored without trailing slashes. */
export const url: SettingKind<string> = {
  type: 'string',
  schema: z
    .string()
    .max(2048)
    .refine((v) => /^https?:\/\/[^\s]+$/i.test(v), 'must be an http(s) URL'),
  fromEnv(raw) {
    const v = raw.trim();
    if (!/^https?:\/\/[^\s]+$/i.test(v)) throw new Error(`must be an http(s) URL (got "${raw}")`);
    return v;
  },
};

export function oneOf<E extends string>(values: readonly [E, ...E[]]): SettingKind<E> {
  return {
    type: 'enum',
    schema: z.enum(values as [E, ...E[]]),
    fromEnv(raw) {
      const v = raw.trim().toLowerCase();
      const hit = values.find((x) => x.toLowerCase() === v);
      if (!hit) throw new Error(`must be one of ${values.join(', ')} (got "${raw}")`);
      return hit;
    },
  };
}

/** A list of strings; in env, comma or whitespace separated. */
export function stringList(maxItems = 256): SettingKind<string[]> {
  return {
    type: 'string_list',
    schema: z.array(z.string().min(1).max(2048)).max(maxItems),
    fromEnv: (raw) => raw.split(/[\s,]+/).filter(Boolean),
  };
}

/**
 * A setting whose saved value is checked by a route's own zod schema (one validator for the route and
 * the configuration apply); in env, its text is parsed the same way (`list`: comma or whitespace separated).
 */
export function checked<T>(
  type: SettingKind<T>['type'],
  schema: z.ZodType<T>,
  fromText: (raw: string) => unknown = (raw) => raw.trim(),
): SettingKind<T> {
  return {
    type,
    schema,
    fromEnv(raw) {
      const parsed = schema.safeParse(fromText(raw));
      if (!parsed.success) throw new Error(`${parsed.error.issues.map((i) => i.message).join('; ')} (got "${raw}")`);
      return parsed.data;
    },
  };
}

/** An https origin and path (plain http only for loopback hosts) without query, fragment or credentials; trailing slashes dropped. */
export const httpsBaseUrl: SettingKind<string> = checked(
  'string',
  z
    .string()
    .max(2048)
    .transform((v, ctx) => {
      let u: URL;
      try {
        u = new URL(v);
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be a URL' });
        return z.NEVER;
      }
      const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname);
      if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback)) {
        ctx.addIssue({ code: 'custom', message: 'must be an https:// URL (plain http only for loopback)' });
        return z.NEVER;
      }
      if (u.search || u.hash || u.username || u.password) {
        ctx.addIssue({ code: 'custom', message: 'takes no query, fragment or credentials' });
        return z.NEVER;
      }
      return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
    }) as unknown as z.ZodType<string>,
);
