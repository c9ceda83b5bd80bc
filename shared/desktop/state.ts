import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import type { LlmActivation, ProvisionerCredit } from './provisioner.js';
import type { VersionPolicy } from './versions.js';
import { openSecretBox } from '../secrets/secret-box.js';
import { sql } from '../db/sql.js';

/**
 * The laptop's one desktop record (`desktop_state`, row `desktop`). The device credential and the AI
 * key are sealed together in `credentials_sealed` (never echoed); the rest is plain JSON.
 */
export interface DesktopState {
  activated: boolean;
  llm: LlmActivation | null;
  trial: Record<string, unknown> | null;
  version_policy: VersionPolicy | null;
  app_version: string | null;
  last_check_in_at: string | null;
  platform_ai_only_notice_seen: boolean;
  llm_choice: 'platform' | 'own_provider' | null;
  credit_model: string | null;
  credit: { reading: ProvisionerCredit; read_at: number } | null;
  /** When the provisioner last refused the device credential on a credit read (ms since epoch). */
  credit_refused_at: number | null;
  /** The last automatic diagnostics attempt (ms since epoch) and the SHA-256 of the logs it sent. */
  diagnostics_last_auto_at: number | null;
  diagnostics_last_sent_sha256: string | null;
}

export interface DesktopCredentials {
  device_credential: string;
  ai_key: { id: string; secret: string } | null;
}

export const EMPTY_STATE: DesktopState = {
  activated: false,
  llm: null,
  trial: null,
  version_policy: null,
  app_version: null,
  last_check_in_at: null,
  platform_ai_only_notice_seen: false,
  llm_choice: null,
  credit_model: null,
  credit: null,
  credit_refused_at: null,
  diagnostics_last_auto_at: null,
  diagnostics_last_sent_sha256: null,
};

export interface LoadedState {
  state: DesktopState;
  /** Null when none is saved, or when the saved one cannot be opened (see `unreadable`). */
  credentials: DesktopCredentials | null;
  /** Saved credentials this process cannot open (sealed under another key): counted on the status route. */
  unreadable: number;
}

/** Reads the record (locking the row with `forUpdate`, inside a transaction). */
export async function loadState(
  em: EntityManager,
  config: AppConfig,
  options: { forUpdate?: boolean } = {},
): Promise<LoadedState> {
  const rows = await sql<{ state: Partial<DesktopState>; credentials_sealed: string | null }>(
    em,
    `select state, credentials_sealed from desktop_state where id = 'desktop'${options.forUpdate ? ' for update' : ''}`,
  );
  const row = rows[0];
  const state = { ...EMPTY_STATE, ...(row?.state ?? {}) };
  if (!row?.credentials_sealed) return { state, credentials: null, unreadable: 0 };
  try {
    const box = await openSecretBox(em, config);
    return { state, credentials: JSON.parse(box.open(row.credentials_sealed)) as DesktopCredentials, unreadable: 0 };
  } catch {
    return { state, credentials: null, unreadable: 1 };
  }
}

/**
 * Saves the record. `credentials`: an object seals and replaces them, `null` removes them,
 * `undefined` keeps what is stored (readable or not).
 */
export async function saveState(
  em: EntityManager,
  config: AppConfig,
  state: DesktopState,
  credentials?: DesktopCredentials | null,
): Promise<void> {
  if (credentials === undefined) {
    await sql(
      em,
      `insert into desktop_state (id, state, updated_at) values ('desktop', ?::jsonb, now())
       on conflict (id) do update set state = excluded.state, updated_at = excluded.updated_at`,
      [JSON.stringify(state)],
    );
    return;
  }
  const sealed = credentials === null ? null : (await openSecretBox(em, config)).seal(JSON.stringify(credentials));
  await sql(
    em,
    `insert into desktop_state (id, state, credentials_sealed, updated_at) values ('desktop', ?::jsonb, ?, now())
     on conflict (id) do update set state = excluded.state, credentials_sealed = excluded.credentials_sealed,
       updated_at = excluded.updated_at`,
    [JSON.stringify(state), sealed],
  );
}
