import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError, NotFoundError } from '../errors.js';
import { toIso } from '../dates.js';
import { sql } from '../db/sql.js';
import { AgentCodes } from '../agents/error-codes.js';

export interface Room {
  room_id: string;
  name: string;
  topic: string | null;
  created_by: string;
  created_at: string;
  member_count: number;
}

export interface RoomMessage {
  seq: number;
  author_id: string;
  author_label: string;
  content: string;
  created_at: string;
}

type Member = { id: string; label: string; tenant: string };

/** Rooms of the caller's tenant, with member counts, by name. */
export async function listRooms(em: EntityManager, tenant: string): Promise<Room[]> {
  const rows = await sql<Record<string, unknown>>(
    em,
    `select r.*, (select count(*) from gateway_room_members m where m.room_id = r.id)::int as member_count
     from gateway_rooms r where r.tenant = ? order by lower(r.name)`,
    [tenant],
  );
  return rows.map((r) => ({
    room_id: String(r.id),
    name: String(r.name),
    topic: (r.topic as string | null) ?? null,
    created_by: String(r.created_by),
    created_at: toIso(r.created_at as Date),
    member_count: Number(r.member_count),
  }));
}

export async function createRoom(
  em: EntityManager,
  creator: Member,
  name: string,
  topic: string | null,
): Promise<Room> {
  const [clash] = await sql<{ id: string }>(
    em,
    'select id from gateway_rooms where tenant = ? and lower(name) = lower(?)',
    [creator.tenant, name],
  );
  if (clash)
    throw new ConflictError(`A room named ${name} already exists; join it instead.`, {
      code: AgentCodes.ROOM_NAME_TAKEN,
      room_id: clash.id,
    });
  const id = `room_${randomBytes(8).toString('hex')}`;
  await sql(
    em,
    'insert into gateway_rooms (id, tenant, name, topic, created_by, created_at) values (?, ?, ?, ?, ?, now())',
    [id, creator.tenant, name, topic, creator.id],
  );
  await joinRoom(em, creator, id);
  return (await listRooms(em, creator.tenant)).find((r) => r.room_id === id)!;
}

async function roomOf(em: EntityManager, tenant: string, roomId: string): Promise<void> {
  const [row] = await sql<{ id: string }>(em, 'select id from gateway_rooms where id = ? and tenant = ?', [
    roomId,
    tenant,
  ]);
  if (!row) throw new NotFoundError(`No room ${roomId}.`);
}

async function assertMember(em: EntityManager, member: Member, roomId: string): Promise<void> {
  await roomOf(em, member.tenant, roomId);
  const [row] = await sql<{ member_id: string }>(
    em,
    'select member_id from gateway_room_members where room_id = ? and member_id = ?',
    [roomId, member.id],
  );
  if (!row) throw new ConflictError(`Join room ${roomId} first (room_join).`, { code: AgentCodes.ROOM_NOT_JOINED });
}

/** Joins a room of the caller's tenant (idempotent). */
export async function joinRoom(em: EntityManager, member: Member, roomId: string): Promise<void> {
  await roomOf(em, member.tenant, roomId);
  await sql(
    em,
    'insert into gateway_room_members (room_id, member_id, member_label, joined_at) values (?, ?, ?, now()) on conflict do nothing',
    [roomId, member.id, member.label],
  );
}

export async function sendToRoom(
  em: EntityManager,
  member: Member,
  roomId: string,
  content: string,
): Promise<RoomMessage> {
  await assertMember(em, member, roomId);
  const [row] = await sql<Record<string, unknown>>(
    em,
    'insert into gateway_room_messages (room_id, author_id, author_label, content, created_at) values (?, ?, ?, ?, now()) returning *',
    [roomId, member.id, member.label, content],
  );
  return messageOf(row!);
}

/** Messages after `afterSeq` (a cursor the caller keeps), oldest first, at most `limit`. */
export async function readRoom(
  em: EntityManager,
  member: Member,
  roomId: string,
  afterSeq: number,
  limit: number,
): Promise<RoomMessage[]> {
  await assertMember(em, member, roomId);
  const rows = await sql<Record<string, unknown>>(
    em,
    'select * from gateway_room_messages where room_id = ? and seq > ? order by seq limit ?',
    [roomId, afterSeq, limit],
  );
  return rows.map(messageOf);
}

export async function roomMembers(em: EntityManager, member: Member, roomId: string) {
  await roomOf(em, member.tenant, roomId);
  const rows = await sql<Record<string, unknown>>(
    em,
    'select * from gateway_room_members where room_id = ? order by joined_at',
    [roomId],
  );
  return rows.map((r) => ({
    member_id: String(r.member_id),
    label: String(r.member_label),
    joined_at: toIso(r.joined_at as Date),
  }));
}

function messageOf(r: Record<string, unknown>): RoomMessage {
  return {
    seq: Number(r.seq),
    author_id: String(r.author_id),
    author_label: String(r.author_label),
    content: String(r.content),
    created_at: toIso(r.created_at as Date),
  };
}
