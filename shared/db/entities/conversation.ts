import { EntitySchema } from '@mikro-orm/core';

/**
 * The platform's conversation store: agent threads and their messages. Action Review hands
 * decisions back into it; the MCP gateway builds agent turns on the same tables.
 */
export interface ConversationThread {
  id: string;
  tenant: string;
  botId: string | null;
  /** The person whose thread this is; null for threads opened by an agent run. */
  ownerId: string | null;
  /** `private`: only the owner sees it (and proposals raised in it); `tenant`: everyone in the tenant. */
  visibility: 'private' | 'tenant';
  title: string | null;
  createdAt: Date;
}

export const ConversationThreadEntity = new EntitySchema<ConversationThread>({
  name: 'ConversationThread',
  tableName: 'conversation_threads',
  properties: {
    id: { type: 'string', primary: true },
    tenant: { type: 'string' },
    botId: { type: 'string', nullable: true },
    ownerId: { type: 'string', nullable: true },
    visibility: { type: 'string' },
    title: { type: 'string', nullable: true },
    createdAt: { type: 'Date' },
  },
});

export interface ConversationMessage {
  id: string;
  threadId: string;
  role: string;
  authorKind: string;
  authorId: string;
  content: string;
  metadata: Record<string, unknown>;
  /** Set by writers that may retry (hand-backs): a second write with the same key is a no-op. */
  idempotencyKey: string | null;
  createdAt: Date;
}

export const ConversationMessageEntity = new EntitySchema<ConversationMessage>({
  name: 'ConversationMessage',
  tableName: 'conversation_messages',
  properties: {
    id: { type: 'uuid', primary: true },
    threadId: { type: 'string' },
    role: { type: 'string' },
    authorKind: { type: 'string' },
    authorId: { type: 'string' },
    content: { type: 'text' },
    metadata: { type: 'json' },
    idempotencyKey: { type: 'string', nullable: true },
    createdAt: { type: 'Date' },
  },
});
