/**
 * A request that resolved a blueprint just before a delete committed: it waits on the blueprint's lock
 * while the delete removes the row and the working copy, then answers 404 (as it would have a moment
 * later), never a 500 on the missing files. The delete is played by hand under the same advisory lock,
 * so the requests are certainly queued behind it (found waiting in `pg_locks`), not by timing.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { startBlueprintStack, type BlueprintStack } from './support.js';

let bp: BlueprintStack;

beforeAll(async () => {
  bp = await startBlueprintStack({ dataDirPrefix: 'bp-delete-race-' });
});
afterAll(async () => bp?.close());

const waitingLocks = async () =>
  (
    await query(bp.stack.db.url, `select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted`)
  )[0]!.n as number;

describe('reads and writes queued behind a delete', () => {
  it('answer 404 not_found once the delete commits, and leave nothing behind', async () => {
    const id = await bp.createBlueprint('racer');
    const versioned = await bp.createBlueprint('racer-versioned');
    expect((await bp.api('POST', '/api/blueprints/racer-versioned/versioning/enable')).status).toBe(200);
    const db = new pg.Client({ connectionString: bp.stack.db.url });
    await db.connect();
    try {
      await db.query('begin');
      for (const key of [id, versioned])
        await db.query('select pg_advisory_xact_lock(hashtextextended($1, 14))', [key]);
      const exporting = bp.download('/api/blueprints/racer/export');
      const requests = [
        bp.api('GET', '/api/blueprints/racer-versioned/versioning/summary'),
        bp.api('PATCH', '/api/blueprints/racer', undefined, { short_description: 'changed' }),
        bp.api('DELETE', '/api/blueprints/racer'),
      ];
      await expect.poll(waitingLocks).toBe(4);
      // What DELETE does under the lock: the row (versions cascade) and the working copy go.
      await db.query('delete from blueprints where blueprint_id = any($1)', [[id, versioned]]);
      await rm(path.join(bp.root, 'default', id), { recursive: true, force: true });
      await rm(path.join(bp.root, 'default', versioned), { recursive: true, force: true });
      await db.query('commit');
      const [exported, [summary, patched, deleted]] = await Promise.all([exporting, Promise.all(requests)]);
      expect(exported.status, exported.bytes.toString()).toBe(404);
      expect(JSON.parse(exported.bytes.toString())).toMatchObject({ error_type: 'not_found' });
      for (const res of [summary, patched, deleted]) {
        expect(res.status, JSON.stringify(res.body)).toBe(404);
        expect(res.body).toMatchObject({ error_type: 'not_found', payload: { blueprint_name: expect.any(String) } });
      }
    } finally {
      await db.end();
    }
    expect(await bp.blueprintRow(id)).toBeUndefined();
    expect((await bp.api('GET', '/api/blueprints/racer')).status).toBe(404);
  });
});
