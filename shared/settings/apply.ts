import type { EntityManager } from '@mikro-orm/postgresql';
import { isDeepStrictEqual } from 'node:util';
import YAML from 'yaml';
import type { AppConfig } from '../config.js';
import { ForbiddenError, PlatformError } from '../errors.js';
import { checkSavedEndpoint, EGRESS_REFUSED, egressFor } from '../http/trust.js';
import { refreshKeyring, secretBox } from '../secrets/secret-box.js';
import { isSettingPath, SETTING_PATHS, settingDef, type SettingPath } from './definitions.js';
import { SECRET_MASK, type SavedRow, type Settings } from './store.js';
import { sql } from '../db/sql.js';
import { GitSyncCodes } from '../managed-sources/error-codes.js';

/** `full` replaces the saved configuration; `partial` changes only the paths it names. */
export type ApplyMode = 'full' | 'partial';

export interface ApplyChange {
  path: string;
  old_value: unknown;
  new_value: unknown;
  action: 'added' | 'updated' | 'deleted';
}

/** The spec's "Config apply response" `result`. */
export interface ApplyResult {
  added: number;
  updated: number;
  deleted: number;
  skipped: number;
  changes: ApplyChange[];
  errors: string[];
}

export interface ApplyOutcome {
  result: ApplyResult;
  /** The saved configuration after the apply (or as it would be, for a dry run), secrets masked, as nested mappings. */
  saved: Record<string, unknown>;
}

/** Why an entry of a configuration was refused; `path` is null when the document as a whole is. */
export type RefusalReason =
  | 'unparseable'
  | 'not_a_mapping'
  | 'connections_not_configuration'
  | 'unknown_setting'
  | 'given_twice'
  | 'process_level'
  | 'invalid_value'
  | 'permission_required';

export interface RefusedEntry {
  path: string | null;
  reason: RefusalReason;
  message: string;
}

/**
 * A refused apply (nothing written): 422 when the content names a path that is no setting (an
 * undeclared field of a configuration body, spec Errors), else 400; `payload.refused` names each
 * refused entry and `payload.errors` repeats the messages.
 */
export class ConfigApplyRefusedError extends PlatformError {
  override name = 'ConfigApplyRefusedError';
  constructor(refused: RefusedEntry[]) {
    const undeclared = refused.some((r) => r.reason === 'unknown_setting');
    super(
      undeclared ? 'unprocessable_entity' : 'bad_request',
      `Configuration refused, nothing was saved: ${refused.map((r) => r.message).join('; ')}`,
      { refused, errors: refused.map((r) => r.message) },
    );
  }
}

/** Called inside the transaction before it commits, with the effective values that change; a throw rolls the apply back. */
export type BeforeCommit = (changed: Map<SettingPath, unknown>) => Promise<void>;

export interface ApplyRequest {
  mode: ApplyMode;
  content: string;
  dryRun: boolean;
  appliedBy: string;
  /** The caller's permissions: a change to a path whose setting names a `permission` needs it. */
  permissions: ReadonlySet<string>;
  beforeCommit?: BeforeCommit;
}

/** Document metadata, not settings: stripped before the paths are read. */
const METADATA_KEYS = ['schema_version', 'name', 'description'];
const CONNECTION_KEYS = ['connection', 'connections'];

/** Text of a configuration (YAML, of which JSON is a subset) to its root mapping, or the reasons it is not one. */
export function parseContent(content: string): { root: Record<string, unknown> } | { errors: RefusedEntry[] } {
  let doc: unknown;
  try {
    doc = YAML.parse(content, { uniqueKeys: true, maxAliasCount: 100, prettyErrors: false });
  } catch (err) {
    const message = `content is neither valid YAML nor JSON: ${(err as Error).message.split('\n')[0]}`;
    return { errors: [{ path: null, reason: 'unparseable', message }] };
  }
  if (!isMapping(doc))
    return {
      errors: [
        {
          path: null,
          reason: 'not_a_mapping',
          message: 'the root of the configuration must be a mapping of setting paths',
        },
      ],
    };
  return { root: doc };
}

const refusedAt = (path: string, reason: RefusalReason, why: string): RefusedEntry => ({
  path,
  reason,
  message: `${path}: ${why}`,
});

/** Nested mappings and dotted keys alike, down to known setting paths; anything else is an error. */
export function flatten(root: Record<string, unknown>): {
  entries: Map<SettingPath, unknown>;
  errors: RefusedEntry[];
} {
  const entries = new Map<SettingPath, unknown>();
  const errors: RefusedEntry[] = [];
  for (const key of CONNECTION_KEYS) {
    if (Object.hasOwn(root, key))
      errors.push({
        path: key,
        reason: 'connections_not_configuration',
        message: `"${key}": connections are not part of the configuration; manage them through /api/connections`,
      });
  }
  const walk = (node: Record<string, unknown>, prefix: string) => {
    for (const [key, value] of Object.entries(node)) {
      const path = prefix ? `${prefix}.${key}` : key;
      if (!prefix && (METADATA_KEYS.includes(key) || CONNECTION_KEYS.includes(key))) continue;
      if (isSettingPath(path)) {
        if (entries.has(path)) errors.push(refusedAt(path, 'given_twice', 'given more than once'));
        else entries.set(path, value);
      } else if (isMapping(value) && SETTING_PATHS.some((p) => p.startsWith(`${path}.`))) {
        walk(value, path);
      } else {
        errors.push(refusedAt(path, 'unknown_setting', 'unknown setting'));
      }
    }
  };
  walk(root, '');
  return { entries, errors };
}

