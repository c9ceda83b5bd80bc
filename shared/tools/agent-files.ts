import { z } from 'zod';
import { storeDownload } from '../downloads/signed-urls.js';
import { uuidFromKey } from '../ids.js';
import { defineTool } from './registry.js';
import { AgentFilesResult } from './results.js';

/** Names an agent may give a file: one path segment, no control characters. */
const FileName = z
  .string()
  .trim()
  .min(1)
  .max(200)
  // eslint-disable-next-line no-control-regex -- control characters are exactly what a file name may not hold
  .regex(/^[^/\\\0-\x1f]+$/, 'a plain file name (no slashes or control characters)')
  .refine((n) => n !== '.' && n !== '..', 'a plain file name');

/**
 * The `agent_files` tool: an agent writes a file (a report, a CSV, a screenshot as base64) that the
 * caller receives as a short-lived, single-use signed download URL with the turn's reply.
 */
export const agentFilesTool = defineTool({
  name: 'agent_files',
  description:
    'Produce a file for the person you are talking to (WRITE_FILE). They receive a short-lived download link with your reply.',
  input: z.strictObject({
    action: z.literal('WRITE_FILE'),
    name: FileName,
    content: z.string().max(10 * 1024 * 1024),
    content_type: z
      .string()
      .regex(/^[\w.+-]+\/[\w.+-]+$/)
      .default('text/plain'),
    encoding: z.enum(['utf8', 'base64']).default('utf8').describe('base64 for binary content such as screenshots'),
  }),
  result: AgentFilesResult,
  principalKinds: ['agent'],
  async handler({ input, principal, em, idempotencyKey }) {
    const stored = await storeDownload(em, {
      // A retried call of the same turn stores nothing new.
      id: idempotencyKey ? uuidFromKey(idempotencyKey) : undefined,
      tenant: principal.tenant,
      name: input.name,
      contentType: input.content_type,
      bytes: Buffer.from(input.content, input.encoding),
    });
    return { file_id: stored.id, name: stored.name, content_type: stored.contentType, bytes: stored.byteSize };
  },
});
