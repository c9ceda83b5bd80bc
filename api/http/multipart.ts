/**
 * `multipart/form-data` bodies for the routes that declare `bodyKind: 'multipart'` (blueprint import,
 * configuration apply-file, logo upload). koa-body's formidable streams each file to a folder made
 * for this one request under the OS temp dir; the folder is removed when the request ends, whatever
 * happened, so an upload never outlives its request. Limits are the route's own.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type Koa from 'koa';
import { koaBody } from 'koa-body';
import { BadRequestError, PayloadTooLargeError } from '../../shared/errors.js';

export interface MultipartLimits {
  /** Largest single file, in bytes. */
  maxFileBytes: number;
  /** All files of one request together, in bytes (default: maxFileBytes × maxFiles). */
  maxTotalFileBytes?: number;
  /** Most file parts. */
  maxFiles: number;
  /** Most non-file fields. */
  maxFields: number;
  /** Largest non-file field, in bytes (default 64 KiB). */
  maxFieldBytes?: number;
  /** The file fields, for the OpenAPI document (each `format: binary`). */
  fileFields: readonly string[];
}

/** All files of one request together, in bytes: `maxTotalFileBytes`, else `maxFileBytes` × `maxFiles`. */
export function totalFileBytes(limits: MultipartLimits): number {
  return limits.maxTotalFileBytes ?? limits.maxFileBytes * limits.maxFiles;
}

/** One uploaded file as the handler sees it: readable at `path` until the request ends. */
export interface UploadedFile {
  field: string;
  /** The client's file name (never used as a path). */
  filename: string | null;
  mediaType: string | null;
  size: number;
  path: string;
}

/** Formidable's codes for a limit overrun (its FormidableError internal codes). */
const LIMIT_CODES: Record<number, string> = {
  1009: 'max_total_file_bytes',
  1015: 'max_files',
  1016: 'max_file_bytes',
  1007: 'max_fields',
  1006: 'max_field_bytes',
};

function toRefusal(err: unknown, limits: MultipartLimits): Error {
  const code = (err as { code?: number }).code;
  const limit = code !== undefined ? LIMIT_CODES[code] : undefined;
  if (limit) {
    return new PayloadTooLargeError(`The upload exceeds this route's limit (${limit.replace(/_/g, ' ')}).`, {
      limit,
      limits: {
        max_file_bytes: limits.maxFileBytes,
        max_total_file_bytes: totalFileBytes(limits),
        max_files: limits.maxFiles,
        max_fields: limits.maxFields,
      },
    });
  }
  return new BadRequestError('The request body is not valid multipart/form-data.', { reason: 'malformed_multipart' });
}

/** The per-route parser: files streamed to a fresh temp folder, removed when the request is over. */
export function multipartBody(limits: MultipartLimits): Koa.Middleware {
  return async (ctx, next) => {
    const uploadDir = await mkdtemp(path.join(os.tmpdir(), 'platform-upload-'));
    try {
      const parse = koaBody({
        multipart: true,
        json: false,
        urlencoded: false,
        text: false,
        formidable: {
          uploadDir,
          keepExtensions: false,
          maxFileSize: limits.maxFileBytes,
          maxTotalFileSize: totalFileBytes(limits),
          maxFiles: limits.maxFiles,
          maxFields: limits.maxFields,
          maxFieldsSize: limits.maxFieldBytes ?? 64 * 1024,
          allowEmptyFiles: true,
          minFileSize: 0,
        },
        onError: (err) => {
          throw toRefusal(err, limits);
        },
      });
      await parse(ctx, async () => {
        const files: UploadedFile[] = [];
        const raw = (ctx.request as { files?: Record<string, unknown> }).files ?? {};
        for (const [field, value] of Object.entries(raw)) {
          for (const file of Array.isArray(value) ? value : [value]) {
            const f = file as {
              filepath: string;
              originalFilename: string | null;
              mimetype: string | null;
              size: number;
            };
            files.push({ field, filename: f.originalFilename, mediaType: f.mimetype, size: f.size, path: f.filepath });
          }
        }
        ctx.state.uploads = files;
        await next();
      });
    } finally {
      await rm(uploadDir, { recursive: true, force: true });
    }
  };
}
