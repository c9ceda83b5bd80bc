import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError, ServiceUnavailableError } from '../errors.js';
import { desktopNow } from './clock.js';
import { ProvisionerError } from './provisioner.js';
import { desktopSetup, type DesktopDeps } from './setup.js';
import { loadState, saveState } from './state.js';
import { sql } from '../db/sql.js';
import type { AutoDiagnosticsOutcome, DiagnosticsSendResult } from '../../workflows/desktop-diagnostics-definitions.js';
import { DesktopCodes } from './error-codes.js';

/** Spec, Limits (desktop diagnostics). */
export const DIAGNOSTICS_CHUNK_BYTES = 1_500_000;
export const DIAGNOSTICS_GZIP_CHUNK_BYTES = 4_000_000;
export const DIAGNOSTICS_MAX_CHUNKS = 4;
export const DIAGNOSTICS_MIN_CHUNK_BYTES = 64_000;
export const DIAGNOSTICS_AUTO_INTERVAL_SECONDS = 3600;
/** A preview is sendable this long. */
export const DIAGNOSTICS_PREVIEW_TTL_MS = 15 * 60_000;
/** The most one attempt can send (4 chunks of the gzip size): a preview keeps the newest this many bytes. */
export const DIAGNOSTICS_MAX_PREVIEW_BYTES = DIAGNOSTICS_MAX_CHUNKS * DIAGNOSTICS_GZIP_CHUNK_BYTES;
const EXCERPT_CHARS = 4000;

export interface DiagnosticsPreview {
  preview_id: string;
  trigger: 'manual' | 'automatic';
  total_bytes: number;
  files: Array<{ name: string; bytes: number }>;
  excerpt: string;
  created_at: string;
  expires_at: string;
}

/** The folder diagnostics collect: `desktop.diagnostics_dir`, else `<PLATFORM_DATA_DIR>/logs`. */
async function logDir(deps: DesktopDeps): Promise<string> {
  return (
    (await deps.settings.get('desktop.diagnostics_dir')) ?? path.join(path.dirname(deps.config.secrets.keyFile), 'logs')
  );
}

/** The folder's regular files by name, each under a `==> name <==` header, keeping the newest bytes. */
async function collectLogs(dir: string): Promise<{ content: Buffer; files: Array<{ name: string; bytes: number }> }> {
  let names: string[];
  try {
    names = (await readdir(dir)).sort();
  } catch {
    return { content: Buffer.alloc(0), files: [] };
  }
  const parts: Buffer[] = [];
  const files: Array<{ name: string; bytes: number }> = [];
  for (const name of names) {
    const file = path.join(dir, name);
    const info = await stat(file).catch(() => null);
    if (!info?.isFile()) continue;
    const bytes = await readFile(file);
    files.push({ name, bytes: bytes.length });
    parts.push(Buffer.from(`==> ${name} <==\n`, 'utf8'), bytes);
  }
  const all = Buffer.concat(parts);
  return {
    content:
      all.length > DIAGNOSTICS_MAX_PREVIEW_BYTES ? all.subarray(all.length - DIAGNOSTICS_MAX_PREVIEW_BYTES) : all,
    files,
  };
}

export async function createDiagnosticsPreview(
  deps: DesktopDeps,
  em: EntityManager,
  trigger: 'manual' | 'automatic',
): Promise<DiagnosticsPreview> {
  await desktopSetup(deps);
  const { content, files } = await collectLogs(await logDir(deps));
  const now = desktopNow();
  const id = randomUUID();
  await sql(em, 'delete from desktop_diagnostics_previews where expires_at < ?', [new Date(now - 86_400_000)]);
  await sql(
    em,
    `insert into desktop_diagnostics_previews (id, trigger, content, total_bytes, files, created_at, expires_at)
     values (?, ?, ?, ?, ?::jsonb, ?, ?)`,
    [
      id,
      trigger,
      content,
      content.length,
      JSON.stringify(files),
      new Date(now),
      new Date(now + DIAGNOSTICS_PREVIEW_TTL_MS),
    ],
  );
  const text = content.toString('utf8');
  return {
    preview_id: id,
    trigger,
    total_bytes: content.length,
    files,
    excerpt: text.length > EXCERPT_CHARS ? text.slice(text.length - EXCERPT_CHARS) : text,
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + DIAGNOSTICS_PREVIEW_TTL_MS).toISOString(),
  };
}

/**
 * Sends a preview's bytes to the provisioner: chunks of 1,500,000 bytes (4,000,000 when the
 * provisioner advertises gzip), at most 4 chunks (the rest is reported `truncated`), a 413 halves
 * the chunk down to 64,000 bytes (a 413 at 64,000 fails the send). 404 for an unknown, expired or
 * already-sent preview; 409 when not activated; 503 when the provisioner refuses or fails (the
 * preview is then sendable again).
 */
