/**
 * The one way to run hand-written SQL. MikroORM 6's `em.getConnection().execute(text, params)` takes a
 * pooled connection of its own unless it is handed the transaction: inside `em.transactional(...)` such a
 * statement would not see the transaction's uncommitted rows, would not be rolled back with it, and an
 * advisory or row lock taken through it would be released at once. These helpers always name the
 * EntityManager's transaction when it has one; outside a transaction they behave as a plain `execute`.
 * A lint rule (eslint.config.js) forbids `getConnection().execute` and knex raw SQL everywhere else.
 */
import type { AnyEntity, EntityData } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

/** What a statement reports: `affectedRows` is the row count PostgreSQL gives for an insert/update/delete. */
export interface StatementResult {
  affectedRows: number;
  rows?: unknown[];
}

type Rows = EntityData<AnyEntity>;

/** Rows of a query, run inside `em`'s transaction when it is in one. */
export function sql<T extends object = Rows>(
  em: EntityManager,
  text: string,
  params: readonly unknown[] = [],
): Promise<T[]> {
  return em.getConnection().execute<T[]>(text, [...params], 'all', em.getTransactionContext());
}

/** The first row of a query (or undefined), run inside `em`'s transaction when it is in one. */
export async function sqlOne<T extends object = Rows>(
  em: EntityManager,
  text: string,
  params: readonly unknown[] = [],
): Promise<T | undefined> {
  const [row] = await sql<T>(em, text, params);
  return row;
}

/** A statement whose affected row count matters, run inside `em`'s transaction when it is in one. */
export function execSql(em: EntityManager, text: string, params: readonly unknown[] = []): Promise<StatementResult> {
  return em.getConnection().execute<StatementResult>(text, [...params], 'run', em.getTransactionContext());
}

/**
 * A PostgreSQL text[] literal for a `?::text[]` parameter (a JS array would be expanded into a list):
 * each element quoted, so values may hold commas, quotes or braces.
 */
export const textArray = (values: readonly string[]) =>
  `{${values.map((v) => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join(',')}}`;
