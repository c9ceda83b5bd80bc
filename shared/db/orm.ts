import { Migrator } from '@mikro-orm/migrations';
import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { allEntities } from './entities/index.js';
import { migrationsList } from './migrations/index.js';

export interface OrmOptions {
  clientUrl: string;
  poolMax?: number;
  debug?: boolean;
}

/** The MikroORM options every process uses (API, worker, migrations, tests). */
export function ormOptions(options: OrmOptions): Options {
  return {
    clientUrl: options.clientUrl,
    entities: allEntities,
    extensions: [Migrator],
    migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false },
    // A request must never borrow another request's identity map.
    allowGlobalContext: false,
    debug: options.debug ?? false,
    pool: { min: 0, max: options.poolMax ?? 10, idleTimeoutMillis: 30_000 },
    // Fail fast while PostgreSQL is down so callers get a 503 instead of a hung request.
    driverOptions: { acquireConnectionTimeout: 5_000, connection: { connectionTimeoutMillis: 3_000 } },
    discovery: { warnWhenNoEntities: false },
  };
}

/** Opens the ORM without requiring the database to be up: the pool connects on first use. */
export async function initOrm(options: OrmOptions): Promise<MikroORM> {
  return MikroORM.init({ ...ormOptions(options), connect: false });
}

/** Applies every pending checked-in migration; returns the names applied. */
export async function migrate(orm: MikroORM): Promise<string[]> {
  const applied = await orm.getMigrator().up();
  return applied.map((m) => m.name);
}
