import { column, table, type Row } from './table.js';

/**
 * The platform's conversation store: agent threads and their messages. Action Review hands
 * decisions back into it; the MCP gateway builds agent turns on the same tables.
 */
export const ConversationThreadEntity = table('ConversationThread', 'conversation_threads', {
  id: column.string().primary(),
  tenant: column.string(),
  botId: column.string().nullable(),
  /** The person whose thread this is; null for threads opened by an agent run. */
  ownerId: column.string().nullable(),
  /** `private`: only the owner sees it (and proposals raised in it); `tenant`: everyone in the tenant. */
  visibility: column.string<'private' | 'tenant'>(),
  title: column.string().nullable(),
  createdAt: column.date(),
});
export type ConversationThread = Row<typeof ConversationThreadEntity>;

export const ConversationMessageEntity = table('ConversationMessage', 'conversation_messages', {
  id: column.uuid().primary(),
  threadId: column.string(),
  role: column.string(),
  authorKind: column.string(),
  authorId: column.string(),
  content: column.text(),
  metadata: column.json<Record<string, unknown>>(),
  /** Set by writers that may retry (hand-backs): a second write with the same key is a no-op. */
  idempotencyKey: column.string().nullable(),
  createdAt: column.date(),
});
export type ConversationMessage = Row<typeof ConversationMessageEntity>;
