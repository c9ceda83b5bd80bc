import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { CrmConnectionEntity, type CrmConnectionRow } from '../db/entities/index.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { refreshKeyring, secretBox } from '../secrets/secret-box.js';
import type { CrmSettings } from './connection-config.js';
import type { CrmAuthMode } from './connection-types.js';
import type { TokenSet } from './oauth.js';
import { SurvivorshipPolicySchema, type SurvivorshipPolicy } from './survivorship.js';
import { sql } from '../db/sql.js';
import { CrmCodes } from './error-codes.js';

/** A connection with its secrets and cached tokens opened: only ever held in memory. */
export interface LoadedConnection {
  row: CrmConnectionRow;
  name: string;
  authMode: CrmAuthMode;
  settings: CrmSettings;
  secrets: Record<string, string>;
  tokens: TokenSet | null;
  policy: SurvivorshipPolicy | null;
}

/** The connection types sharing the `crm_connections` table; a lookup names the one it expects. */
export type ConnectionTypeExpected = 'crm' | 'api_key' | 'any';

/**
 * A connection row by name. A row of another type than `expected` answers as an unknown name
 * (404, `reason: connection_type_mismatch`), so an `api_key` row is never loaded as a CRM connection
 * nor the other way round; only the generic connection routes pass `any`.
 */
export async function findConnectionRow(
  em: EntityManager,
  tenant: string,
  name: string,
  expected: ConnectionTypeExpected = 'crm',
): Promise<CrmConnectionRow> {
  const row = await em.findOne(CrmConnectionEntity, { tenant, name }, { refresh: true });
  if (!row) throw new NotFoundError(`No connection named "${name}".`);
  if (expected !== 'any' && row.type !== expected)
    throw new NotFoundError(`No ${expected === 'crm' ? 'CRM' : 'api_key'} connection named "${name}".`, {
      reason: 'connection_type_mismatch',
      expected_type: expected,
    });
  // The row's sealed values may be under a key this process has not read yet.
  await refreshKeyring(em);
  return row;
}

export function openConnection(config: AppConfig, row: CrmConnectionRow): LoadedConnection {
  const box = secretBox(config);
  return {
    row,
    name: row.name,
    authMode: row.authMode as CrmAuthMode,
    settings: row.settings as unknown as CrmSettings,
    secrets: JSON.parse(box.open(row.secretsSealed)) as Record<string, string>,
    tokens: row.tokensSealed ? (JSON.parse(box.open(row.tokensSealed)) as TokenSet) : null,
    policy: row.policy ? SurvivorshipPolicySchema.parse(row.policy) : null,
  };
}

export async function loadConnection(
  em: EntityManager,
  config: AppConfig,
  tenant: string,
  name: string,
): Promise<LoadedConnection> {
  return openConnection(config, await findConnectionRow(em, tenant, name));
}

/** Caches tokens (sealed); a discovered instance URL is kept too, unless one was configured. */
export async function saveTokens(
  em: EntityManager,
  config: AppConfig,
  conn: LoadedConnection,
  tokens: TokenSet,
): Promise<void> {
  conn.tokens = tokens;
  await refreshKeyring(em);
  if (!conn.settings.instance_url && tokens.instance_url)
    conn.settings = { ...conn.settings, instance_url: tokens.instance_url };
  // The instance host discovered at authorization joins the declared egress hosts, so deployments
  // that approve outbound access see it.
  const egressHosts = [
    ...new Set(
      [conn.settings.login_host, conn.settings.instance_url]
        .filter((h): h is string => typeof h === 'string' && !!h)
        .map((h) => new URL(h).host),
    ),
  ];
  await sql(
    em,
    `update crm_connections set tokens_sealed = ?, settings = ?::jsonb, egress_hosts = ?::jsonb, updated_at = now() where id = ?`,
    [
      secretBox(config).seal(JSON.stringify(tokens)),
      JSON.stringify(conn.settings),
      JSON.stringify(egressHosts),
      conn.row.id,
    ],
  );
}

/** What a connection's validation decides on its row (written on create and on update). */
export type ConnectionColumns = Pick<
  CrmConnectionRow,
  'authMode' | 'settings' | 'secretsSealed' | 'mergeEnabled' | 'policy' | 'egressHosts'
>;

/**
 * Inserts a new connection row; a taken name is a 409 (`connection_exists`). `columns` runs once the
 * keyring is fresh, so the secrets are sealed under the current key.
 */
export async function insertConnectionRow(
  em: EntityManager,
  owner: { tenant: string; id: string },
  name: string,
  type: 'crm' | 'api_key',
  columns: () => ConnectionColumns,
): Promise<CrmConnectionRow> {
  if (await em.findOne(CrmConnectionEntity, { tenant: owner.tenant, name }))
    throw new ConflictError(`A connection named "${name}" exists already.`, { code: CrmCodes.connection_exists });
  await refreshKeyring(em);
  const now = new Date();
  const row = em.create(CrmConnectionEntity, {
    id: randomUUID(),
    tenant: owner.tenant,
    name,
    type,
    ...columns(),
    testResult: null,
    tokensSealed: null,
    oauthPendingSealed: null,
    createdBy: owner.id,
    createdAt: now,
    updatedAt: now,
  });
  await em.persistAndFlush(row);
  return row;
}

/** Stores a connection test's result on the row and answers the row as stored. */
export async function storeTestResult(
  em: EntityManager,
  row: CrmConnectionRow,
  result: unknown,
  expected: ConnectionTypeExpected,
): Promise<CrmConnectionRow> {
  await sql(em, `update crm_connections set test_result = ?::jsonb where id = ?`, [JSON.stringify(result), row.id]);
  return findConnectionRow(em, row.tenant, row.name, expected);
}
