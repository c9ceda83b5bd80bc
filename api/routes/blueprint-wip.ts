/**
 * Blueprint work-in-progress sessions (issue 14; paths ours, the spec only names "active WIP sessions"):
 * open, list, edit (commits on the branch `wip/<session_id>`), commit (one commit on the working copy)
 * and discard. Logic in `shared/blueprints/wip-service.ts`.
 */
import { z } from 'zod';
import { open, type Ctx } from '../../shared/blueprints/service.js';
import {
  commitSession,
  discardSession,
  editSession,
  listSessions,
  openSession,
  WIP_EDIT_LIMITS,
  WIP_TTL,
} from '../../shared/blueprints/wip-service.js';
import { BlueprintName, RelativeFilePath } from '../../shared/blueprints/manifest.js';
import { defineRoute, routeArea, successEnvelope, type RouteContext } from '../http/route.js';
import { WipCommitView, WipSessionView } from '../../shared/blueprints/views.js';

const { tags, authed, err } = routeArea('blueprints');

const NameParams = z.object({ blueprint_name: BlueprintName });
const SessionParams = NameParams.extend({
  session_id: z
    .string()
    .regex(/^bpwip_[0-9a-f]{16}$/)
    .describe('A WIP session id (bpwip_…)'),
});

function ctxOf(c: RouteContext<unknown, unknown, unknown>): Ctx {
  return { em: c.em, principal: c.principal, root: c.deps.config.blueprints.dir };
}

const NOT_FOUND = err('No such blueprint (or not visible), or no such session on it');
const CLOSED_409 = err(
  'Built-in default (DEFAULT_BLUEPRINT), or the session is no longer open (BLUEPRINT_WIP_SESSION_CLOSED: committed, discarded or expired)',
);

export const blueprintWipRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/blueprints/:blueprint_name/wip-sessions',
    operationId: 'listBlueprintWipSessions',
    summary: 'Work-in-progress sessions of a blueprint, newest first (view access)',
    tags,
    access: authed,
    params: NameParams,
    query: z.object({ limit: z.coerce.number().int().min(1).max(500).default(50) }),
    responses: {
      200: {
        description: 'Sessions',
        schema: successEnvelope(z.object({ sessions: z.array(WipSessionView) })),
      },
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b } = await open(ctx, c.params.blueprint_name, 'view');
      return { success: true, data: { sessions: await listSessions(ctx, b, c.query.limit) } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/:blueprint_name/wip-sessions',
    operationId: 'openBlueprintWipSession',
    summary: 'Open a work-in-progress session (edit access): edits go to the branch wip/<session_id>',
    description: `The session starts at the working copy's head and expires after ttl_seconds (default ${WIP_TTL.defaultSeconds}; the workflow blueprint-wip/<session_id> closes it as expired and drops its branch). While it is active, rename and create_version import answer 409 BLUEPRINT_WIP_SESSION_ACTIVE. Several sessions may be open at once; each commit applies only what its own branch changed.`,
    tags,
    access: authed,
    params: NameParams,
    body: z.object({
      ttl_seconds: z.number().int().min(WIP_TTL.minSeconds).max(WIP_TTL.maxSeconds).optional(),
      note: z.string().max(500).optional().describe('Free text shown with the session'),
    }),
    successStatus: 201,
    responses: {
      201: { description: 'Opened', schema: successEnvelope(WipSessionView) },
      403: err('No edit access'),
      409: err('Built-in default (DEFAULT_BLUEPRINT)'),
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b } = await open(ctx, c.params.blueprint_name, 'edit');
      return { success: true, data: await openSession(ctx, c.deps, b, c.body) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/:blueprint_name/wip-sessions/:session_id/edits',
    operationId: 'editBlueprintWipSession',
    summary: 'Write and/or remove files on the session branch (one commit there; the working copy is untouched)',
    description: `At most ${WIP_EDIT_LIMITS.maxFiles} files written and ${WIP_EDIT_LIMITS.maxFiles} removed per edit, each written file's text at most ${WIP_EDIT_LIMITS.maxFileChars} characters (UTF-8). A written blueprint_manifest.yaml must be a valid manifest keeping the blueprint's name (400), and it cannot be removed (400); removing a file the session does not have answers 404. An edit naming no file changes nothing. Only the session opener or a caller with manage access may edit.`,
    tags,
    access: authed,
    params: SessionParams,
    body: z.object({
      files: z
        .array(z.object({ path: RelativeFilePath, content: z.string().max(WIP_EDIT_LIMITS.maxFileChars) }))
        .max(WIP_EDIT_LIMITS.maxFiles)
        .optional(),
      remove: z.array(RelativeFilePath).max(WIP_EDIT_LIMITS.maxFiles).optional(),
      message: z.string().min(1).max(500).optional().describe('The commit message on the session branch'),
    }),
    responses: {
      200: { description: 'Edited', schema: successEnvelope(WipSessionView) },
      400: err('An invalid manifest, a manifest renaming the blueprint, or removing the manifest'),
      403: err('No edit access, or not the session opener without manage access'),
      404: NOT_FOUND,
      409: CLOSED_409,
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b, flags } = await open(ctx, c.params.blueprint_name, 'edit');
      return { success: true, data: await editSession(ctx, b, flags, c.params.session_id, c.body) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/:blueprint_name/wip-sessions/:session_id/commit',
    operationId: 'commitBlueprintWipSession',
    summary: "Apply the session's edits to the working copy as one commit and close it",
    description:
      "The files the session branch wrote or removed since the session opened are applied to the current working copy (other files keep their current content) as ONE commit authored by the caller (commit_sha null when the working copy already had that content); the branch is deleted and the session's timer ends.",
    tags,
    access: authed,
    params: SessionParams,
    body: z.object({ message: z.string().min(1).max(500).optional().describe('The working-copy commit message') }),
    responses: {
      200: {
        description: 'Committed',
        schema: successEnvelope(WipCommitView),
      },
      403: err('No edit access, or not the session opener without manage access'),
      404: NOT_FOUND,
      409: err(
        'Built-in default, the session is no longer open (BLUEPRINT_WIP_SESSION_CLOSED), or its manifest conflicts (BLUEPRINT_WIP_SESSION_CONFLICT)',
      ),
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b, flags } = await open(ctx, c.params.blueprint_name, 'edit');
      return { success: true, data: await commitSession(ctx, c.deps, b, flags, c.params.session_id, c.body) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/:blueprint_name/wip-sessions/:session_id/discard',
    operationId: 'discardBlueprintWipSession',
    summary: "Drop the session's edits (its branch) and close it; the working copy is untouched",
    tags,
    access: authed,
    params: SessionParams,
    responses: {
      200: { description: 'Discarded', schema: successEnvelope(WipSessionView) },
      403: err('No edit access, or not the session opener without manage access'),
      404: NOT_FOUND,
      409: CLOSED_409,
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b, flags } = await open(ctx, c.params.blueprint_name, 'edit');
      return { success: true, data: await discardSession(ctx, c.deps, b, flags, c.params.session_id) };
    },
  }),
];
