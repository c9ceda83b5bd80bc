import { BigIntType } from '@mikro-orm/core';
import { describe, expect, it } from 'vitest';
import { column, table } from '../../shared/db/entities/table.js';

describe('table()', () => {
  it('states the MikroORM properties in column order, with each modifier as the option it names', () => {
    const entity = table('Sample', 'samples', {
      id: column.uuid().primary(),
      kind: column.string<'a' | 'b'>(),
      note: column.text().nullable(),
      codeHash: column.string().nullable().unique(),
      tags: column.json<string[]>().with({ default: '[]' }),
      bytes: column.bigNumber(),
      cost: column.of<string>({ type: 'decimal', precision: 14, scale: 6 }),
      at: column.date(),
    });
    const { name, tableName, properties } = entity.meta;
    expect({ name, tableName }).toEqual({ name: 'Sample', tableName: 'samples' });
    expect(Object.keys(properties)).toEqual(['id', 'kind', 'note', 'codeHash', 'tags', 'bytes', 'cost', 'at']);
    const options = (key: string) => {
      const { type, nullable, primary, unique, default: defaultValue, precision, scale } = properties[key as 'id'];
      return Object.fromEntries(
        Object.entries({ type, nullable, primary, unique, default: defaultValue, precision, scale }).filter(
          ([, v]) => v !== undefined,
        ),
      );
    };
    expect(options('id')).toEqual({ type: 'uuid', primary: true });
    expect(options('kind')).toEqual({ type: 'string' });
    expect(options('note')).toEqual({ type: 'text', nullable: true });
    expect(options('codeHash')).toEqual({ type: 'string', nullable: true, unique: true });
    expect(options('tags')).toEqual({ type: 'json', default: '[]' });
    expect(properties.bytes.type).toBeInstanceOf(BigIntType);
    expect(options('cost')).toEqual({ type: 'decimal', precision: 14, scale: 6 });
    expect(options('at')).toEqual({ type: 'Date' });
  });

  it('leaves a column it was derived from unchanged', () => {
    const base = column.string();
    base.nullable();
    base.primary();
    expect(base.options).toEqual({ type: 'string' });
  });
});