type Wanted = { kind: 'set'; value: unknown } | { kind: 'unset' } | { kind: 'keep' };

/** Each given value checked against its setting: writable, of its type; null unsets, the mask keeps a secret. */
function validate(entries: Map<SettingPath, unknown>): { wanted: Map<SettingPath, Wanted>; errors: RefusedEntry[] } {
  const wanted = new Map<SettingPath, Wanted>();
  const errors: RefusedEntry[] = [];
  for (const [path, value] of entries) {
    const def = settingDef(path);
    if (!def.writable) {
      const where = def.env ? `; set ${def.env} in the environment` : '';
      errors.push(refusedAt(path, 'process_level', `read-only here (read once at process start${where})`));
      continue;
    }
    if (value === null) wanted.set(path, { kind: 'unset' });
    else if (def.secret && value === SECRET_MASK) wanted.set(path, { kind: 'keep' });
    else {
      const parsed = def.kind.schema.safeParse(value);
      if (parsed.success) wanted.set(path, { kind: 'set', value: parsed.data });
      else errors.push(refusedAt(path, 'invalid_value', parsed.error.issues.map((i) => i.message).join('; ')));
    }
  }
  return { wanted, errors };
}

const emptyResult = (): ApplyResult => ({
  added: 0,
  updated: 0,
  deleted: 0,
  skipped: 0,
  changes: [],
  errors: [],
});

/**
 * Applies a configuration in one transaction: validates every path first (any error: nothing is
 * written, `ConfigApplyRefusedError`), computes the changes against the saved rows (locked), refuses
 * a change the caller lacks the permission for (403, nothing written), writes them unless `dryRun`,
 * bumps the version every process watches and records the apply (who, when, what, secrets masked).
 */
