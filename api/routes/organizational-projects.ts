import { z } from 'zod';
import {
  assignItem,
  createProject,
  deleteProject,
  getProject,
  ITEM_KINDS,
  listMembers,
  listProjects,
  PROJECT_ID,
  setArchived,
  updateProject,
} from '../../shared/missions/organizational-projects.js';
import { defineRoute, queryBoolean, successEnvelope, type ResponseSpec } from '../http/route.js';

const ProjectId = z.string().regex(PROJECT_ID, 'an organizational project id: "wprj_" and 32 lowercase hex characters');
const Counts = z
  .object({ app: z.number().int(), flow: z.number().int(), mission: z.number().int(), thread: z.number().int() })
  .describe('Assigned items per kind');
const ProjectView = z
  .object({
    id: ProjectId,
    name: z.string(),
    description: z.string(),
    created_by: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    archived_at: z.string().nullable(),
    counts: Counts,
  })
  .meta({ id: 'OrganizationalProject' });
const DeletedView = ProjectView.omit({ counts: true });
const Member = z.object({ ref_id: z.string(), assigned_by: z.string(), assigned_at: z.string() });
const MembersView = z.object({
  project_id: ProjectId,
  items: z.object({
    app: z.array(Member),
    flow: z.array(Member),
    mission: z.array(Member),
    thread: z.array(Member),
  }),
});

/**
 * Not blank: at least one character JavaScript's `trim()` keeps (the class is spelled out, not `\s`, so
 * the published pattern means the same to every regex engine). The service stores the name trimmed.
 */
const NOT_BLANK = /[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]/;
const Name = z.string().min(1).max(200).regex(NOT_BLANK, 'a name that is not blank');
const Description = z.string().max(4000);
const idParams = z.object({ project_id: ProjectId });
const RefId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$/, 'an item id: letters, digits, ".", "_", ":", "@" and "-"')
  .describe(
    'Thread id, mission id (its workflow is `mission/<id>`), flow as `<source_id>:<flow_name>`, or app as `<source_id>:<app_name>`',
  );

const MANAGE_403 = 'Not the creator and without `manage_users` (`forbidden`)';
const base = { tags: ['organizational-projects'], access: { kind: 'authenticated' as const, permission: null } };

