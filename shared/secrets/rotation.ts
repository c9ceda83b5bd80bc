/**
 * Encryption-key rotation: the keyring rows, the counts of sealed values per key, and the steps the
 * re-seal workflow (workflows/secret-reseal.ts) runs as activities (activities/secrets.ts). Every
 * step is idempotent and transactional, so a killed worker's step simply runs again:
 *
 *   start (API)  a new random key, wrapped by the root key, as `pending`, and a `pending` rotation
 *   begin        the active key (if any) becomes `retiring`, the new one `active` (writers now seal under it)
 *   reseal       per table of SEALED_TABLES, batches in primary-key order: every value not under the
 *                target key is opened and sealed again, rows locked, progress counted in the same transaction
 *   verify       every value opens and is under the target key; values written meanwhile under an old
 *                key send the workflow round again; an unreadable value fails the rotation (nothing retired)
 *   retire       locks the `retiring` key rows (writers share-lock the key row they seal under through
 *                the trigger), checks again that no value is under them, then drops their key material
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { AppConfig } from '../config.js';
import {
  generateManagedKey,
  refreshKeyring,
  ROOT_KEY_ID,
  sealedKeyId,
  secretBox,
  type KeyringRow,
} from './secret-box.js';
import { SEALED_TABLES, type SealedTable } from './sealed-columns.js';
import { sql } from '../db/sql.js';

export type RotationStatus = 'pending' | 'running' | 'completed' | 'failed';

export interface RotationRow {
  id: string;
  target_kid: string;
  status: RotationStatus;
  phase: string;
  resealed: number;
  passes: number;
  retired_kids: string[];
  error: string | null;
  started_by: string;
  created_at: Date;
  finished_at: Date | null;
}

// Raw SQL inside the caller's transaction (re-exported for this module's importers).
export { sql };

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

export function sealedTable(name: string): SealedTable {
  const t = SEALED_TABLES.find((x) => x.table === name);
  if (!t) throw new Error(`${name} is not a table with sealed values`);
  return t;
}

/** Sealed values per key id (`root` for the v1 form) across every table of SEALED_TABLES. */
export async function countSealedByKey(em: EntityManager): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const t of SEALED_TABLES) {
    for (const c of t.columns) {
      const rows = await sql<{ kid: string; n: string }>(
        em,
        `select case when ${ident(c)} like 'v2.%' then split_part(${ident(c)}, '.', 2)
                     when ${ident(c)} like 'v1.%' then '${ROOT_KEY_ID}' else 'unrecognised' end as kid,
                count(*) as n
           from ${ident(t.table)} where ${ident(c)} is not null group by 1`,
      );
      for (const r of rows) counts[r.kid] = (counts[r.kid] ?? 0) + Number(r.n);
    }
  }
  return counts;
}

/** Values not (yet) under `kid`. */
export async function countNotUnder(em: EntityManager, kid: string): Promise<number> {
  const counts = await countSealedByKey(em);
  return Object.entries(counts).reduce((n, [k, v]) => (k === kid ? n : n + v), 0);
}

export async function readKeyring(em: EntityManager): Promise<KeyringRow[]> {
  return sql<KeyringRow>(
    em,
    `select kid, wrapped, status, fingerprint from secret_keys where status <> 'retired' order by created_at`,
  );
}

export async function latestRotation(em: EntityManager): Promise<RotationRow | null> {
  const rows = await sql<RotationRow>(em, `select * from secret_rotations order by created_at desc limit 1`);
  return rows[0] ?? null;
}

export async function findRotation(em: EntityManager, id: string): Promise<RotationRow | null> {
  const rows = await sql<RotationRow>(em, `select * from secret_rotations where id = ?`, [id]);
  return rows[0] ?? null;
}

/**
 * Creates a rotation towards a new managed key, or answers the unfinished one (one at a time: a
 * unique index), so a repeated enable never starts a second rotation.
 */
