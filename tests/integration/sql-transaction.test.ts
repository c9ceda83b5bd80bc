// shared/db/sql.ts runs raw SQL inside the EntityManager's transaction: a regression test for statements
// that ran on another pooled connection (not rolled back, blind to the transaction's own rows).
import type { MikroORM } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initOrm } from '../../shared/db/orm.js';
import { execSql, sql, sqlOne } from '../../shared/db/sql.js';
import { createTestDatabase, query, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;
let orm: MikroORM;

beforeAll(async () => {
  db = await createTestDatabase();
  orm = await initOrm({ clientUrl: db.url, poolMax: 3 });
  await execSql(orm.em.fork(), 'create table sql_helper_probe (id int primary key, note text not null)');
});

afterAll(async () => {
  await orm?.close(true);
  await db?.drop();
});

class Boom extends Error {}

describe('sql helpers inside em.transactional', () => {
  it('roll back with the transaction when it throws', async () => {
    await expect(
      orm.em.fork().transactional(async (tx) => {
        const res = await execSql(tx, 'insert into sql_helper_probe (id, note) values (?, ?)', [1, 'rolled back']);
        expect(res.affectedRows).toBe(1);
        await sql(tx, 'update sql_helper_probe set note = ? where id = ?', ['still rolled back', 1]);
        throw new Boom('abort');
      }),
    ).rejects.toBeInstanceOf(Boom);
    expect(await query(db.url, 'select * from sql_helper_probe where id = 1')).toEqual([]);
  });

  it("see the transaction's uncommitted rows, which other connections do not", async () => {
    await orm.em.fork().transactional(async (tx) => {
      await execSql(tx, 'insert into sql_helper_probe (id, note) values (?, ?)', [2, 'uncommitted']);
      expect(await sqlOne<{ note: string }>(tx, 'select note from sql_helper_probe where id = ?', [2])).toEqual({
        note: 'uncommitted',
      });
      // The bug this helper prevents: without the transaction context the query takes another connection.
      const outside = await tx.getConnection().execute('select note from sql_helper_probe where id = ?', [2]);
      expect(outside).toEqual([]);
      expect(await query(db.url, 'select * from sql_helper_probe where id = 2')).toEqual([]);
    });
    expect(await query(db.url, 'select note from sql_helper_probe where id = 2')).toEqual([{ note: 'uncommitted' }]);
  });

  it('hold a transaction-scoped advisory lock until the transaction ends', async () => {
    await orm.em.fork().transactional(async (tx) => {
      await sql(tx, 'select pg_advisory_xact_lock(hashtext(?))', ['sql-helper-probe']);
      const [probe] = await query<{ got: boolean }>(db.url, 'select pg_try_advisory_xact_lock(hashtext($1)) as got', [
        'sql-helper-probe',
      ]);
      expect(probe!.got).toBe(false);
    });
    const [after] = await query<{ got: boolean }>(db.url, 'select pg_try_advisory_xact_lock(hashtext($1)) as got', [
      'sql-helper-probe',
    ]);
    expect(after!.got).toBe(true);
  });
});

describe('sql helpers outside a transaction', () => {
  it('commit each statement at once and report affected rows', async () => {
    const em = orm.em.fork();
    const inserted = await execSql(em, 'insert into sql_helper_probe (id, note) values (?, ?), (?, ?)', [
      10,
      'a',
      11,
      'b',
    ]);
    expect(inserted.affectedRows).toBe(2);
    expect(await query(db.url, 'select id from sql_helper_probe where id >= 10 order by id')).toEqual([
      { id: 10 },
      { id: 11 },
    ]);
    expect(await sql<{ id: number }>(em, 'select id from sql_helper_probe where id >= ? order by id', [10])).toEqual([
      { id: 10 },
      { id: 11 },
    ]);
    expect(await sqlOne(em, 'select id from sql_helper_probe where id = ?', [99])).toBeUndefined();
  });
});
