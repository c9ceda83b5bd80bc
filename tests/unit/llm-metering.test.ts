/**
 * Every model call goes through the metered client (shared/llm/metered.ts), which refuses at the demo
 * budget cap and records the spend: the raw provider clients, the spend recorder and the budget check
 * are imported by it alone, and the cost formula lives there only. A new caller of a model that
 * reached for the raw client (or priced its own calls) fails here instead of going uncounted.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { callCostUsd, pricesOf } from '../../shared/llm/metered.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PRODUCT_DIRS = ['api', 'activities', 'shared', 'worker', 'workflows', 'etl-runner', 'scripts', 'bench'];

function sources(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return entry === 'node_modules' ? [] : sources(full);
    return /\.(ts|mts|js|mjs)$/.test(full) ? [full] : [];
  });
}

interface ValueImport {
  file: string;
  module: string;
  names: string[];
}

/** The value (not type-only) imports of every product module, with the project file each resolves to. */
function valueImports(): ValueImport[] {
  const out: ValueImport[] = [];
  const statement = /^\s*import\s+(type\s+)?([\s\S]*?)\s+from\s+['"]([^'"]+)['"]/gm;
  for (const file of PRODUCT_DIRS.flatMap((d) => sources(path.join(root, d)))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(statement)) {
      if (m[1] || !m[3]!.startsWith('.')) continue;
      const names = (/\{([\s\S]*)\}/.exec(m[2]!)?.[1] ?? m[2]!)
        .split(',')
        .map((n) => n.trim())
        .filter((n) => n && !n.startsWith('type '))
        .map((n) => n.split(/\s+as\s+/)[0]!);
      if (!names.length) continue;
      const resolved = path.relative(root, path.resolve(path.dirname(file), m[3]!)).replace(/\.js$/, '.ts');
      out.push({ file: path.relative(root, file), module: resolved, names });
    }
  }
  return out;
}

const importersOf = (module: string, name?: string) =>
  [
    ...new Set(
      valueImports()
        .filter((i) => i.module === module && (!name || i.names.includes(name)))
        .map((i) => i.file),
    ),
  ].sort();

describe('language-model calls are metered in one place', () => {
  it('only the metered client imports the raw provider clients', () => {
    expect(importersOf('shared/llm/providers.ts')).toEqual(['shared/llm/metered.ts']);
  });

  it('only the wire formats and their auth reach the provider transport (providerCall)', () => {
    expect(importersOf('shared/llm/client.ts', 'providerCall')).toEqual([
      'shared/aws/credentials.ts',
      'shared/llm/oauth-client-credentials.ts',
      'shared/llm/providers.ts',
      'shared/llm/warehouse-ai.ts',
    ]);
  });

  it('only the metered client records spend and checks the demo budget', () => {
    expect(importersOf('shared/deployment/demo-budget.ts', 'recordLlmUsage')).toEqual(['shared/llm/metered.ts']);
    expect(importersOf('shared/deployment/demo-budget.ts', 'demoBudgetExhausted')).toEqual(['shared/llm/metered.ts']);
  });

  it('prices tokens in one formula, nowhere else', () => {
    const pricing = /\*\s*[\w.]*(?:UsdPerMtok|usd_per_mtok)\b/;
    const offenders = PRODUCT_DIRS.flatMap((d) => sources(path.join(root, d)))
      .filter((file) => pricing.test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(root, file));
    expect(offenders).toEqual(['shared/llm/metered.ts']);
    expect(
      callCostUsd(
        { promptTokens: 11, completionTokens: 7 },
        pricesOf({ input_usd_per_mtok: 3, output_usd_per_mtok: 15 }),
      ),
    ).toBeCloseTo(0.000138, 12);
    expect(pricesOf({ input_usd_per_mtok: 'x' })).toEqual({ inputUsdPerMtok: 0, outputUsdPerMtok: 0 });
  });
});
