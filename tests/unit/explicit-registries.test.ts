/**
 * Capability registries are explicit lists (routes in api/routes/index.ts, tools in
 * shared/tools/index.ts, MCP actions in api/mcp/actions/index.ts): nothing registers itself when a
 * module is imported, and nothing declared is left out of its list.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { mcpActionCatalog, mcpActions } from '../../api/mcp/actions/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return sources(full);
    return full.endsWith('.ts') ? [full] : [];
  });
}

describe('explicit registries', () => {
  it('no project module is imported for its side effects', () => {
    const bareImport = /^\s*import\s+['"]\.{1,2}\//m;
    const offenders = ['api', 'activities', 'shared', 'worker', 'workflows']
      .flatMap((dir) => sources(path.join(root, dir)))
      .filter((file) => bareImport.test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(root, file));
    expect(offenders).toEqual([]);
  });

  it('every MCP action an actions module declares is in the gateway list, once', async () => {
    const dir = path.join(root, 'api/mcp/actions');
    const declared: unknown[] = [];
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
      const mod = (await import(path.join(dir, file))) as Record<string, unknown>;
      for (const value of Object.values(mod)) {
        if (value && typeof value === 'object' && 'handler' in value && 'versions' in value && 'params' in value)
          declared.push(value);
      }
    }
    expect(declared.length).toBeGreaterThanOrEqual(19);
    expect(declared.filter((d) => !mcpActions.includes(d as never))).toEqual([]);
    expect(new Set(mcpActions).size).toBe(mcpActions.length);
  });

  it('the gateway offers every action of the spec on its versions', () => {
    expect(mcpActionCatalog.actions('v2').map((a) => a.name)).toEqual(mcpActionCatalog.names('v2'));
    expect(mcpActionCatalog.actions('v1').map((a) => a.name)).toEqual(mcpActionCatalog.names('v1'));
    expect(mcpActionCatalog.find('login', 'v2')).toBeUndefined();
    expect(mcpActionCatalog.find('login', 'v1')?.name).toBe('login');
  });
});
