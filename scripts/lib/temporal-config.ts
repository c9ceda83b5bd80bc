import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import protoPackage from '@temporalio/proto';
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

// The proto package is CommonJS: under plain Node ESM only its default export is reliable.
const { IndexedValueType } = protoPackage.temporal.api.enums.v1;
const VALUE_TYPES: Record<string, number> = {
  Text: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  Keyword: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Int: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  Datetime: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KeywordList: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/**
 * Registers the project's search attributes on a server that was not started with them (the
 * time-skipping test server, or an existing cluster). Already-registered ones are left alone.
 */
export async function registerSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const file = JSON.parse(await readFile(path.join(configDir, 'search-attributes.json'), 'utf8')) as {
    searchAttributes: Record<string, string>;
  };
  const searchAttributes: Record<string, number> = {};
  for (const [name, type] of Object.entries(file.searchAttributes)) {
    const valueType = VALUE_TYPES[type];
    if (valueType === undefined) throw new Error(`unknown search attribute type ${type} for ${name}`);
    searchAttributes[name] = valueType;
  }
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  } catch (err) {
    if (!/already exists/i.test(String((err as Error).message))) throw err;
  }
}
