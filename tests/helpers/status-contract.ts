import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { buildOpenApi } from '../../api/http/openapi.js';
import { allRoutes } from '../../api/routes/index.js';
import { successFalsePaths, toolResultViolations } from '../../shared/tools/result-contract.js';

interface DocumentedOperation {
  method: string;
  pattern: RegExp;
  path: string;
  statuses: Set<string>;
  /** The spec section that lets this operation's 2xx say `success` false at the top (`x-success-false-at-2xx`). */
  successFalseAt2xx: string | undefined;
}

let operations: DocumentedOperation[] | undefined;

/** Every documented operation of the published document, with the statuses it declares. */
function documentedOperations(): DocumentedOperation[] {
  if (operations) return operations;
  const doc = buildOpenApi(allRoutes(), { title: 'contract', version: '0', description: '' }) as {
    paths: Record<string, Record<string, { responses: Record<string, unknown>; 'x-success-false-at-2xx'?: string }>>;
  };
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      pattern: new RegExp(`^${path.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`),
      statuses: new Set(Object.keys(op.responses)),
      successFalseAt2xx: op['x-success-false-at-2xx'],
    })),
  );
  return operations;
}

/** Bodies above this are not kept for the check (downloads, exports): none of them is a JSON envelope. */
const MAX_CHECKED_BODY = 4 * 1024 * 1024;

/** Collects what a response writes, so its JSON body can be read once it finished. */
function captureBody(res: ServerResponse): () => string | null {
  const chunks: Buffer[] = [];
  let size = 0;
  const keep = (chunk: unknown, encoding?: unknown) => {
    if (chunk == null || typeof chunk === 'function' || size > MAX_CHECKED_BODY) return;
    const buf = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
    size += buf.length;
    chunks.push(buf);
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.write = ((...args: unknown[]) => (keep(args[0], args[1]), write(...args))) as typeof res.write;
  res.end = ((...args: unknown[]) => (keep(args[0], args[1]), end(...args))) as typeof res.end;
  return () => (size > MAX_CHECKED_BODY ? null : Buffer.concat(chunks).toString('utf8'));
}

/**
 * A 2xx never says `success` false (spec: refusals answer the error envelope with a 4xx/5xx), except
 * at the top of an operation whose spec section states it; a tool's result follows the tool-result
 * rule (`shared/tools/result-contract.ts`).
 */
function bodyViolations(op: DocumentedOperation, body: unknown): string[] {
  const where = `${op.method} ${op.path}`;
  if (op.path === '/api/tool_call') {
    const data = (body as { data?: { tool?: string; result?: unknown } }).data;
    const { result, ...rest } = data ?? {};
    return [
      ...toolResultViolations(String(data?.tool), result).map((v) => `${where}: tool result ${v}`),
      ...successFalsePaths({ ...(body as object), data: rest }).map(
        (f) => `${where} answered 2xx with ${f.path} false`,
      ),
    ];
  }
  return successFalsePaths(body)
    .filter((f) => !(op.successFalseAt2xx && f.path === 'success'))
    .map((f) => `${where} answered 2xx with ${f.path} false (a refusal is a 4xx/5xx error envelope)`);
}

function jsonBody(req: IncomingMessage, res: ServerResponse, text: string | null): unknown {
  if (req.method === 'HEAD' || !text || !/json/.test(String(res.getHeader('content-type') ?? ''))) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Watches every response a test stack's API sends and records each status its operation does not
 * document in /openapi.json, and each 2xx JSON body that says `success` false where the spec does not
 * (and each tool result off the tool-result rule): every suite over HTTP thereby checks the published
 * contract deterministically, where the fuzzer only samples it. Unrouted paths (404) and undeclared
 * methods (405) are outside any operation and not checked.
 */
export function watchStatusContract(server: Server): { violations: () => string[] } {
  const seen = new Set<string>();
  // First among the listeners, so the body is captured even when the app answers synchronously.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const body = captureBody(res);
    res.on('finish', () => {
      const method = req.method ?? 'GET';
      if (method === 'HEAD' || method === 'OPTIONS') return;
      const path = (req.url ?? '/').split('?')[0]!;
      const op = documentedOperations().find((o) => o.method === method && o.pattern.test(path));
      if (!op) return;
      if (!op.statuses.has(String(res.statusCode)))
        seen.add(`${method} ${op.path} answered ${res.statusCode}, which it does not document`);
      if (res.statusCode < 200 || res.statusCode > 299) return;
      const json = jsonBody(req, res, body());
      if (json !== undefined) for (const v of bodyViolations(op, json)) seen.add(v);
    });
  });
  return { violations: () => [...seen] };
}
