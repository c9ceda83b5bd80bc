import { z } from 'zod';
import type { Principal } from '../../../shared/auth/principal.js';
import { ForbiddenError } from '../../../shared/errors.js';
import { createRoom, joinRoom, listRooms, readRoom, roomMembers, sendToRoom } from '../../../shared/rooms/store.js';
import { defineMcpAction, type McpActionContext } from './registry.js';

const RoomId = z.string().regex(/^room_[0-9a-f]{16}$/, 'a room_id from room_list or room_create');

/** Rooms name who speaks, so they need a signed-in caller: with sign-in off everyone is the same local admin. */
const ROOMS_NEED_SIGN_IN =
  'Rooms need sign-in: this deployment runs with authentication off (AUTH_PROVIDER=none), so callers cannot be told apart.';
const roomsUnavailable = ({ principal }: Pick<McpActionContext<unknown>, 'principal'>) =>
  principal.credential === 'auth_disabled' ? ROOMS_NEED_SIGN_IN : undefined;

function member(ctx: McpActionContext<unknown>) {
  const reason = roomsUnavailable(ctx);
  if (reason) throw new ForbiddenError(reason, { reason: 'rooms_need_sign_in' });
  const p: Principal = ctx.principal;
  return { id: p.id, label: p.displayName, tenant: p.tenant };
}

export const roomListAction = defineMcpAction({
  name: 'room_list',
  versions: ['v1', 'v2'],
  unavailable: roomsUnavailable,
  description: 'Rooms of your tenant.',
  params: z.object({}),
  handler: async (ctx) => ({ rooms: await listRooms(ctx.em, member(ctx).tenant) }),
});

export const roomCreateAction = defineMcpAction({
  name: 'room_create',
  versions: ['v1', 'v2'],
  unavailable: roomsUnavailable,
  description: 'Create a room (you join it).',
  params: z.object({ room_name: z.string().trim().min(1).max(100), topic: z.string().trim().max(1_000).optional() }),
  handler: async (ctx) => ({
    room: await createRoom(ctx.em, member(ctx), ctx.params.room_name, ctx.params.topic ?? null),
  }),
});

export const roomJoinAction = defineMcpAction({
  name: 'room_join',
  versions: ['v1', 'v2'],
  unavailable: roomsUnavailable,
  description: 'Join a room.',
  params: z.object({ room_id: RoomId }),
  handler: async (ctx) => {
    await joinRoom(ctx.em, member(ctx), ctx.params.room_id);
    return { room_id: ctx.params.room_id, joined: true };
  },
});

export const roomSendAction = defineMcpAction({
  name: 'room_send',
  versions: ['v1', 'v2'],
  unavailable: roomsUnavailable,
  description: 'Post a message to a room you joined.',
  params: z.object({ room_id: RoomId, message: z.string().trim().min(1).max(20_000) }),
  handler: async (ctx) => ({ message: await sendToRoom(ctx.em, member(ctx), ctx.params.room_id, ctx.params.message) }),
});

export const roomReadAction = defineMcpAction({
  name: 'room_read',
  versions: ['v1', 'v2'],
  unavailable: roomsUnavailable,
  description: 'Messages of a room you joined after a cursor (pass the last seq you saw; 0 for the start).',
  params: z.object({
    room_id: RoomId,
    after_seq: z.number().int().min(0).optional(),
    limit: z.number().int().min(1).max(200).optional(),
  }),
  handler: async (ctx) => {
    const messages = await readRoom(
      ctx.em,
      member(ctx),
      ctx.params.room_id,
      ctx.params.after_seq ?? 0,
      ctx.params.limit ?? 50,
    );
    return { room_id: ctx.params.room_id, messages, next_after_seq: messages.at(-1)?.seq ?? ctx.params.after_seq ?? 0 };
  },
});

export const roomWhoAction = defineMcpAction({
  name: 'room_who',
  versions: ['v1', 'v2'],
  unavailable: roomsUnavailable,
  description: 'Who is in a room.',
  params: z.object({ room_id: RoomId }),
  handler: async (ctx) => ({
    room_id: ctx.params.room_id,
    members: await roomMembers(ctx.em, member(ctx), ctx.params.room_id),
  }),
});
