/**
 * An uploaded blueprint archive opened for preview or import (shared/blueprints/zip.ts): its central
 * directory checked, its manifest and export sidecar read and parsed, its other members left in the
 * upload and read one at a time by whoever writes them, never extracted to a temp folder first.
 */
import { parse } from 'yaml';
import { z } from 'zod';
import { BadRequestError } from '../errors.js';
import { BlueprintCodes } from './error-codes.js';
import {
  EXPORT_MANIFEST_FILE,
  MANIFEST_FILE,
  ManifestError,
  parseManifest,
  type BlueprintManifest,
} from './manifest.js';
import { UnsafeZipError, ZIP_LIMITS, ZipArchive, type MemberData, type ZipMember } from './zip.js';
import { timeSlices } from '../git/time-slices.js';

const Sidecar = z
  .object({
    manifest_version: z.number().int().optional(),
    blueprint_name: z.string().optional(),
    blueprint_id: z.string().min(1).max(200).optional(),
    working_copy_fingerprint: z.string().optional(),
  })
  .passthrough();

export interface ImportArchive {
  zip: ZipArchive;
  /** The members to import (the export sidecar left out), by path, sorted. */
  members: Map<string, ZipMember>;
  files: string[];
  manifest: BlueprintManifest;
  blueprintId: string | null;
  manifestVersion: number;
  legacy: boolean;
}

/** Thrown when an uploaded archive is refused; answered 400 (import) or `valid: false` (preview). */
export class InvalidArchiveError extends Error {
  constructor(
    readonly code: typeof BlueprintCodes.UNSAFE_ZIP | typeof BlueprintCodes.INVALID_BLUEPRINT_ARCHIVE,
    readonly reason: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
  toBadRequest(): BadRequestError {
    return new BadRequestError(this.message, { code: this.code, reason: this.reason, ...this.extra });
  }
}

function unsafe(err: unknown): unknown {
  if (!(err instanceof UnsafeZipError)) return err;
  return new InvalidArchiveError(BlueprintCodes.UNSAFE_ZIP, err.reason, err.message, {
    ...(err.member ? { member: err.member } : {}),
    limits: ZIP_LIMITS,
  });
}

/** One member's bytes, checked (size, CRC-32); a member that does not read as declared is an `InvalidArchiveError`. */
export function readMember(a: Pick<ImportArchive, 'zip'>, m: ZipMember): MemberData {
  try {
    return a.zip.read(m);
  } catch (err) {
    throw unsafe(err);
  }
}

/**
 * Reads every member once without keeping it: what a writer that cannot undo half its work checks first.
 * The reads are synchronous, so the loop returns to the event loop every 50 ms of them (`timeSlices`;
 * a 60 MiB archive is about half a second of reading and inflating).
 */
export async function verifyMembers(a: ImportArchive): Promise<void> {
  const slice = timeSlices();
  for (const m of a.members.values()) {
    readMember(a, m);
    await slice();
  }
}

function parseSidecar(text: string | null): z.infer<typeof Sidecar> | null {
  if (text === null) return null;
  let raw: unknown;
  try {
    raw = parse(text, { maxAliasCount: 50 });
  } catch {
    raw = undefined;
  }
  const r = Sidecar.safeParse(raw);
  if (!r.success)
    throw new InvalidArchiveError(
      BlueprintCodes.INVALID_BLUEPRINT_ARCHIVE,
      'export_manifest_invalid',
      `${EXPORT_MANIFEST_FILE} is not valid.`,
    );
  return r.data;
}

/**
 * Opens and checks an uploaded archive (the caller closes it with `closeArchive`). With `verify`, every
 * member is read and checked too (a preview answers what the import would find).
 */
export async function readArchive(uploadPath: string, opts: { verify?: boolean } = {}): Promise<ImportArchive> {
  let zip: ZipArchive;
  try {
    zip = ZipArchive.open(uploadPath);
  } catch (err) {
    throw unsafe(err);
  }
  try {
    const members = new Map(zip.members.map((m) => [m.name, m]));
    const text = (name: string) => {
      const m = members.get(name);
      return m ? readMember({ zip }, m).content.toString('utf8') : null;
    };
    const manifestText = text(MANIFEST_FILE);
    if (manifestText === null)
      throw new InvalidArchiveError(
        BlueprintCodes.INVALID_BLUEPRINT_ARCHIVE,
        'manifest_missing',
        `The archive has no ${MANIFEST_FILE} at its root.`,
      );
    let manifest: BlueprintManifest;
    try {
      manifest = parseManifest(manifestText);
    } catch (err) {
      if (err instanceof ManifestError)
        throw new InvalidArchiveError(BlueprintCodes.INVALID_BLUEPRINT_ARCHIVE, 'manifest_invalid', err.message, {
          issues: err.issues,
        });
      throw err;
    }
    const sidecar = parseSidecar(text(EXPORT_MANIFEST_FILE));
    members.delete(EXPORT_MANIFEST_FILE);
    const blueprintId = sidecar?.blueprint_id ?? null;
    const a: ImportArchive = {
      zip,
      members,
      files: [...members.keys()].sort(),
      manifest,
      blueprintId,
      manifestVersion: sidecar?.manifest_version ?? 1,
      legacy: blueprintId === null,
    };
    if (opts.verify) await verifyMembers(a);
    return a;
  } catch (err) {
    zip.close();
    throw err;
  }
}

export function closeArchive(a: ImportArchive): void {
  a.zip.close();
}
