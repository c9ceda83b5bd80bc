import type { MikroORM } from '@mikro-orm/postgresql';
import type { AppConfig } from '../config.js';
import { refreshKeyring, secretBox } from '../secrets/secret-box.js';
import { settingDef, type SettingPath, type SettingValue } from './definitions.js';
import { sql } from '../db/sql.js';

/** Where an effective value came from, highest precedence first. */
export type SettingSource = 'saved' | 'env' | 'default';

/** What a secret reads as wherever it is shown; sent back unchanged in an apply, it keeps the saved secret. */
export const SECRET_MASK = '********';

/** A saved row as stored: a JSON value, or a sealed secret (JSON inside the seal). */
export interface SavedRow {
  path: string;
  value: unknown;
  sealed: string | null;
}

export interface SourceLayer {
  source: SettingSource;
  value: unknown;
}

/** The spec's `SingleValueSourceResponse`: the effective value, its layer, and every layer that has a value. */
export interface SettingSourceView {
  path: SettingPath;
  effective_value: unknown;
  source: SettingSource;
  all_sources: SourceLayer[];
}

export interface SettingsOptions {
  /** How old the cached saved values may be before the version row is read again (default 1000 ms). */
  maxStalenessMs?: number;
}

/**
 * The one accessor API and worker read settings through. Effective value: saved configuration
 * (`platform_settings`), then the environment, then the default. Saved values are cached per process
 * and re-read when `platform_settings_version` moved; the version is checked at most every
 * `maxStalenessMs`, and at once after `invalidate()` (this process's own apply) or `catchUp()` (a
 * route showing settings: a save through another replica is seen by the next read through this one).
 */
export class Settings {
  private cache: { version: number; rows: Map<string, SavedRow> } | undefined;
  /**
   * Secrets of the cached rows, opened when the rows were read: a key rotation re-seals the rows
   * without moving the version, and may retire the key the cached sealed text is under.
   */
  private opened = new Map<string, unknown>();
  private checkedAt = 0;
  private loading: Promise<Map<string, SavedRow>> | undefined;
  private readonly maxStalenessMs: number;

  constructor(
    private readonly orm: MikroORM,
    private readonly config: AppConfig,
    options: SettingsOptions = {},
  ) {
    this.maxStalenessMs = options.maxStalenessMs ?? 1000;
  }

  /** The effective value of one setting (secrets opened). */
  async get<P extends SettingPath>(path: P): Promise<SettingValue<P>> {
    const rows = await this.savedRows();
    return this.layers(path, rows.get(path), true)[0]!.value as SettingValue<P>;
  }

  /** Provenance of each path, secrets masked (nothing is decrypted). */
  async sources(paths: readonly SettingPath[]): Promise<SettingSourceView[]> {
    const rows = await this.savedRows();
    return paths.map((path) => {
      const layers = this.layers(path, rows.get(path), false);
      return { path, effective_value: layers[0]!.value, source: layers[0]!.source, all_sources: layers };
    });
  }

  /**
   * The layers that have a value for `path`, effective first (the default layer is always there,
   * possibly null). `saved` is the saved row to consider (an apply passes the one it is about to write).
   */
  layers(path: SettingPath, saved: SavedRow | undefined, openSecrets: boolean): SourceLayer[] {
    const def = settingDef(path);
    const mask = (value: unknown) => (def.secret && !openSecrets && value !== null ? SECRET_MASK : value);
    const layers: SourceLayer[] = [];
    if (saved && def.writable) layers.push({ source: 'saved', value: mask(this.openRow(saved, openSecrets)) });
    const raw = def.env ? this.config.settingsEnv[def.env] : undefined;
    if (raw !== undefined) layers.push({ source: 'env', value: mask(envValue(def, raw)) });
    layers.push({ source: 'default', value: mask(def.default) });
    return layers;
  }

  /** A saved row's value; a sealed one is opened only when asked (else it reads as the mask). */
  openRow(row: SavedRow, openSecrets = true): unknown {
    if (row.sealed === null) return row.value;
    if (!openSecrets) return SECRET_MASK;
    if (this.cache?.rows.get(row.path) === row && this.opened.has(row.path)) return this.opened.get(row.path);
    return JSON.parse(secretBox(this.config).open(row.sealed)) as unknown;
  }

  /** Makes the next read check the version row (after this process saved something). */
  invalidate(): void {
    this.checkedAt = 0;
  }

  /**
   * Checks the version row now (one small read), so the reads that follow see what any process saved,
   * another API replica included. Routes that show settings call it; other reads accept `maxStalenessMs`.
   */
  async catchUp(): Promise<void> {
    this.checkedAt = 0;
    await this.savedRows();
  }

  private async savedRows(): Promise<Map<string, SavedRow>> {
    if (this.cache && Date.now() - this.checkedAt < this.maxStalenessMs) return this.cache.rows;
    this.loading ??= this.refresh().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async refresh(): Promise<Map<string, SavedRow>> {
    // Version first: a write landing between the two reads leaves a newer version to notice next time.
    const [row] = await sql<{ version: string }>(
      this.orm.em,
      'select version from platform_settings_version where id = 1',
    );
    const version = Number(row?.version ?? 0);
    if (!this.cache || this.cache.version !== version) {
      const rows = await sql<SavedRow>(this.orm.em, 'select path, value, sealed from platform_settings');
      const opened = new Map<string, unknown>();
      if (rows.some((r) => r.sealed !== null)) {
        await refreshKeyring(this.orm.em);
        const box = secretBox(this.config);
        for (const r of rows) if (r.sealed !== null) opened.set(r.path, JSON.parse(box.open(r.sealed)) as unknown);
      }
      this.cache = { version, rows: new Map(rows.map((r) => [r.path, r])) };
      this.opened = opened;
    }
    this.checkedAt = Date.now();
    return this.cache.rows;
  }
}

/** An env value as its type; a process-level variable that does not parse shows as the text it is. */
function envValue(def: ReturnType<typeof settingDef>, raw: string): unknown {
  try {
    return def.kind.fromEnv(raw);
  } catch {
    return raw;
  }
}
