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
import type { ClientBase } from 'pg';

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

/** What a knex client (the pool's, or a transaction's, which always hands out its own connection) lends. */
interface ConnectionLender {
  acquireConnection(): Promise<ClientBase>;
  releaseConnection(connection: ClientBase): Promise<unknown>;
}

/**
 * A statement with bound parameters (`$1`, `$2`, ...) sent as such (PostgreSQL's extended protocol) on the
 * connection of `em`'s transaction, or a pooled one outside a transaction. The helpers above inline every
 * value into the text as a quoted literal, which costs time in JavaScript and in PostgreSQL's parser for
 * large writes; here nothing is quoted: a Buffer travels as binary and a JS array as a PostgreSQL array.
 * With a `name` the statement is prepared once per pooled connection and its plan cached there (a hot
 * read path skips parsing and planning); one name must always carry the same text.
 */
export async function sqlBound<T extends object = Rows>(
  em: EntityManager,
  text: string,
  params: readonly unknown[] = [],
  name?: string,
): Promise<T[]> {
  return sqlBoundStatement<T>(em, { text, params, name });
}

/** A statement with bound parameters as one object (`sqlBound`'s arguments), and `setup` run on the same connection first. */
export interface BoundStatement {
  text: string;
  params: readonly unknown[];
  name?: string;
  /** Run on the connection before the statement (e.g. a session setting the connection may already have). */
  setup?: (connection: ClientBase) => Promise<unknown>;
}

/** `sqlBound` with the statement as one object, and `setup` run on the same connection first. */
export async function sqlBoundStatement<T extends object = Rows>(
  em: EntityManager,
  statement: BoundStatement,
): Promise<T[]> {
  return (await sqlBoundWhile<T, undefined>(em, statement, () => undefined))[0];
}

/**
 * `sqlBoundStatement` with synchronous work done while PostgreSQL runs the statement: the connection is
 * acquired and the statement written to it first, then `meanwhile` runs, then the rows are awaited. (Work
 * started before an `sqlBound` call's first await delays the statement's sending instead: the connection is
 * only acquired on a later turn of the event loop.)
 */
export async function sqlBoundWhile<T extends object, R>(
  em: EntityManager,
  statement: BoundStatement,
  meanwhile: () => R,
): Promise<[T[], R]> {
  const lender = (em.getTransactionContext<{ client: ConnectionLender }>() ?? em.getConnection().getKnex()).client;
  const connection = await lender.acquireConnection();
  try {
    const { text, params, name, setup } = statement;
    if (setup) await setup(connection);
    const pending = connection.query({ text, values: [...params], ...(name ? { name } : {}) });
    let result: R;
    try {
      result = meanwhile();
    } catch (err) {
      await pending.catch(() => undefined); // the connection is released once idle
      throw err;
    }
    return [(await pending).rows as T[], result];
  } finally {
    await lender.releaseConnection(connection);
  }
}

/**
 * `work` on one pooled connection of its own, outside any transaction: for statements PostgreSQL refuses
 * in a transaction block (`CREATE INDEX CONCURRENTLY`, `DROP INDEX CONCURRENTLY`) and the session settings
 * beside them (`work` resets what it set: the connection goes back to the pool). Refused for an `em` in a
 * transaction, whose rows and locks such work would neither see nor share.
 */
export async function onOwnConnection<R>(em: EntityManager, work: (connection: ClientBase) => Promise<R>): Promise<R> {
  if (em.getTransactionContext())
    throw new Error('onOwnConnection: called inside a transaction; this work runs outside any transaction');
  const lender = (em.getConnection().getKnex() as unknown as { client: ConnectionLender }).client;
  const connection = await lender.acquireConnection();
  try {
    return await work(connection);
  } finally {
    await lender.releaseConnection(connection);
  }
}
