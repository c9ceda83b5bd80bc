import type { EntityManager } from '@mikro-orm/postgresql';
import { refreshKeyring, type SecretBox } from '../secrets/secret-box.js';
import { SECRET_FIELDS, type ProviderFields, type ProviderKind } from './provider-kinds.js';
import { execSql, sql } from '../db/sql.js';

/** A saved provider with its secrets still sealed (one sealed JSON object; `secretFields` names what it holds). */
export interface StoredProvider {
  tenant: string;
  kind: ProviderKind;
  subProvider: string;
  settings: Record<string, unknown>;
  secretsSealed: string | null;
  secretFields: string[];
  admission: 'auto' | 'deny';
  configured: boolean;
  updatedAt: Date;
}

/** Per-tenant provider state; `version` grows with every provider or settings write. */
export interface LlmSettings {
  activeKind: ProviderKind | null;
  activeSubProvider: string;
  assignments: Record<string, Record<string, string>>;
  embeddings: Record<string, unknown> | null;
  reindex: Record<string, unknown> | null;
  version: number;
}

const EMPTY_SETTINGS: LlmSettings = {
  activeKind: null,
  activeSubProvider: '',
  assignments: {},
  embeddings: null,
  reindex: null,
  version: 0,
};

type Row = Record<string, unknown>;

const toProvider = (r: Row): StoredProvider => ({
  tenant: r.tenant as string,
  kind: r.provider_kind as ProviderKind,
  subProvider: r.sub_provider as string,
  settings: (r.settings ?? {}) as Record<string, unknown>,
  secretsSealed: (r.secrets_sealed as string | null) ?? null,
  secretFields: (r.secret_fields ?? []) as string[],
  admission: r.admission as 'auto' | 'deny',
  configured: r.configured as boolean,
  updatedAt: new Date(r.updated_at as string),
});

/**
 * Reads of sealed rows refresh this process's keyring first, so `secretBox` opens what they return
 * even when a key rotation re-sealed them under a key created after this process last looked.
 */
export async function findProvider(
  em: EntityManager,
  tenant: string,
  kind: ProviderKind,
  subProvider: string,
): Promise<StoredProvider | null> {
  await refreshKeyring(em);
  const rows: Row[] = await sql(
    em,
    'select * from llm_providers where tenant = ? and provider_kind = ? and sub_provider = ?',
    [tenant, kind, subProvider],
  );
  return rows[0] ? toProvider(rows[0]) : null;
}

export async function listProviders(em: EntityManager, tenant: string): Promise<StoredProvider[]> {
  await refreshKeyring(em);
  const rows: Row[] = await sql(
    em,
    'select * from llm_providers where tenant = ? order by provider_kind, sub_provider',
    [tenant],
  );
  return rows.map(toProvider);
}

/** Bumps the tenant's version: every cached resolution of the tenant is stale from now on. */
async function bump(em: EntityManager, tenant: string): Promise<void> {
  await sql(
    em,
    `insert into llm_settings (tenant, version, updated_at) values (?, 1, now())
     on conflict (tenant) do update set version = llm_settings.version + 1, updated_at = now()`,
    [tenant],
  );
}

