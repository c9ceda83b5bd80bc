import type { Server } from 'node:http';
import { buildOpenApi } from '../../api/http/openapi.js';
import { allRoutes } from '../../api/routes/index.js';

interface DocumentedOperation {
  method: string;
  pattern: RegExp;
  path: string;
  statuses: Set<string>;
}

let operations: DocumentedOperation[] | undefined;

/** Every documented operation of the published document, with the statuses it declares. */
function documentedOperations(): DocumentedOperation[] {
  if (operations) return operations;
  const doc = buildOpenApi(allRoutes(), { title: 'contract', version: '0', description: '' }) as {
    paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  };
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      pattern: new RegExp(`^${path.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`),
      statuses: new Set(Object.keys(op.responses)),
    })),
  );
  return operations;
}

/**
 * Watches every response a test stack's API sends and records each status its operation does not
 * document in /openapi.json: every suite over HTTP thereby checks the published contract
 * deterministically, where the fuzzer only samples it. Unrouted paths (404) and undeclared methods
 * (405) are outside any operation and not checked.
 */
export function watchStatusContract(server: Server): { violations: () => string[] } {
  const seen = new Set<string>();
  server.on('request', (req, res) => {
    res.on('finish', () => {
      const method = req.method ?? 'GET';
      if (method === 'HEAD' || method === 'OPTIONS') return;
      const path = (req.url ?? '/').split('?')[0]!;
      const op = documentedOperations().find((o) => o.method === method && o.pattern.test(path));
      if (!op || op.statuses.has(String(res.statusCode))) return;
      seen.add(`${method} ${op.path} answered ${res.statusCode}, which it does not document`);
    });
  });
  return { violations: () => [...seen] };
}
