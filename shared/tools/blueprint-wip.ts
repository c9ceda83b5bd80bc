import { z } from 'zod';
import { BlueprintName, RelativeFilePath } from '../blueprints/manifest.js';
import type { AppDeps } from '../app-deps.js';
import { open, type Ctx } from '../blueprints/service.js';
import {
  commitSession,
  discardSession,
  editSession,
  listSessions,
  openSession,
  WIP_EDIT_LIMITS,
  WIP_TTL,
} from '../blueprints/wip-service.js';

const SessionId = z.string().regex(/^bpwip_[0-9a-f]{16}$/);

/** The `blueprints` tool's work-in-progress actions: what the `.../wip-sessions` routes do (same checks). */
export const wipToolActions = [
  z
    .object({
      action: z.literal('WIP_OPEN'),
      blueprint_name: BlueprintName,
      ttl_seconds: z.number().int().min(WIP_TTL.minSeconds).max(WIP_TTL.maxSeconds).optional(),
      note: z.string().max(500).optional(),
    })
    .strict(),
  z.object({ action: z.literal('WIP_LIST'), blueprint_name: BlueprintName }).strict(),
  z
    .object({
      action: z.literal('WIP_EDIT'),
      blueprint_name: BlueprintName,
      session_id: SessionId,
      files: z
        .array(z.object({ path: RelativeFilePath, content: z.string().max(WIP_EDIT_LIMITS.maxFileChars) }).strict())
        .max(WIP_EDIT_LIMITS.maxFiles)
        .optional(),
      remove: z.array(RelativeFilePath).max(WIP_EDIT_LIMITS.maxFiles).optional(),
      message: z.string().min(1).max(500).optional(),
    })
    .strict(),
  z
    .object({
      action: z.literal('WIP_COMMIT'),
      blueprint_name: BlueprintName,
      session_id: SessionId,
      message: z.string().min(1).max(500).optional(),
    })
    .strict(),
  z.object({ action: z.literal('WIP_DISCARD'), blueprint_name: BlueprintName, session_id: SessionId }).strict(),
] as const;

export type WipToolInput = z.infer<(typeof wipToolActions)[number]>;

export async function runWipToolAction(ctx: Ctx, deps: AppDeps, input: WipToolInput) {
  if (input.action === 'WIP_LIST') {
    const { b } = await open(ctx, input.blueprint_name, 'view');
    return { sessions: await listSessions(ctx, b, 50) };
  }
  const { b, flags } = await open(ctx, input.blueprint_name, 'edit');
  switch (input.action) {
    case 'WIP_OPEN':
      return openSession(ctx, deps, b, { ttl_seconds: input.ttl_seconds, note: input.note });
    case 'WIP_EDIT':
      return editSession(ctx, b, flags, input.session_id, input);
    case 'WIP_COMMIT':
      return commitSession(ctx, deps, b, flags, input.session_id, { message: input.message });
    case 'WIP_DISCARD':
      return discardSession(ctx, deps, b, flags, input.session_id);
  }
}
