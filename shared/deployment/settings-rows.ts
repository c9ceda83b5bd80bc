import type { EntityManager } from '@mikro-orm/postgresql';
import { execSql, sql } from '../db/sql.js';

/**
 * Rows of `deployment_settings` (one JSON value per dotted key) for the deployment-wide records that
 * have no table of their own: branding fields, the license, the hosted-demo owner, the default
 * e-mail address. Reads take the row as stored; writes are upserts stamped with who and when.
 */
export interface SettingRow<T> {
  value: T;
  updatedAt: Date;
  updatedBy: string;
}

export async function readSettingRow<T>(
  em: EntityManager,
  key: string,
  options: { forUpdate?: boolean } = {},
): Promise<SettingRow<T> | null> {
  const rows = await sql<{ value: T; updated_at: Date; updated_by: string }>(
    em,
    `select value, updated_at, updated_by from deployment_settings where key = ?${options.forUpdate ? ' for update' : ''}`,
    [key],
  );
  const row = rows[0];
  return row ? { value: row.value, updatedAt: new Date(row.updated_at), updatedBy: row.updated_by } : null;
}

export async function writeSettingRow(
  em: EntityManager,
  key: string,
  value: unknown,
  updatedBy: string,
  now = new Date(),
): Promise<void> {
  await sql(
    em,
    `insert into deployment_settings (key, value, updated_at, updated_by) values (?, ?::jsonb, ?, ?)
     on conflict (key) do update set value = excluded.value, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
    [key, JSON.stringify(value), now, updatedBy],
  );
}

export async function deleteSettingRow(em: EntityManager, key: string): Promise<boolean> {
  const res = await execSql(em, 'delete from deployment_settings where key = ?', [key]);
  return (res.affectedRows ?? 0) > 0;
}