export const organizationalProjectRoutes = [
  defineRoute({
    ...base,
    method: 'post',
    path: '/api/organizational-projects',
    operationId: 'createOrganizationalProject',
    summary: 'Create an organizational project (any signed-in caller; the name is unique among active projects)',
    body: z.object({ name: Name, description: Description.optional() }).strict(),
    bodyKind: 'config',
    successStatus: 201,
    responses: {
      201: { description: 'Created', schema: successEnvelope(ProjectView) },
      409: { description: '`PROJECT_NAME_TAKEN`: an active project of the tenant has this name (case-insensitively)' },
    },
    handler: async ({ em, principal, body }) => ({ success: true, data: await createProject(em, principal, body) }),
  }),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/organizational-projects',
    operationId: 'listOrganizationalProjects',
    summary: "The tenant's organizational projects by name, with assigned items counted per kind",
    query: z.object({ include_archived: queryBoolean(false).describe('Include archived projects (default false)') }),
    responses: {
      200: {
        description: 'Projects',
        schema: successEnvelope(z.object({ projects: z.array(ProjectView) })),
      },
    },
    handler: async ({ em, principal, query }) => ({
      success: true,
      data: { projects: await listProjects(em, principal, query.include_archived) },
    }),
  }),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/organizational-projects/:project_id',
    operationId: 'getOrganizationalProject',
    summary: 'One organizational project of the tenant',
    params: idParams,
    responses: {
      200: { description: 'The project', schema: successEnvelope(ProjectView) },
      404: { description: 'Unknown in this tenant' },
    },
    handler: async ({ em, principal, params }) => ({
      success: true,
      data: await getProject(em, principal, params.project_id),
    }),
  }),
  defineRoute({
    ...base,
    method: 'patch',
    path: '/api/organizational-projects/:project_id',
    operationId: 'updateOrganizationalProject',
    summary: 'Rename or describe a project (its creator or `manage_users`)',
    params: idParams,
    body: z.object({ name: Name.optional(), description: Description.optional() }).strict(),
    bodyKind: 'config',
    responses: {
      200: { description: 'Updated', schema: successEnvelope(ProjectView) },
      403: { description: MANAGE_403 },
      404: { description: 'Unknown in this tenant' },
      409: { description: '`PROJECT_NAME_TAKEN`' },
    },
    handler: async ({ em, principal, params, body }) => ({
      success: true,
      data: await updateProject(em, principal, params.project_id, body),
    }),
  }),
  defineRoute({
    ...base,
    method: 'delete',
    path: '/api/organizational-projects/:project_id',
    operationId: 'deleteOrganizationalProject',
    summary: 'Delete an empty project, archived or not (its creator or `manage_users`)',
    params: idParams,
    responses: {
      200: { description: 'Deleted; the project as it was', schema: successEnvelope(DeletedView) },
      403: { description: MANAGE_403 },
      404: { description: 'Unknown in this tenant' },
      409: { description: '`PROJECT_NOT_EMPTY`: items are still assigned to it' },
    },
    handler: async ({ em, principal, params }) => ({
      success: true,
      data: await deleteProject(em, principal, params.project_id),
    }),
  }),
  ...(['archive', 'unarchive'] as const).map((action) =>
    defineRoute({
      ...base,
      method: 'post',
      path: `/api/organizational-projects/:project_id/${action}`,
      operationId: `${action}OrganizationalProject`,
      summary:
        action === 'archive'
          ? 'Archive a project: it leaves the default list and its assignments become read-only (kept)'
          : 'Unarchive a project (its name must not be taken by an active project)',
      params: idParams,
      responses: {
        200: { description: 'The project (idempotent)', schema: successEnvelope(ProjectView) },
        403: { description: MANAGE_403 },
        404: { description: 'Unknown in this tenant' },
        ...((action === 'unarchive' ? { 409: { description: '`PROJECT_NAME_TAKEN`' } } : {}) as Record<
          number,
          ResponseSpec
        >),
      },
      handler: async ({ em, principal, params }) => ({
        success: true,
        data: await setArchived(em, principal, params.project_id, action === 'archive'),
      }),
    }),
  ),
  defineRoute({
    ...base,
    method: 'get',
    path: '/api/organizational-projects/:project_id/members',
    operationId: 'listOrganizationalProjectMembers',
    summary: 'Items assigned to a project, by kind (oldest assignment first)',
    params: idParams,
    responses: {
      200: { description: 'Members', schema: successEnvelope(MembersView) },
      404: { description: 'Unknown in this tenant' },
    },
    handler: async ({ em, principal, params }) => ({
      success: true,
      data: await listMembers(em, principal, params.project_id),
    }),
  }),
  defineRoute({
    ...base,
    method: 'put',
    path: '/api/organizational-project-assignments/:kind/:ref_id',
    operationId: 'assignOrganizationalProject',
    summary: "Set or clear (null) an item's organizational project",
    description:
      "The item must exist and be the caller's to edit: a thread the caller can see; a promoted managed flow (`<source_id>:<flow_name>`, needs `manage_flows` or `manage_repos`); a mission the caller may see (its requester, an administrator, or whoever may view its blueprint; otherwise 404). an app a managed source recorded (`<source_id>:<app_name>`, needs `manage_repos`; unknown apps answer 404 `APP_UNKNOWN`). Items of an archived project stay read-only.",
    params: z.object({ kind: z.enum(ITEM_KINDS), ref_id: RefId }),
    body: z.object({ project_id: ProjectId.nullable() }).strict(),
    bodyKind: 'config',
    responses: {
      200: {
        description: "The item's project id (null when cleared)",
        schema: successEnvelope(
          z.object({ kind: z.enum(ITEM_KINDS), ref_id: z.string(), project_id: ProjectId.nullable() }),
        ),
      },
      403: {
        description: 'Flows: without `manage_flows` or `manage_repos`; apps: without `manage_repos` (`forbidden`)',
      },
      404: { description: 'Unknown or hidden item (`APP_UNKNOWN` for apps), or unknown project' },
      409: { description: '`PROJECT_ARCHIVED`: the target project, or the one the item is in, is archived' },
    },
    handler: async ({ em, deps, principal, params, body }) => ({
      success: true,
      data: await assignItem(em, deps, principal, params.kind, params.ref_id, body.project_id),
    }),
  }),
];
