import { BigIntType, EntitySchema, type EntitySchemaMetadata } from '@mikro-orm/core';

/** MikroORM property options of one scalar column (`type` plus flags such as `nullable`, `primary`, `default`). */
type ColumnOptions = { type: unknown } & Record<string, unknown>;

/**
 * One column of a table: the MikroORM property options it maps to and, in the type only, the value its row
 * field holds. An entity lists its columns once and its row type is derived from them (`Row<typeof XEntity>`),
 * so the field list and the schema can no longer drift apart.
 */
export class Column<T> {
  /** Type-only: the row field's value. */
  declare readonly value: T;

  constructor(readonly options: ColumnOptions) {}

  /** The column may be NULL: the row field is `T | null`. */
  nullable(): Column<T | null> {
    return new Column({ ...this.options, nullable: true });
  }

  /** Part of the primary key (several `primary()` columns make a composite key). */
  primary(): Column<T> {
    return new Column({ ...this.options, primary: true });
  }

  /** A unique constraint on this column alone. */
  unique(): Column<T> {
    return new Column({ ...this.options, unique: true });
  }

  /** Any further MikroORM property option (`default`, `lazy`, …). */
  with(options: Record<string, unknown>): Column<T> {
    return new Column({ ...this.options, ...options });
  }
}

/** The column kinds the tables use; the type argument narrows the row field (a union of literals, a JSON shape). */
export const column = {
  /** `varchar(255)`. */
  string: <T extends string = string>() => new Column<T>({ type: 'string' }),
  text: <T extends string = string>() => new Column<T>({ type: 'text' }),
  uuid: <T extends string = string>() => new Column<T>({ type: 'uuid' }),
  integer: <T extends number = number>() => new Column<T>({ type: 'integer' }),
  /** `bigint` read as a JS number (byte counts, far below 2^53). */
  bigNumber: () => new Column<number>({ type: new BigIntType('number') }),
  boolean: () => new Column<boolean>({ type: 'boolean' }),
  /** `timestamptz`. */
  date: () => new Column<Date>({ type: 'Date' }),
  /** `jsonb`; name the shape it holds. */
  json: <T>() => new Column<T>({ type: 'json' }),
  /** `bytea`. */
  blob: () => new Column<Buffer>({ type: 'blob' }),
  /** A column whose options do not fit the kinds above (a `decimal` with its precision, an auto-increment key). */
  of: <T>(options: ColumnOptions) => new Column<T>(options),
};

type Columns = Record<string, Column<unknown>>;

/** The row a set of columns holds: each field typed by its column. */
type RowOf<C extends Columns> = { -readonly [K in keyof C]: C[K]['value'] };

type Properties<C extends Columns> = Extract<EntitySchemaMetadata<RowOf<C>>, { name: string }>['properties'];

/** The row an entity defined with {@link table} holds. */
export type Row<E> = E extends EntitySchema<infer T, never> ? T : never;

/** An entity stated by its name, its table and its columns in table order. */
export function table<C extends Columns>(name: string, tableName: string, columns: C): EntitySchema<RowOf<C>> {
  // Each column's options are MikroORM's own, only gathered; TypeScript cannot see that the keys of the record
  // built here are the row's keys, hence the cast.
  const options = Object.fromEntries(Object.entries(columns).map(([key, col]) => [key, col.options]));
  const properties = options as unknown as Properties<C>;
  return new EntitySchema<RowOf<C>>({ name, tableName, properties });
}