export async function sendDiagnostics(
  deps: DesktopDeps,
  em: EntityManager,
  previewId: string,
): Promise<DiagnosticsSendResult> {
  const setup = await desktopSetup(deps);
  const loaded = await loadState(em, deps.config);
  if (!loaded.credentials || !loaded.state.activated)
    throw new ConflictError('This laptop is not activated.', { code: DesktopCodes.not_activated });
  if (!setup.provisioner)
    throw new ServiceUnavailableError('desktop_provisioner', 'The desktop provisioner is not configured.');
  // Claimed first, so two sends of one preview never both upload.
  const claimed = await sql<{ content: Buffer; trigger: string }>(
    em,
    `update desktop_diagnostics_previews set sent_at = ? where id = ? and sent_at is null and expires_at > ?
     returning content, trigger`,
    [new Date(desktopNow()), previewId, new Date(desktopNow())],
  );
  const row = claimed[0];
  if (!row) throw new NotFoundError('No sendable preview has this id (unknown, expired or already sent).');
  const content = Buffer.from(row.content);
  const device = loaded.credentials.device_credential;
  const provisioner = setup.provisioner;
  try {
    const upload = await provisioner.startDiagnostics(device, row.trigger, content.length);
    const gzip = upload.accept_encoding.map((e) => e.toLowerCase()).includes('gzip');
    let chunk = gzip ? DIAGNOSTICS_GZIP_CHUNK_BYTES : DIAGNOSTICS_CHUNK_BYTES;
    const window = content.subarray(Math.max(0, content.length - DIAGNOSTICS_MAX_CHUNKS * chunk));
    let offset = 0;
    let index = 0;
    while (offset < window.length && index < DIAGNOSTICS_MAX_CHUNKS) {
      const piece = window.subarray(offset, offset + chunk);
      const answer = await provisioner.putDiagnosticsChunk(
        device,
        upload.upload_id,
        index,
        gzip ? gzipSync(piece) : piece,
        gzip,
      );
      if (answer === 'too_large') {
        if (chunk <= DIAGNOSTICS_MIN_CHUNK_BYTES)
          throw new ProvisionerError('refused', `a ${chunk}-byte chunk is still too large for the provisioner`, 413);
        chunk = Math.max(DIAGNOSTICS_MIN_CHUNK_BYTES, Math.floor(chunk / 2));
        continue;
      }
      offset += piece.length;
      index++;
    }
    await provisioner.completeDiagnostics(device, upload.upload_id, index, offset);
    const result: DiagnosticsSendResult = {
      preview_id: previewId,
      upload_id: upload.upload_id,
      gzip,
      chunks_sent: index,
      bytes_sent: offset,
      chunk_bytes: chunk,
      truncated: offset < content.length,
    };
    await sql(em, 'update desktop_diagnostics_previews set result = ?::jsonb where id = ?', [
      JSON.stringify(result),
      previewId,
    ]);
    return result;
  } catch (err) {
    await sql(em, 'update desktop_diagnostics_previews set sent_at = null where id = ?', [previewId]);
    throw new ServiceUnavailableError(
      'desktop_provisioner',
      `The provisioner did not take the diagnostics: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/**
 * The automatic attempt (the `desktop-diagnostics-auto` Schedule's activity): only with
 * `desktop.diagnostics_auto`, when activated, at most one attempt an hour (the attempt's time is
 * recorded before it runs, so a retried activity or a second run in the hour does nothing), and
 * only when the logs changed since the last automatic send.
 */
export async function autoDiagnosticsAttempt(deps: DesktopDeps, em: EntityManager): Promise<AutoDiagnosticsOutcome> {
  if (!(await deps.settings.get('desktop.enabled'))) return { outcome: 'desktop_off' };
  if (!(await deps.settings.get('desktop.diagnostics_auto'))) return { outcome: 'disabled' };
  const now = desktopNow();
  const claim = await em.fork().transactional(async (tx) => {
    const loaded = await loadState(tx, deps.config, { forUpdate: true });
    if (!loaded.credentials || !loaded.state.activated) return 'not_activated' as const;
    const last = loaded.state.diagnostics_last_auto_at;
    if (last !== null && now - last < DIAGNOSTICS_AUTO_INTERVAL_SECONDS * 1000) return 'too_soon' as const;
    await saveState(tx, deps.config, { ...loaded.state, diagnostics_last_auto_at: now });
    return loaded.state.diagnostics_last_sent_sha256;
  });
  if (claim === 'not_activated' || claim === 'too_soon') return { outcome: claim };
  const preview = await createDiagnosticsPreview(deps, em, 'automatic');
  const rows = await sql<{ content: Buffer }>(em, 'select content from desktop_diagnostics_previews where id = ?', [
    preview.preview_id,
  ]);
  const sha = createHash('sha256').update(Buffer.from(rows[0]!.content)).digest('hex');
  if (preview.total_bytes === 0 || sha === claim) {
    await sql(em, 'delete from desktop_diagnostics_previews where id = ?', [preview.preview_id]);
    return { outcome: 'unchanged' };
  }
  try {
    const result = await sendDiagnostics(deps, em, preview.preview_id);
    const loaded = await loadState(em, deps.config);
    await saveState(em, deps.config, { ...loaded.state, diagnostics_last_sent_sha256: sha });
    return { outcome: 'sent', result };
  } catch (err) {
    return { outcome: 'failed', message: err instanceof Error ? err.message : String(err) };
  }
}