export async function createRotation(
  em: EntityManager,
  config: AppConfig,
  startedBy: string,
): Promise<{ rotation: RotationRow; created: boolean }> {
  return em.fork().transactional(async (tx) => {
    await sql(tx, `lock table secret_rotations in share row exclusive mode`);
    const open = await sql<RotationRow>(
      tx,
      `select * from secret_rotations where status in ('pending', 'running') order by created_at limit 1`,
    );
    if (open[0]) return { rotation: open[0], created: false };
    const key = generateManagedKey(config);
    await sql(tx, `insert into secret_keys (kid, wrapped, fingerprint, status) values (?, ?, ?, 'pending')`, [
      key.kid,
      key.wrapped,
      key.fingerprint,
    ]);
    const id = randomUUID();
    await sql(tx, `insert into secret_rotations (id, target_kid, status, started_by) values (?, ?, 'pending', ?)`, [
      id,
      key.kid,
      startedBy,
    ]);
    return { rotation: (await findRotation(tx, id))!, created: true };
  });
}

/** Activates the rotation's key (the previous active one starts retiring); idempotent. */
export async function beginRotation(
  em: EntityManager,
  rotationId: string,
): Promise<{ targetKid: string; status: RotationStatus }> {
  return em.fork().transactional(async (tx) => {
    const [r] = await sql<RotationRow>(tx, `select * from secret_rotations where id = ? for update`, [rotationId]);
    if (!r) throw new Error(`rotation ${rotationId} does not exist`);
    if (r.status === 'pending') {
      await sql(tx, `select kid from secret_keys where status in ('active', 'pending') for update`);
      await sql(tx, `update secret_keys set status = 'retiring' where status = 'active' and kid <> ?`, [r.target_kid]);
      await sql(
        tx,
        `update secret_keys set status = 'active', activated_at = now() where kid = ? and status = 'pending'`,
        [r.target_kid],
      );
      await sql(tx, `update secret_rotations set status = 'running', phase = 'resealing', passes = 1 where id = ?`, [
        rotationId,
      ]);
      return { targetKid: r.target_kid, status: 'running' as const };
    }
    return { targetKid: r.target_kid, status: r.status };
  });
}

export interface BatchResult {
  /** Rows looked at (fewer than the batch size: the table is done for this pass). */
  rows: number;
  /** Values sealed again under the target key. */
  resealed: number;
  /** Values no key opens (left as they are; the verify step fails the rotation). */
  unreadable: number;
  /** Primary key of the last row looked at, the cursor of the next batch. */
  lastPk: string | null;
}

/** One batch of one table: rows after `afterPk`, locked; values not under the target sealed again; progress counted. */
export async function resealBatch(
  em: EntityManager,
  config: AppConfig,
  input: { rotationId: string; table: string; afterPk: string | null; batchSize: number },
): Promise<BatchResult> {
  const t = sealedTable(input.table);
  return em.fork().transactional(async (tx) => {
    const [r] = await sql<RotationRow>(tx, `select * from secret_rotations where id = ?`, [input.rotationId]);
    if (!r || r.status !== 'running') return { rows: 0, resealed: 0, unreadable: 0, lastPk: input.afterPk };
    await refreshKeyring(tx);
    const box = secretBox(config);
    const rows = await sql<Record<string, string | null>>(
      tx,
      `select ${ident(t.pk)} as pk, ${t.columns.map(ident).join(', ')} from ${ident(t.table)}
        where ${input.afterPk === null ? 'true' : `${ident(t.pk)} > ?`}
        order by ${ident(t.pk)} limit ? for update`,
      [...(input.afterPk === null ? [] : [input.afterPk]), input.batchSize],
    );
    let resealed = 0;
    let unreadable = 0;
    for (const row of rows) {
      const changes: Record<string, string> = {};
      for (const c of t.columns) {
        const value = row[c];
        if (!value || sealedKeyId(value) === r.target_kid) continue;
        try {
          changes[c] = box.seal(box.open(value));
        } catch {
          unreadable++;
        }
      }
      const cols = Object.keys(changes);
      if (cols.length === 0) continue;
      await sql(
        tx,
        `update ${ident(t.table)} set ${cols.map((c) => `${ident(c)} = ?`).join(', ')} where ${ident(t.pk)} = ?`,
        [...cols.map((c) => changes[c]), row.pk],
      );
      resealed += cols.length;
    }
    if (resealed > 0)
      await sql(tx, `update secret_rotations set resealed = resealed + ? where id = ?`, [resealed, input.rotationId]);
    return { rows: rows.length, resealed, unreadable, lastPk: rows.length ? String(rows.at(-1)!.pk) : input.afterPk };
  });
}

export interface VerifyResult {
  /** Values not under the target key (written meanwhile by a process with an older keyring). */
  remaining: number;
  /** Values that do not open, by table, column and primary key (at most 20 named). */
  unreadable: Array<{ table: string; column: string; id: string }>;
  checked: number;
}

