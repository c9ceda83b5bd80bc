import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { MikroORM } from '@mikro-orm/postgresql';
import { tarEntries, type TarEntry } from './tar.js';
import { sql } from '../db/sql.js';

/**
 * The hosted demo's state exports (`POST /api/internal/demo-state/*`). Each one is a stream: rows are
 * read by keyset pages of `PAGE_ROWS` (a fresh EntityManager per page), written out and forgotten, so
 * neither the rows nor the archive are ever held whole. The deployment tenant
 * (`PLATFORM_TENANT`) is the demo's tenant.
 *
 * - export-state: a tar of `state/<table>/<page>.json` (one JSON array of rows per page; a table is
 *   the files under its folder, in order) for the tables in `STATE_TABLES`, then `manifest.json`
 *   (tenant, time, row and page counts per table). Secrets, tokens and settings are not exported.
 * - export-content: Markdown (`text/markdown`): agents (name, description, instructions), threads with
 *   their messages in order, blueprints (name, grants).
 * - export-microapps: gzip of a tar of the demo's app artifacts: promoted managed flows
 *   (`flows/<source_id>/<flow_name>.json`) and blueprints with their grants (`blueprints/<name>.json`).
 */
export const PAGE_ROWS = 200;

interface TableSpec {
  table: string;
  /** Keyset columns (the primary key), compared as a tuple. */
  keys: string[];
  /** Restricts rows to the tenant (the first `?` is the tenant, then `params`). */
  from: string;
  params?: unknown[];
}

export const STATE_TABLES: TableSpec[] = [
  { table: 'users', keys: ['t.id'], from: 'users t where t.tenant = ?' },
  { table: 'agents', keys: ['t.id'], from: 'agents t where t.tenant = ?' },
  { table: 'blueprints', keys: ['t.blueprint_id'], from: 'blueprints t where t.tenant = ?' },
  {
    table: 'blueprint_grants',
    keys: ['t.blueprint_id', 't.role_name', 't.action'],
    from: 'blueprint_grants t join blueprints b on b.blueprint_id = t.blueprint_id where b.tenant = ?',
  },
  { table: 'conversation_threads', keys: ['t.id'], from: 'conversation_threads t where t.tenant = ?' },
  {
    table: 'conversation_messages',
    keys: ['t.id'],
    from: 'conversation_messages t join conversation_threads c on c.id = t.thread_id where c.tenant = ?',
  },
  { table: 'managed_flows', keys: ['t.source_id', 't.flow_name'], from: 'managed_flows t where t.tenant = ?' },
];

type Row = Record<string, unknown>;

/** Every row of one table spec, page by page (keyset on its key columns). */
async function* pages(orm: MikroORM, spec: TableSpec, tenant: string): AsyncGenerator<Row[]> {
  const keyNames = spec.keys.map((k) => k.slice(k.indexOf('.') + 1));
  let after: unknown[] | null = null;
  for (;;) {
    const cursor: string = after ? ` and (${spec.keys.join(', ')}) > (${spec.keys.map(() => '?').join(', ')})` : '';
    const query: string = `select t.* from ${spec.from}${cursor} order by ${spec.keys.join(', ')} limit ${PAGE_ROWS}`;
    const rows: Row[] = await sql<Row>(orm.em.fork(), query, [tenant, ...(spec.params ?? []), ...(after ?? [])]);
    if (rows.length === 0) return;
    yield rows;
    if (rows.length < PAGE_ROWS) return;
    const last: Row = rows[rows.length - 1]!;
    after = keyNames.map((k): unknown => last[k]);
  }
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value, null, 2) + '\n', 'utf8');

async function* stateEntries(orm: MikroORM, tenant: string): AsyncGenerator<TarEntry> {
  const counts: Record<string, { rows: number; pages: number }> = {};
  for (const spec of STATE_TABLES) {
    const count = (counts[spec.table] = { rows: 0, pages: 0 });
    for await (const rows of pages(orm, spec, tenant)) {
      count.pages += 1;
      count.rows += rows.length;
      yield { name: `state/${spec.table}/${String(count.pages).padStart(6, '0')}.json`, content: json(rows) };
    }
  }
  yield {
    name: 'manifest.json',
    content: json({ format: 'platform-demo-state/1', tenant, exported_at: new Date().toISOString(), tables: counts }),
  };
}

