import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
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

const VALUE_TYPES: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  Text: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  Keyword: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Int: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  Datetime: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KeywordList: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/**
 * Registers the project's search attributes on a server that was not started with them (the
 * time-skipping test server, or an existing cluster). Already-registered ones are left alone.
 */
export async function registerSearchAttributes(connection: Connection, namespace: string): Promise<void> {
  const file = JSON.parse(await readFile(path.join(configDir, 'search-attributes.json'), 'utf8')) as {
    searchAttributes: Record<string, string>;
  };
  const searchAttributes: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
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