/** Opens every sealed value: each must open and be under the target key. */
export async function verifyRotation(
  em: EntityManager,
  config: AppConfig,
  rotationId: string,
  pageSize = 500,
): Promise<VerifyResult> {
  const fork = em.fork();
  const r = await findRotation(fork, rotationId);
  if (!r) throw new Error(`rotation ${rotationId} does not exist`);
  await sql(fork, `update secret_rotations set phase = 'verifying' where id = ? and status = 'running'`, [rotationId]);
  await refreshKeyring(fork);
  const box = secretBox(config);
  const out: VerifyResult = { remaining: 0, unreadable: [], checked: 0 };
  for (const t of SEALED_TABLES) {
    let after: string | null = null;
    for (;;) {
      const rows: Array<Record<string, string | null>> = await sql(
        fork,
        `select ${ident(t.pk)} as pk, ${t.columns.map(ident).join(', ')} from ${ident(t.table)}
          where ${after === null ? 'true' : `${ident(t.pk)} > ?`} order by ${ident(t.pk)} limit ?`,
        [...(after === null ? [] : [after]), pageSize],
      );
      for (const row of rows) {
        for (const c of t.columns) {
          const value = row[c];
          if (!value) continue;
          out.checked++;
          try {
            box.open(value);
            if (sealedKeyId(value) !== r.target_kid) out.remaining++;
          } catch {
            if (out.unreadable.length < 20) out.unreadable.push({ table: t.table, column: c, id: String(row.pk) });
          }
        }
      }
      if (rows.length < pageSize) break;
      after = String(rows.at(-1)!.pk);
    }
  }
  if (out.remaining > 0)
    await sql(
      fork,
      `update secret_rotations set passes = passes + 1, phase = 'resealing' where id = ? and status = 'running'`,
      [rotationId],
    );
  return out;
}

/**
 * Retires every `retiring` key once nothing is sealed under one: the key rows are locked first (a
 * writer's trigger share-locks the row of the key it seals under), then counted again, then their
 * material is dropped. Answers the values still under them (then nothing is retired).
 */
export async function retireKeys(
  em: EntityManager,
  rotationId: string,
): Promise<{ retired: string[]; remaining: number }> {
  return em.fork().transactional(async (tx) => {
    const [r] = await sql<RotationRow>(tx, `select * from secret_rotations where id = ? for update`, [rotationId]);
    if (!r) throw new Error(`rotation ${rotationId} does not exist`);
    if (r.status !== 'running') return { retired: r.retired_kids, remaining: 0 };
    await sql(tx, `update secret_rotations set phase = 'retiring' where id = ?`, [rotationId]);
    const retiring = await sql<{ kid: string }>(tx, `select kid from secret_keys where status = 'retiring' for update`);
    const remaining = await countNotUnder(tx, r.target_kid);
    // Values under the root key never block: the root key is not retired.
    const counts = await countSealedByKey(tx);
    const blocking = retiring.reduce((n, k) => n + (counts[k.kid] ?? 0), 0) + (counts.unrecognised ?? 0);
    if (blocking > 0 || remaining > 0) {
      await sql(tx, `update secret_rotations set passes = passes + 1, phase = 'resealing' where id = ?`, [rotationId]);
      return { retired: [], remaining: Math.max(blocking, remaining) };
    }
    const kids = retiring.map((k) => k.kid);
    if (kids.length)
      await sql(
        tx,
        `update secret_keys set status = 'retired', wrapped = null, retired_at = now() where kid in (${kids.map(() => '?').join(', ')})`,
        kids,
      );
    await sql(tx, `update secret_rotations set retired_kids = ?::jsonb where id = ?`, [
      JSON.stringify([...new Set([...r.retired_kids, ...kids])]),
      rotationId,
    ]);
    return { retired: kids, remaining: 0 };
  });
}

export async function finishRotation(
  em: EntityManager,
  input: { rotationId: string; status: 'completed' | 'failed'; error?: string },
): Promise<void> {
  await sql(
    em.fork(),
    `update secret_rotations set status = ?, phase = ?, error = ?, finished_at = coalesce(finished_at, now())
      where id = ? and status in ('pending', 'running')`,
    [input.status, input.status, input.error ?? null, input.rotationId],
  );
}
