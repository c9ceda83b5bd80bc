/**
 * The migrations list is the apply order. Every checked-in migration file is listed exactly once, each entry's name
 * matches its class, and entries are in timestamp order after the two historical swaps (Agents before McpGateway,
 * Rooms before Crm; LlmProviders was applied out of order once and is kept where it stands): a merge that inserts a
 * migration in the middle, or one that reuses an old timestamp, fails here instead of on a deployed database.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { migrationsList } from '../../shared/db/migrations/index.js';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../shared/db/migrations');

/** Entries already applied on live databases in this order; never reorder them. */
const HISTORICAL_ORDER = [
  'Migration20261122000000Backbone',
  'Migration20261122010000ActionReview',
  'Migration20261122030000Agents',
  'Migration20261122020000McpGateway',
  'Migration20261122050000Rooms',
  'Migration20261122040000Crm',
  'Migration20261123100000Settings',
  'Migration20261123110000Secrets',
  'Migration20261123120000ConfigMisc',
  'Migration20261123130000LlmProviders',
];

describe('migrations list', () => {
  const names = migrationsList.map((m) => m.name);

  it('lists every migration file exactly once, under its class name', () => {
    const files = readdirSync(dir)
      .filter((f) => /^Migration\d{14}\w+\.ts$/.test(f))
      .map((f) => f.replace(/\.ts$/, ''));
    expect([...names].sort()).toEqual(files.sort());
    expect(new Set(names).size).toBe(names.length);
    for (const m of migrationsList) expect((m.class as { name: string }).name).toBe(m.name);
  });

  it('keeps the historical prefix and appends later migrations in timestamp order', () => {
    expect(names.slice(0, HISTORICAL_ORDER.length)).toEqual(HISTORICAL_ORDER);
    const stamp = (n: string) => n.slice('Migration'.length, 'Migration'.length + 14);
    const latestHistorical = HISTORICAL_ORDER.map(stamp).sort().at(-1)!;
    let previous = latestHistorical;
    for (const name of names.slice(HISTORICAL_ORDER.length)) {
      expect(stamp(name) > previous, `${name} must be newer than ${previous}`).toBe(true);
      previous = stamp(name);
    }
  });
});