export function exportStateStream(orm: MikroORM, tenant: string): Readable {
  return Readable.from(tarEntries(stateEntries(orm, tenant)));
}

const byName = (table: string): TableSpec => STATE_TABLES.find((t) => t.table === table)!;

function mdText(value: unknown): string {
  return String(value ?? '').replace(/\r\n?/g, '\n');
}

async function* contentChunks(orm: MikroORM, tenant: string): AsyncGenerator<string> {
  yield `# Demo content export\n\nTenant: ${tenant}\nExported at: ${new Date().toISOString()}\n\n## Agents\n\n`;
  let any = false;
  for await (const rows of pages(orm, byName('agents'), tenant)) {
    for (const a of rows) {
      any = true;
      yield `### ${mdText(a.name)} (\`${mdText(a.id)}\`)\n\n${a.description ? `${mdText(a.description)}\n\n` : ''}Instructions:\n\n${mdText(
        a.instructions,
      )
        .split('\n')
        .map((l) => `> ${l}`)
        .join('\n')}\n\n`;
    }
  }
  if (!any) yield '_No agents._\n\n';
  yield '## Threads\n\n';
  any = false;
  for await (const threads of pages(orm, byName('conversation_threads'), tenant)) {
    for (const t of threads) {
      any = true;
      yield `### ${mdText(t.title ?? 'Untitled thread')} (\`${mdText(t.id)}\`)\n\n`;
      const messages: TableSpec = {
        table: 'conversation_messages',
        keys: ['t.created_at', 't.id'],
        from: 'conversation_messages t join conversation_threads c on c.id = t.thread_id where c.tenant = ? and t.thread_id = ?',
        params: [t.id],
      };
      let none = true;
      for await (const msgs of pages(orm, messages, tenant)) {
        for (const m of msgs) {
          none = false;
          yield `**${mdText(m.role)}** (${mdText(m.author_id)}):\n\n${mdText(m.content)}\n\n`;
        }
      }
      if (none) yield '_No messages._\n\n';
    }
  }
  if (!any) yield '_No threads._\n\n';
  yield '## Blueprints\n\n';
  any = false;
  for await (const rows of pages(orm, byName('blueprints'), tenant)) {
    for (const b of rows) {
      any = true;
      yield `- ${mdText(b.name)} (\`${mdText(b.blueprint_id)}\`)\n`;
    }
  }
  yield any ? '\n' : '_No blueprints._\n';
}

export function exportContentStream(orm: MikroORM, tenant: string): Readable {
  return Readable.from(
    (async function* () {
      for await (const chunk of contentChunks(orm, tenant)) yield Buffer.from(chunk, 'utf8');
    })(),
  );
}

const safeSegment = (s: unknown) => String(s).replace(/[^A-Za-z0-9._-]/g, '_');

async function* microappEntries(orm: MikroORM, tenant: string): AsyncGenerator<TarEntry> {
  for await (const rows of pages(orm, byName('managed_flows'), tenant)) {
    for (const f of rows)
      yield { name: `flows/${safeSegment(f.source_id)}/${safeSegment(f.flow_name)}.json`, content: json(f) };
  }
  for await (const rows of pages(orm, byName('blueprints'), tenant)) {
    for (const b of rows) {
      const grants = await sql<Row>(
        orm.em.fork(),
        'select role_name, action, granted_by, granted_at from blueprint_grants where blueprint_id = ? order by role_name, action',
        [b.blueprint_id],
      );
      yield { name: `blueprints/${safeSegment(b.name)}.json`, content: json({ ...b, grants }) };
    }
  }
  yield {
    name: 'manifest.json',
    content: json({ format: 'platform-demo-microapps/1', tenant, exported_at: new Date().toISOString() }),
  };
}

export function exportMicroappsStream(orm: MikroORM, tenant: string): Readable {
  return Readable.from(tarEntries(microappEntries(orm, tenant))).pipe(createGzip());
}