/** Writes a provider (insert or replace) and bumps the version. */
export async function writeProvider(
  em: EntityManager,
  p: Omit<StoredProvider, 'updatedAt'>,
  updatedBy: string,
): Promise<void> {
  await sql(
    em,
    `insert into llm_providers (tenant, provider_kind, sub_provider, settings, secrets_sealed, secret_fields, admission, configured, created_at, updated_at, updated_by)
     values (?, ?, ?, ?::jsonb, ?, ?::jsonb, ?, ?, now(), now(), ?)
     on conflict (tenant, provider_kind, sub_provider) do update set settings = excluded.settings,
       secrets_sealed = excluded.secrets_sealed, secret_fields = excluded.secret_fields, admission = excluded.admission, configured = excluded.configured,
       updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
    [
      p.tenant,
      p.kind,
      p.subProvider,
      JSON.stringify(p.settings),
      p.secretsSealed,
      JSON.stringify(p.secretFields),
      p.admission,
      p.configured,
      updatedBy,
    ],
  );
  await bump(em, p.tenant);
}

/** Removes a provider (and its active mark); answers whether one was there. */
export async function deleteProvider(
  em: EntityManager,
  tenant: string,
  kind: ProviderKind,
  subProvider: string,
): Promise<boolean> {
  const res = await execSql(
    em,
    'delete from llm_providers where tenant = ? and provider_kind = ? and sub_provider = ?',
    [tenant, kind, subProvider],
  );
  // Nothing deleted, nothing changed: no version bump the processes would reload for.
  if (((res as { affectedRows?: number }).affectedRows ?? 0) === 0) return false;
  await sql(
    em,
    `update llm_settings set active_kind = null, active_sub_provider = '' where tenant = ? and active_kind = ? and active_sub_provider = ?`,
    [tenant, kind, subProvider],
  );
  await bump(em, tenant);
  return true;
}

export async function readLlmSettings(em: EntityManager, tenant: string): Promise<LlmSettings> {
  const rows: Row[] = await sql(em, 'select * from llm_settings where tenant = ?', [tenant]);
  const r = rows[0];
  if (!r) return { ...EMPTY_SETTINGS };
  return {
    activeKind: (r.active_kind as ProviderKind | null) ?? null,
    activeSubProvider: r.active_sub_provider as string,
    assignments: (r.assignments ?? {}) as LlmSettings['assignments'],
    embeddings: (r.embeddings as Record<string, unknown> | null) ?? null,
    reindex: (r.reindex as Record<string, unknown> | null) ?? null,
    version: Number(r.version),
  };
}

/** The tenant's version alone: the one read a cached resolution costs. */
export async function readLlmVersion(em: EntityManager, tenant: string): Promise<number> {
  const rows: Row[] = await sql(em, 'select version from llm_settings where tenant = ?', [tenant]);
  return rows[0] ? Number(rows[0].version) : 0;
}

/** Applies a partial update of the tenant's settings and bumps the version. */
export async function writeLlmSettings(
  em: EntityManager,
  tenant: string,
  patch: Partial<Omit<LlmSettings, 'version'>>,
): Promise<LlmSettings> {
  await bump(em, tenant);
  const sets: string[] = [];
  const values: unknown[] = [];
  const set = (column: string, value: unknown, json = false) => {
    sets.push(`${column} = ?${json ? '::jsonb' : ''}`);
    values.push(json ? (value === null ? null : JSON.stringify(value)) : value);
  };
  if (patch.activeKind !== undefined) set('active_kind', patch.activeKind);
  if (patch.activeSubProvider !== undefined) set('active_sub_provider', patch.activeSubProvider);
  if (patch.assignments !== undefined) set('assignments', patch.assignments, true);
  if (patch.embeddings !== undefined) set('embeddings', patch.embeddings, true);
  if (patch.reindex !== undefined) set('reindex', patch.reindex, true);
  if (sets.length) await sql(em, `update llm_settings set ${sets.join(', ')} where tenant = ?`, [...values, tenant]);
  return readLlmSettings(em, tenant);
}

/** Seals the secret fields of a flat configuration; answers the stored halves. */
export function splitFields(
  kind: ProviderKind,
  fields: ProviderFields,
  box: SecretBox,
): { settings: Record<string, unknown>; secretsSealed: string | null; secretFields: string[] } {
  const settings: Record<string, unknown> = {};
  const secrets: Record<string, string> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || k === 'test_connection') continue;
    if (SECRET_FIELDS[kind].includes(k)) {
      if (typeof v === 'string' && v !== '') secrets[k] = v;
    } else settings[k] = v;
  }
  const secretFields = Object.keys(secrets).sort();
  return { settings, secretsSealed: secretFields.length ? box.seal(JSON.stringify(secrets)) : null, secretFields };
}

/** A stored provider as one flat configuration with its secrets opened (for calls and tests only). */
export function openFields(p: Pick<StoredProvider, 'settings' | 'secretsSealed'>, box: SecretBox): ProviderFields {
  const secrets = p.secretsSealed ? (JSON.parse(box.open(p.secretsSealed)) as Record<string, string>) : {};
  return { ...p.settings, ...secrets };
}
