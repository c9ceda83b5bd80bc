import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { dynamicConfigFlags, searchAttributeFlags } from '../../scripts/lib/temporal-config.js';
import { SearchAttributes } from '../../shared/temporal/search-attributes.js';

const root = new URL('../../', import.meta.url);

describe('temporal-config', () => {
  it('registers exactly the search attributes the workflows use, with the same types', async () => {
    const file = JSON.parse(await readFile(new URL('temporal-config/search-attributes.json', root), 'utf8'));
    const declared = Object.fromEntries(Object.values(SearchAttributes).map((k) => [k.name, k.type]));
    const registered = Object.fromEntries(
      Object.entries(file.searchAttributes as Record<string, string>).map(([n, t]) => [n, t.toUpperCase()]),
    );
    expect(registered).toEqual(declared);
    const flags = await searchAttributeFlags();
    expect(flags.filter((f) => f !== '--search-attribute')).toEqual(
      Object.entries(file.searchAttributes).map(([n, t]) => `${n}=${t}`),
    );
  });

  it('turns the dynamic config file into dev-server flags with JSON values', async () => {
    const doc = parse(await readFile(new URL('temporal-config/dynamic-config.yaml', root), 'utf8'));
    const flags = await dynamicConfigFlags();
    expect(flags.filter((f) => f === '--dynamic-config-value')).toHaveLength(Object.keys(doc).length);
    expect(flags).toContain('frontend.enableUpdateWorkflowExecution=true');
    expect(flags).toContain('limit.maxIDLength=1000');
  });
});
