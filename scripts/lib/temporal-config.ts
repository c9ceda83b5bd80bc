import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from './paths.js';

const configDir = path.join(projectRoot, 'temporal-config');

/** `Name=Type` pairs for `temporal server start-dev --search-attribute`. */
export async function searchAttributeFlags(): Promise<string[]> {
  const file = JSON.parse(await readFile(path.join(configDir, 'search-attributes.json'), 'utf8')) as {
    searchAttributes: Record<string, string>;
  };
  return Object.entries(file.searchAttributes).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]);
}

/** Unconstrained values of the dynamic config file as `--dynamic-config-value KEY=<json>` flags. */
export async function dynamicConfigFlags(): Promise<string[]> {
  const doc = parse(await readFile(path.join(configDir, 'dynamic-config.yaml'), 'utf8')) as Record<
    string,
    Array<{ value: unknown; constraints?: Record<string, unknown> }>
  >;
  const flags: string[] = [];
  for (const [key, entries] of Object.entries(doc)) {
    const global = entries.find((e) => !e.constraints || Object.keys(e.constraints).length === 0);
    if (global) flags.push('--dynamic-config-value', `${key}=${JSON.stringify(global.value)}`);
  }
  return flags;
}