export async function applyConfiguration(
  em: EntityManager,
  config: AppConfig,
  settings: Settings,
  req: ApplyRequest,
): Promise<ApplyOutcome> {
  const parsed = parseContent(req.content);
  if ('errors' in parsed) throw new ConfigApplyRefusedError(parsed.errors);
  const flat = flatten(parsed.root);
  const checked = validate(flat.entries);
  const errors = [...flat.errors, ...checked.errors];
  if (errors.length > 0) throw new ConfigApplyRefusedError(errors);

  const outcome = await em.transactional(async (tx) => {
    await sql(tx, 'select version from platform_settings_version where id = 1 for update');
    const rows = await sql<SavedRow>(tx, 'select path, value, sealed from platform_settings');
    const before = new Map(rows.map((r) => [r.path as SettingPath, r]));
    const plan = planChanges(req.mode, checked.wanted, before, settings);
    const forbidden = plan.changes
      .map((c) => ({ path: c.path, action: c.action, permission: settingDef(c.path).permission }))
      .filter((c) => c.permission !== undefined && !req.permissions.has(c.permission))
      .map((c) =>
        refusedAt(
          c.path,
          'permission_required',
          `changing it needs the ${c.permission} permission${
            req.mode === 'full' && c.action === 'deleted' && !checked.wanted.has(c.path)
              ? ' (a full apply unsets every saved path it does not name; name it with its current value)'
              : ''
          }`,
        ),
      );
    if (forbidden.length > 0) {
      const messages = forbidden.map((f) => f.message);
      throw new ForbiddenError(`Configuration refused, nothing was saved: ${messages.join('; ')}`, {
        refused: forbidden,
        errors: messages,
      });
    }
    checkEndpoints(config, plan.changes);
    const masked = (path: SettingPath, value: unknown) =>
      settingDef(path).secret && value !== null ? SECRET_MASK : value;
    const result: ApplyResult = { ...emptyResult(), skipped: plan.skipped };
    for (const c of plan.changes) {
      result[c.action === 'added' ? 'added' : c.action === 'updated' ? 'updated' : 'deleted'] += 1;
      result.changes.push({
        path: c.path,
        old_value: masked(c.path, c.old),
        new_value: masked(c.path, c.new),
        action: c.action,
      });
    }
    const savedAfter = new Map<SettingPath, unknown>();
    for (const [path, row] of before) savedAfter.set(path, row);
    for (const c of plan.changes) {
      if (c.action === 'deleted') savedAfter.delete(c.path);
      else savedAfter.set(c.path, c.new);
    }
    const saved = nest(
      [...savedAfter.keys()].sort().map((p) => {
        const v = savedAfter.get(p);
        const value = isSavedRow(v) ? settings.openRow(v, false) : masked(p, v);
        return [p, value] as const;
      }),
    );
    if (req.dryRun || plan.changes.length === 0) return { result, saved };

    const now = new Date();
    // Seal under the active key as of now (a rotation may have activated one since this process looked).
    await refreshKeyring(tx);
    const box = secretBox(config);
    for (const c of plan.changes) {
      if (c.action === 'deleted') {
        await sql(tx, 'delete from platform_settings where path = ?', [c.path]);
        continue;
      }
      const secret = settingDef(c.path).secret;
      await sql(
        tx,
        `insert into platform_settings (path, value, sealed, updated_at, updated_by) values (?, ?::jsonb, ?, ?, ?)
         on conflict (path) do update set value = excluded.value, sealed = excluded.sealed,
           updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
        [
          c.path,
          secret ? null : JSON.stringify(c.new),
          secret ? box.seal(JSON.stringify(c.new)) : null,
          now,
          req.appliedBy,
        ],
      );
    }
    const [v] = await sql<{ version: string }>(
      tx,
      'update platform_settings_version set version = version + 1 where id = 1 returning version',
    );
    await sql(
      tx,
      `insert into platform_settings_applies (mode, applied_by, applied_at, version, added, updated, deleted, skipped, changes)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb)`,
      [
        req.mode,
        req.appliedBy,
        now,
        v!.version,
        result.added,
        result.updated,
        result.deleted,
        result.skipped,
        JSON.stringify(result.changes),
      ],
    );
    if (req.beforeCommit) {
      const changed = new Map<SettingPath, unknown>();
      for (const c of plan.changes) {
        const row: SavedRow | undefined =
          c.action === 'deleted' ? undefined : { path: c.path, value: c.new, sealed: null };
        const oldRow = before.get(c.path);
        const oldEffective = settings.layers(c.path, oldRow, true)[0]!.value;
        const newEffective = settings.layers(c.path, row, true)[0]!.value;
        if (!isDeepStrictEqual(oldEffective, newEffective)) changed.set(c.path, newEffective);
      }
      if (changed.size > 0) await req.beforeCommit(changed);
    }
    return { result, saved };
  });
  if (!req.dryRun) settings.invalidate();
  return outcome;
}

interface PlannedChange {
  path: SettingPath;
  old: unknown;
  new: unknown;
  action: ApplyChange['action'];
}

/**
 * An endpoint setting whose new host the egress policy never allows answers 400 (EGRESS_REFUSED, a Git
 * remote GIT_EGRESS_REFUSED) naming the path and the flag; nothing is written. Only values this apply
 * changes: a kept value is checked again at each use. A Git remote that is not an http(s) URL is left
 * to its use (it is not reached over HTTP).
 */
function checkEndpoints(config: AppConfig, changes: PlannedChange[]): void {
  for (const c of changes) {
    const kind = settingDef(c.path).endpoint;
    if (!kind || c.action === 'deleted' || typeof c.new !== 'string' || !/^https?:\/\//i.test(c.new)) continue;
    checkSavedEndpoint(c.new, egressFor(config, 'admin'), {
      field: c.path,
      code: kind === 'git' ? GitSyncCodes.GIT_EGRESS_REFUSED : EGRESS_REFUSED,
      what: kind === 'git' ? `The Git host of ${c.path}` : `The host of ${c.path}`,
    });
  }
}

/** Changes against the saved rows: a full apply deletes what it does not name; a partial one only touches what it names. */
function planChanges(
  mode: ApplyMode,
  wanted: Map<SettingPath, Wanted>,
  before: Map<SettingPath, SavedRow>,
  settings: Settings,
): { changes: PlannedChange[]; skipped: number } {
  const changes: PlannedChange[] = [];
  let skipped = 0;
  const oldValue = (path: SettingPath) => {
    const row = before.get(path);
    return row === undefined ? undefined : settings.openRow(row, true);
  };
  for (const [path, w] of wanted) {
    const old = oldValue(path);
    if (w.kind === 'keep' || (w.kind === 'unset' && old === undefined)) skipped += 1;
    else if (w.kind === 'unset') changes.push({ path, old, new: null, action: 'deleted' });
    else if (old === undefined) changes.push({ path, old: null, new: w.value, action: 'added' });
    else if (isDeepStrictEqual(old, w.value)) skipped += 1;
    else changes.push({ path, old, new: w.value, action: 'updated' });
  }
  if (mode === 'full') {
    for (const path of before.keys()) {
      if (!wanted.has(path)) changes.push({ path, old: oldValue(path), new: null, action: 'deleted' });
    }
  }
  return { changes: changes.sort((a, b) => a.path.localeCompare(b.path)), skipped };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isSavedRow(value: unknown): value is SavedRow {
  return isMapping(value) && 'sealed' in value && 'path' in value && 'value' in value;
}

/** `a.b.c = v` pairs as nested mappings (no setting path is a prefix of another). */
function nest(pairs: ReadonlyArray<readonly [string, unknown]>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [path, value] of pairs) {
    const parts = path.split('.');
    let node = root;
    for (const part of parts.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>;
    node[parts.at(-1)!] = value;
  }
  return root;
}

/** The saved configuration rendered for the response. */
export function render(saved: Record<string, unknown>, format: 'json' | 'yaml'): string {
  return format === 'yaml' ? YAML.stringify(saved) : JSON.stringify(saved, null, 2);
}
