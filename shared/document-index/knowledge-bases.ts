import { randomBytes } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.js';
import { ensureBuiltInAgents } from '../agents/registry.js';
import { AgentRowEntity } from '../db/entities/index.js';
import { sql, sqlOne, textArray } from '../db/sql.js';
import { BadRequestError, ConflictError, NotFoundError } from '../errors.js';
import { DocumentIndexCodes } from './error-codes.js';
import type { KnowledgeBaseView } from './views.js';

/**
 * Knowledge bases (spec, "Document index": a bundle of index names assigned to agents; indexes are not
 * knowledge bases). Nothing here is cached: an agent's index scope is read from PostgreSQL on every
 * SEARCH and ASK, so a change made through any API process is seen by the next call of every process.
 */

export const KNOWLEDGE_BASE_ID = /^kb_[0-9a-f]{32}$/;

interface KbRow {
  id: string;
  tenant: string;
  name: string;
  description: string;
  index_names: string[];
  agent_ids: string[] | null;
  created_by: string;
  created_at: Date | string;
  updated_at: Date | string;
}

const iso = (d: Date | string) => (d instanceof Date ? d : new Date(d)).toISOString();

const view = (r: KbRow): KnowledgeBaseView => ({
  id: r.id,
  name: r.name,
  description: r.description,
  index_names: [...r.index_names].sort(),
  agent_ids: [...(r.agent_ids ?? [])].sort(),
  created_by: r.created_by,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

const SELECT = `select kb.*, (select array_agg(a.agent_id) from agent_knowledge_bases a where a.knowledge_base_id = kb.id) as agent_ids
  from knowledge_bases kb`;

export async function listKnowledgeBases(em: EntityManager, tenant: string): Promise<KnowledgeBaseView[]> {
  return (await sql<KbRow>(em, `${SELECT} where kb.tenant = ? order by kb.name`, [tenant])).map(view);
}

async function findKb(em: EntityManager, tenant: string, id: string): Promise<KbRow> {
  const row = KNOWLEDGE_BASE_ID.test(id)
    ? await sqlOne<KbRow>(em, `${SELECT} where kb.tenant = ? and kb.id = ?`, [tenant, id])
    : undefined;
  if (!row) throw new NotFoundError(`No knowledge base ${id}.`, { knowledge_base_id: id });
  return row;
}

export const getKnowledgeBase = async (em: EntityManager, tenant: string, id: string) =>
  view(await findKb(em, tenant, id));

/** Every name must be an active document index of the tenant (400 `unknown_index_names` naming the others). */
async function checkIndexNames(em: EntityManager, tenant: string, names: readonly string[]): Promise<string[]> {
  const wanted = [...new Set(names)].sort();
  if (!wanted.length) return wanted;
  const known = new Set(
    (
      await sql<{ name: string }>(
        em,
        `select name from doc_indexes where tenant = ? and state = 'active' and name = any(?::text[])`,
        [tenant, textArray(wanted)],
      )
    ).map((r) => r.name),
  );
  const unknown = wanted.filter((n) => !known.has(n));
  if (unknown.length)
    throw new BadRequestError(
      `No document index named ${unknown.map((n) => `"${n}"`).join(', ')} in this tenant; nothing was changed. LIST_INDICES of the _document_index tool lists the existing ones.`,
      {
        code: DocumentIndexCodes.unknown_index_names,
        unknown_index_names: unknown,
        fields: [{ field: 'body.index_names', message: 'unknown document index' }],
      },
    );
  return wanted;
}

const nameTaken = (name: string) =>
  new ConflictError(`A knowledge base named "${name}" already exists in this tenant.`, {
    code: DocumentIndexCodes.knowledge_base_name_taken,
    name,
  });

async function guardName<T>(name: string | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const unique = err instanceof UniqueConstraintViolationException || (err as { code?: string }).code === '23505';
    if (unique && name !== undefined) throw nameTaken(name);
    throw err;
  }
}

export interface KnowledgeBaseInput {
  name: string;
  description?: string;
  index_names: string[];
}

export async function createKnowledgeBase(
  em: EntityManager,
  principal: Principal,
  input: KnowledgeBaseInput,
): Promise<KnowledgeBaseView> {
  const name = input.name.trim();
  const names = await checkIndexNames(em, principal.tenant, input.index_names);
  const id = `kb_${randomBytes(16).toString('hex')}`;
  await guardName(name, () =>
    sql(
      em,
      `insert into knowledge_bases (id, tenant, name, description, index_names, created_by) values (?, ?, ?, ?, ?::text[], ?)`,
      [id, principal.tenant, name, input.description ?? '', textArray(names), principal.id],
    ),
  );
  return getKnowledgeBase(em, principal.tenant, id);
}

/** Renames, redescribes or rebundles a knowledge base; a rebundle is what the next SEARCH or ASK sees. */
export async function updateKnowledgeBase(
  em: EntityManager,
  principal: Principal,
  id: string,
  patch: Partial<KnowledgeBaseInput>,
): Promise<KnowledgeBaseView> {
  const row = await findKb(em, principal.tenant, id);
  const name = patch.name?.trim();
  const names = patch.index_names ? await checkIndexNames(em, principal.tenant, patch.index_names) : row.index_names;
  await guardName(name, () =>
    sql(
      em,
      `update knowledge_bases set name = ?, description = ?, index_names = ?::text[], updated_at = now()
        where tenant = ? and id = ?`,
      [name ?? row.name, patch.description ?? row.description, textArray(names), principal.tenant, id],
    ),
  );
  return getKnowledgeBase(em, principal.tenant, id);
}

/** Deletes a knowledge base and its assignments; answers it as it was. */
export async function deleteKnowledgeBase(em: EntityManager, tenant: string, id: string): Promise<KnowledgeBaseView> {
  const row = await findKb(em, tenant, id);
  await sql(em, `delete from knowledge_bases where tenant = ? and id = ?`, [tenant, id]);
  return view(row);
}

async function requireAgent(em: EntityManager, tenant: string, agentId: string): Promise<void> {
  await ensureBuiltInAgents(em, tenant);
  if (!(await em.findOne(AgentRowEntity, { id: agentId, tenant })))
    throw new NotFoundError(`No agent ${agentId}.`, { agent_id: agentId });
}

/** The index names an agent's SEARCH and ASK may see: the union of its knowledge bases' bundles (read per call). */
export async function agentIndexScope(em: EntityManager, tenant: string, agentId: string): Promise<Set<string>> {
  const rows = await sql<{ name: string }>(
    em,
    `select distinct unnest(kb.index_names) as name
       from agent_knowledge_bases a join knowledge_bases kb on kb.id = a.knowledge_base_id
      where a.tenant = ? and a.agent_id = ? and kb.tenant = ?`,
    [tenant, agentId, tenant],
  );
  return new Set(rows.map((r) => r.name));
}

export async function agentKnowledge(em: EntityManager, tenant: string, agentId: string) {
  await requireAgent(em, tenant, agentId);
  const kbs = (
    await sql<KbRow>(
      em,
      `${SELECT} where kb.tenant = ? and kb.id in (select knowledge_base_id from agent_knowledge_bases where tenant = ? and agent_id = ?)
        order by kb.name`,
      [tenant, tenant, agentId],
    )
  ).map(view);
  return {
    agent_id: agentId,
    knowledge_bases: kbs,
    index_names: [...new Set(kbs.flatMap((k) => k.index_names))].sort(),
  };
}

/** Replaces an agent's knowledge bases (all of them the caller's tenant's; an unknown one refuses the whole call). */
export async function assignKnowledgeBases(
  em: EntityManager,
  principal: Principal,
  agentId: string,
  ids: readonly string[],
) {
  const tenant = principal.tenant;
  await requireAgent(em, tenant, agentId);
  const wanted = [...new Set(ids)];
  const found = new Set(
    (
      await sql<{ id: string }>(em, `select id from knowledge_bases where tenant = ? and id = any(?::text[])`, [
        tenant,
        textArray(wanted),
      ])
    ).map((r) => r.id),
  );
  const unknown = wanted.filter((id) => !found.has(id));
  if (unknown.length)
    throw new BadRequestError(`No knowledge base ${unknown.join(', ')} in this tenant; nothing was assigned.`, {
      code: DocumentIndexCodes.unknown_knowledge_bases,
      unknown_knowledge_base_ids: unknown,
      fields: [{ field: 'body.knowledge_base_ids', message: 'unknown knowledge base' }],
    });
  await em.fork().transactional(async (tx) => {
    await sql(tx, `delete from agent_knowledge_bases where tenant = ? and agent_id = ?`, [tenant, agentId]);
    for (const id of wanted)
      await sql(
        tx,
        `insert into agent_knowledge_bases (tenant, agent_id, knowledge_base_id, assigned_by) values (?, ?, ?, ?)`,
        [tenant, agentId, id, principal.id],
      );
  });
  return agentKnowledge(em, tenant, agentId);
}
