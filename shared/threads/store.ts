import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ConversationMessageEntity, type ConversationMessage } from '../db/entities/index.js';
import { NotFoundError } from '../errors.js';
import { sql } from '../db/sql.js';

export interface ThreadRecord {
  id: string;
  tenant: string;
  agentId: string;
  ownerId: string | null;
  origin: string | null;
  callerPersona: string | null;
  callerGoal: string | null;
  title: string | null;
  createdAt: Date;
}

interface ThreadRow {
  id: string;
  tenant: string;
  bot_id: string;
  owner_id: string | null;
  origin: string | null;
  caller_persona: string | null;
  caller_goal: string | null;
  title: string | null;
  created_at: Date;
}

const toRecord = (r: ThreadRow): ThreadRecord => ({
  id: r.id,
  tenant: r.tenant,
  agentId: r.bot_id,
  ownerId: r.owner_id,
  origin: r.origin,
  callerPersona: r.caller_persona,
  callerGoal: r.caller_goal,
  title: r.title,
  createdAt: new Date(r.created_at),
});

/** Creates an agent thread owned by one person (private: only the owner sees it and its proposals). */
export async function createThread(
  em: EntityManager,
  t: {
    id: string;
    tenant: string;
    agentId: string;
    ownerId: string;
    origin: string | null;
    callerPersona: string | null;
    callerGoal: string | null;
    title: string | null;
  },
): Promise<ThreadRecord> {
  const [row] = await sql<ThreadRow>(
    em,
    `insert into conversation_threads (id, tenant, bot_id, owner_id, visibility, title, origin, caller_persona, caller_goal, created_at)
     values (?, ?, ?, ?, 'private', ?, ?, ?, ?, now()) returning *`,
    [t.id, t.tenant, t.agentId, t.ownerId, t.title, t.origin, t.callerPersona, t.callerGoal],
  );
  return toRecord(row!);
}

/** Deletes a thread row; its messages go with it (foreign key cascade). */
export async function deleteThread(em: EntityManager, id: string): Promise<void> {
  await sql(em, 'delete from conversation_threads where id = ?', [id]);
}

export async function findThread(em: EntityManager, id: string): Promise<ThreadRecord | null> {
  const [row] = await sql<ThreadRow>(em, 'select * from conversation_threads where id = ?', [id]);
  return row ? toRecord(row) : null;
}

/** The caller's own thread; anyone else's (or another tenant's) answers 404 like an unknown one. */
export async function getOwnThread(
  em: EntityManager,
  owner: { id: string; tenant: string },
  id: string,
): Promise<ThreadRecord> {
  const thread = await findThread(em, id);
  if (!thread || thread.tenant !== owner.tenant || thread.ownerId !== owner.id)
    throw new NotFoundError(`No thread ${id}.`);
  return thread;
}

export async function updateCallerGoal(em: EntityManager, id: string, goal: string): Promise<void> {
  await sql(em, 'update conversation_threads set caller_goal = ? where id = ?', [goal, id]);
}

export interface NewMessage {
  threadId: string;
  role: 'user' | 'assistant' | 'tool' | 'system';
  authorKind: string;
  authorId: string;
  content: string;
  metadata?: Record<string, unknown>;
  /** Writers that may retry pass a key: a second write with it returns the first message. */
  idempotencyKey: string;
}

/** Appends a message once per idempotency key; returns the stored message either way. */
export async function appendMessage(em: EntityManager, m: NewMessage): Promise<ConversationMessage> {
  await sql(
    em,
    `insert into conversation_messages (id, thread_id, role, author_kind, author_id, content, metadata, idempotency_key, created_at)
     values (?, ?, ?, ?, ?, ?, ?::jsonb, ?, clock_timestamp()) on conflict (idempotency_key) do nothing`,
    [
      randomUUID(),
      m.threadId,
      m.role,
      m.authorKind,
      m.authorId,
      m.content,
      JSON.stringify(m.metadata ?? {}),
      m.idempotencyKey,
    ],
  );
  return em.findOneOrFail(ConversationMessageEntity, { idempotencyKey: m.idempotencyKey });
}

export async function listMessages(em: EntityManager, threadId: string): Promise<ConversationMessage[]> {
  return em.find(ConversationMessageEntity, { threadId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
}

/** Files the agent wrote (tool `agent_files`) during one turn, in order. */
export async function filesOfTurn(
  em: EntityManager,
  threadId: string,
  turnId: string,
): Promise<Array<{ fileId: string; name: string }>> {
  const rows = await sql<{ content: string }>(
    em,
    `select content from conversation_messages
     where thread_id = ? and role = 'tool' and idempotency_key like ? and metadata->>'tool' = 'agent_files' and (metadata->>'ok')::boolean
     order by created_at`,
    [threadId, `${turnId}:tool:%`],
  );
  return rows.flatMap((r) => {
    const parsed = JSON.parse(r.content) as { file_id?: string; name?: string };
    return parsed.file_id ? [{ fileId: parsed.file_id, name: parsed.name ?? parsed.file_id }] : [];
  });
}
