/**
 * Blueprints (spec, Blueprints): inventory, detail, files, history, authoring (create, update, rename,
 * delete), role grants, ZIP export and import, versioned mode (`versioning/*`, logic in
 * `shared/blueprints/versioning.ts`). The wizard has its own module (`blueprint-wizard.ts`). Logic lives in
 * `shared/blueprints/service.ts`; storage in `shared/blueprints/`. Remote-backed blueprints (imported by a
 * managed source, `shared/blueprints/remote.ts`) are read-only here; their rename opens a pull request
 * (`shared/blueprints/remote-rename.ts`).
 */
import { z } from 'zod';
import {
  accessList,
  create,
  detail,
  exportZip,
  fileBytes,
  grant,
  historyOf,
  inventory,
  open,
  remove,
  update,
  type Ctx,
} from '../../shared/blueprints/service.js';
import {
  beforeVersioning,
  enable,
  promote,
  restore,
  saveVersion,
  summary as versioningSummary,
  VersionRestorer,
} from '../../shared/blueprints/versioning.js';
import { ACTIONS } from '../../shared/blueprints/access.js';
import { findRow } from '../../shared/blueprints/store.js';
import { BlueprintName, DefaultMode, PhaseList, RelativeFilePath } from '../../shared/blueprints/manifest.js';
import { ZIP_LIMITS } from '../../shared/blueprints/zip.js';
import { BadRequestError } from '../../shared/errors.js';
import { importUpload, previewUpload, renameBlueprint } from '../../shared/blueprints/route-flows.js';
import type { UploadedFile } from '../http/multipart.js';
import { defineRoute, type ResponseSpec, routeArea, successEnvelope, type RouteContext } from '../http/route.js';
import { Detail, PendingRenameView, PullRequestView, Summary } from '../../shared/blueprints/views.js';
import { RequestCodes } from '../../shared/http/error-codes.js';

const { tags, authed, err } = routeArea('blueprints');

const NameParams = z.object({ blueprint_name: BlueprintName });
const IdQuery = z.object({
  blueprint_id: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('Pins the request to this blueprint identity; a different one answers 409 BLUEPRINT_IDENTITY_MISMATCH'),
});

const AccessView = z.object({
  blueprint_name: z.string(),
  blueprint_id: z.string(),
  owner: z.string().nullable(),
  grants: z.array(
    z.object({
      role_name: z.string(),
      action: z.enum(ACTIONS),
      subject: z.string(),
      granted_by: z.string(),
      granted_at: z.string(),
    }),
  ),
});
const HistoryView = z.object({
  blueprint_name: z.string(),
  blueprint_id: z.string(),
  commits: z.array(
    z.object({
      commit_id: z.string(),
      message: z.string(),
      author_name: z.string(),
      author_id: z.string(),
      committed_at: z.string(),
    }),
  ),
});

const Description = z.string().max(500);
const Phases = PhaseList;
const RoleName = z
  .string()
  .max(200)
  .regex(/\S/, 'must not be blank')
  .transform((s) => s.trim())
  .describe('A configured role (built-in or custom); required, non-blank');
const GrantBody = z.object({
  role_name: RoleName,
  action: z.enum(ACTIONS).default('view').describe('view, edit or manage (manage implies edit implies view)'),
});

const IMPORT_LIMITS = { maxFileBytes: ZIP_LIMITS.maxArchiveBytes, maxFiles: 1, maxFields: 4, fileFields: ['file'] };
const formBoolean = z.enum(['true', 'false']).optional();
const ZIP_DOC = `Archives are checked from their central directory before anything is written: at most ${ZIP_LIMITS.maxArchiveBytes} bytes uploaded (413), ${ZIP_LIMITS.maxMembers} members, ${ZIP_LIMITS.maxMemberBytes} bytes per member and ${ZIP_LIMITS.maxTotalBytes} in all once inflated, a compression ratio of at most ${ZIP_LIMITS.maxRatio}:1 for members over ${ZIP_LIMITS.ratioFloorBytes} bytes; absolute paths, "..", backslashes, symlinks and other non-regular members, duplicate names, encrypted members and compression methods other than stored and deflated are refused (400 payload.code UNSAFE_ZIP with payload.reason); so is a member that inflates to another size than declared or fails its CRC-32 (nothing is written). A missing or invalid ${'blueprint_manifest.yaml'} answers 400 payload.code INVALID_BLUEPRINT_ARCHIVE.`;

function ctxOf(c: RouteContext<unknown, unknown, unknown>): Ctx {
  c.deps.blueprintVersions ??= new VersionRestorer();
  return {
    em: c.em,
    principal: c.principal,
    root: c.deps.config.blueprints.dir,
    restorer: c.deps.blueprintVersions.attach(c.deps),
  };
}

/** Opens a blueprint for a versioning route: 503 while its saved versions are restored, then access. */
async function openVersioned(
  c: RouteContext<unknown, unknown, unknown>,
  name: string,
  action: 'view' | 'edit' | 'manage',
  blueprintId: string | undefined,
) {
  const ctx = ctxOf(c);
  const row = await findRow(ctx.em, ctx.principal.tenant, name);
  if (row) await beforeVersioning(ctx, row);
  return { ctx, ...(await open(ctx, name, action, blueprintId)) };
}

const VersionView = z.object({
  version_number: z.number().int(),
  version_id: z.string(),
  commit_sha: z.string(),
  tag: z.string().describe('The Git tag naming the version commit: version/<n>'),
  fingerprint: z.string().describe('working_copy_fingerprint of the saved files'),
  label: z.string().nullable(),
  note: z.string().nullable(),
  source: z.enum(['working_copy', 'import']),
  created_by: z.string(),
  created_at: z.string(),
  is_production: z.boolean(),
});
const VersioningSummary = z.object({
  blueprint_name: z.string(),
  blueprint_id: z.string(),
  mode: z.enum(['standard', 'versioned']),
  enabled_at: z.string().nullable(),
  enabled_by: z.string().nullable(),
  versions: z.array(VersionView),
  production: z
    .object({
      version_number: z.number().int(),
      version_id: z.string(),
      commit_sha: z.string(),
      promoted_by: z.string().nullable(),
      promoted_at: z.string().nullable(),
    })
    .nullable(),
  working_copy: z
    .object({
      commit_sha: z.string(),
      fingerprint: z.string(),
      latest_version_number: z.number().int().nullable(),
      dirty_since_version: z
        .boolean()
        .describe('true when the working copy differs from the latest saved version (or none was saved)'),
    })
    .nullable()
    .describe('null for built-in defaults'),
  promotion_history: z.array(
    z.object({
      version_number: z.number().int(),
      previous_version_number: z.number().int().nullable(),
      promoted_by: z.string(),
      promoted_at: z.string(),
      via: z.enum(['promote', 'import']),
    }),
  ),
});
const VersionNumberBody = z.object({ version_number: z.number().int().min(1).max(2_147_483_647) });
const RESTORING_503 = err(
  'Saved versions are being restored after a restart (payload.code BLUEPRINT_VERSIONS_RESTORING, retryable, Retry-After header), or a dependency is unavailable',
);

function zipFile(files: UploadedFile[]): UploadedFile {
  const file = files.find((f) => f.field === 'file');
  if (!file)
    throw new BadRequestError('Send the archive as the multipart file field `file`.', {
      fields: [{ field: 'body.file', message: 'required', code: RequestCodes.file_required }],
    });
  return file;
}

/** What most blueprint routes share: the area's tag, signed-in access, the blueprint named in the path (and optionally by id). */
const ON_BLUEPRINT = { tags, access: authed, params: NameParams, query: IdQuery };

const ACCESS_CHANGES: Record<
  'grant' | 'revoke',
  { operationId: string; summary: string; refusals: Record<number, ResponseSpec> }
> = {
  grant: {
    operationId: 'grantBlueprintAccess',
    summary: 'Grant a configured role view, edit or manage on this blueprint; needs manage access',
    refusals: { 400: err('role_name missing, blank or not a configured role') },
  },
  revoke: {
    operationId: 'revokeBlueprintAccess',
    summary: "Revoke a role's grant for one action; needs manage access (revoking an absent grant changes nothing)",
    refusals: {},
  },
};

/** Grant or revoke a role's access to one action (the answer: the access list). */
const accessChangeRoute = (change: 'grant' | 'revoke') =>
  defineRoute({
    method: 'post',
    path: `/api/blueprints/:blueprint_name/access/${change}`,
    operationId: ACCESS_CHANGES[change].operationId,
    summary: ACCESS_CHANGES[change].summary,
    ...ON_BLUEPRINT,
    body: GrantBody,
    responses: {
      200: { description: 'Access list', schema: successEnvelope(AccessView) },
      ...ACCESS_CHANGES[change].refusals,
      403: err('No manage access'),
      409: err('Built-in default, or blueprint_id mismatch'),
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b } = await open(ctx, c.params.blueprint_name, 'manage', c.query.blueprint_id);
      return { success: true, data: await grant(ctx, b, c.body.role_name, c.body.action, change === 'grant') };
    },
  });

export const blueprintRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/blueprints/',
    operationId: 'listBlueprints',
    summary: 'Blueprint inventory: what the caller can view (hidden built-ins omitted), each with its origin',
    tags,
    access: authed,
    responses: {
      200: { description: 'Blueprints', schema: successEnvelope(z.object({ blueprints: z.array(Summary) })) },
    },
    handler: async (c) => ({ success: true, data: { blueprints: await inventory(ctxOf(c)) } }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/',
    operationId: 'createBlueprint',
    summary: 'Create a blueprint (owner-only until roles are granted); its working copy starts with one commit',
    tags,
    access: authed,
    body: z.object({
      blueprint_name: BlueprintName,
      short_description: Description.optional(),
      default_mode: DefaultMode.optional(),
      phases: Phases.optional(),
    }),
    successStatus: 201,
    responses: {
      201: { description: 'Created', schema: successEnvelope(Detail) },
      409: err('The name is taken (payload.code BLUEPRINT_NAME_TAKEN)'),
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const b = await create(ctx, {
        name: c.body.blueprint_name,
        short_description: c.body.short_description,
        default_mode: c.body.default_mode,
        phases: c.body.phases,
      });
      const { flags } = await open(ctx, b.manifest.name, 'view');
      return { success: true, data: await detail(ctx, b, flags) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/import/preview',
    operationId: 'previewBlueprintImport',
    summary: 'Check a blueprint ZIP and say what importing it would do (nothing is written)',
    description: `Multipart field \`file\`. A missing file part, an unsafe or an invalid archive answers 200 with valid false and the reason. ${ZIP_DOC}`,
    tags,
    access: authed,
    body: z.object({ confirm_legacy_name_match: formBoolean }),
    bodyKind: 'multipart',
    multipart: IMPORT_LIMITS,
    responses: {
      200: {
        description: 'Preview',
        schema: successEnvelope(
          z.object({
            valid: z.boolean(),
            message: z.string(),
            reason: z.string().optional(),
            blueprint_name: z.string().nullable(),
            blueprint_id: z.string().nullable().optional(),
            manifest_version: z.number().int().nullable(),
            legacy_export: z.boolean(),
            file_count: z.number().int().optional(),
            matching_local_target: z
              .object({
                blueprint_name: z.string(),
                blueprint_id: z.string(),
                matched_by: z.enum(['blueprint_id', 'name']),
                is_default: z.boolean(),
                can_edit: z.boolean(),
                mode: z.enum(['standard', 'versioned']),
              })
              .nullable(),
            allowed_collision_strategies: z.array(z.enum(['create_copy', 'create_version', 'replace'])),
            recommended_strategy: z.enum(['create_copy', 'create_version', 'replace']).nullable(),
          }),
        ),
      },
      413: err('Upload over 64 MiB'),
    },
    handler: async (c) => ({
      success: true,
      data: await previewUpload(ctxOf(c), c.files.find((f) => f.field === 'file')?.path),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/import',
    operationId: 'importBlueprint',
    summary: 'Import a blueprint ZIP: create_copy (default), create_version or replace (alias override)',
    description: `Multipart field \`file\`; form fields \`collision_strategy\`, \`promote_imported_version\`, \`confirm_legacy_name_match\`, \`override\` (true: replace). create_copy suffixes the name on collision and makes the importer \`created_by\` (the archive's owner kept in \`origin\`); replace changes only the working copy of the matching local blueprint (by blueprint_id, or by name for legacy exports) and keeps its created_by and origin; identical content answers no_change true. create_version appends one saved version to exactly one matching editable local blueprint (else 409 BLUEPRINT_VERSION_TARGET_NOT_UNIQUE; built-in defaults included) without touching its working copy, history or production (created_version_number, created_version_id); content identical to the latest saved version answers no_change true and adds nothing; the destination must be versioned already (409 BLUEPRINT_NOT_VERSIONED: enable it first) and have no active work-in-progress session (409 BLUEPRINT_WIP_SESSION_ACTIVE); a legacy export needs confirm_legacy_name_match (409 LEGACY_BLUEPRINT_CONFIRMATION_REQUIRED); promote_imported_version needs manage access on the destination (403, checked before anything is written) and makes the version production (promoted true). ${ZIP_DOC}`,
    tags,
    access: authed,
    body: z.object({
      collision_strategy: z.enum(['create_copy', 'create_version', 'replace']).optional(),
      promote_imported_version: formBoolean,
      confirm_legacy_name_match: formBoolean,
      override: formBoolean,
    }),
    bodyKind: 'multipart',
    multipart: IMPORT_LIMITS,
    responses: {
      200: {
        description: 'Imported',
        schema: successEnvelope(
          z.object({
            import_action: z.enum(['created', 'replaced', 'version_created']),
            blueprint_name: z.string(),
            blueprint_id: z.string(),
            created_version_number: z.number().int().nullable(),
            created_version_id: z.string().nullable(),
            promoted: z.boolean(),
            no_change: z.boolean(),
            overrode_existing: z.boolean(),
            message: z.string(),
          }),
        ),
      },
      400: err('Unsafe or invalid archive, or promote_imported_version without create_version'),
      403: err('No edit access to the matching blueprint, or promote_imported_version without manage access'),
      404: err('replace without a matching local blueprint'),
      409: err('Default target, name taken, or a version-import refusal (payload.code)'),
      413: err('Upload over 64 MiB'),
      503: RESTORING_503,
    },
    handler: async (c) => {
      const file = zipFile(c.files);
      const strategy = c.body.override === 'true' ? 'replace' : (c.body.collision_strategy ?? 'create_copy');
      return {
        success: true,
        data: await importUpload(ctxOf(c), file.path, {
          strategy,
          promote: c.body.promote_imported_version === 'true',
          confirmLegacy: c.body.confirm_legacy_name_match === 'true',
        }),
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/blueprints/:blueprint_name',
    operationId: 'getBlueprint',
    summary:
      'Blueprint detail: resolved manifest, phases, source selection, caller access flags, origin and source view',
    ...ON_BLUEPRINT,
    responses: {
      200: { description: 'Blueprint', schema: successEnvelope(Detail) },
      409: err('blueprint_id names another identity (BLUEPRINT_IDENTITY_MISMATCH)'),
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b, flags } = await open(ctx, c.params.blueprint_name, 'view', c.query.blueprint_id);
      return { success: true, data: await detail(ctx, b, flags) };
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/api/blueprints/:blueprint_name',
    operationId: 'updateBlueprint',
    summary: 'Update short_description and/or phases (one commit; needs edit access)',
    ...ON_BLUEPRINT,
    body: z.object({ short_description: Description.optional(), phases: Phases.optional() }),
    responses: {
      200: { description: 'Updated', schema: successEnvelope(Detail) },
      403: err('No edit access'),
      409: err('Built-in default, or blueprint_id mismatch'),
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b } = await open(ctx, c.params.blueprint_name, 'edit', c.query.blueprint_id);
      await update(ctx, b, c.body);
      const fresh = await open(ctx, c.params.blueprint_name, 'view');
      return { success: true, data: await detail(ctx, fresh.b, fresh.flags) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/blueprints/:blueprint_name',
    operationId: 'deleteBlueprint',
    summary:
      'Delete a custom blueprint permanently (working copy, history and grants); one that missions reference is hidden instead; needs manage access',
    description:
      'Without missions the blueprint is deleted (outcome "deleted"). When any mission (any status) references it, it is hidden instead (outcome "hidden", deleted false): left out of the inventory and the wizard, answered as 404 by the blueprint routes (except a file read naming one of its missions with mission_id), its name stays taken, and its missions keep resolving it. Once none of its missions is running or paused, the hourly purge (Schedule blueprint-hidden-purge) deletes it for good; the mission records are kept.',
    ...ON_BLUEPRINT,
    responses: {
      200: {
        description: 'Deleted',
        schema: successEnvelope(
          z.object({
            blueprint_name: z.string(),
            blueprint_id: z.string(),
            deleted: z.boolean(),
            outcome: z.enum(['deleted', 'hidden']),
            mission_count: z.number().int().min(0),
          }),
        ),
      },
      403: err('No manage access'),
      409: err('Built-in default, or blueprint_id mismatch'),
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b } = await open(ctx, c.params.blueprint_name, 'manage', c.query.blueprint_id);
      const r = await remove(ctx, b);
      return {
        success: true,
        data: {
          blueprint_name: c.params.blueprint_name,
          blueprint_id: b.kind === 'custom' ? b.row.blueprint_id : '',
          deleted: r.outcome === 'deleted',
          outcome: r.outcome,
          mission_count: r.missions,
        },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/blueprints/:blueprint_name/files/:file_path',
    operationId: 'getBlueprintFile',
    summary:
      'One working-copy file as bytes (file_path URL-encoded, "/" as %2F); paths outside the blueprint are refused',
    tags,
    access: authed,
    params: NameParams.extend({ file_path: RelativeFilePath }),
    query: IdQuery.extend({
      mission_id: z
        .string()
        .max(200)
        .optional()
        .describe(
          'A mission (project id) that references this blueprint: its file stays readable after the blueprint was hidden by a delete',
        ),
    }),
    responses: {
      200: { description: 'The file (application/octet-stream)' },
      400: err('file_path leaves the blueprint (absolute, "..", backslash)'),
      409: err('blueprint_id mismatch'),
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b } = await open(ctx, c.params.blueprint_name, 'view', c.query.blueprint_id, c.query.mission_id);
      const bytes = await fileBytes(b, c.params.file_path);
      c.koa.type = 'application/octet-stream';
      c.koa.set('X-Content-Type-Options', 'nosniff');
      c.koa.body = bytes;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/blueprints/:blueprint_name/history',
    operationId: 'getBlueprintHistory',
    summary: "The blueprint's commit history, newest first (built-in defaults have none)",
    tags,
    access: authed,
    params: NameParams,
    query: IdQuery.extend({ limit: z.coerce.number().int().min(1).max(500).default(100) }),
    responses: {
      200: { description: 'Commits', schema: successEnvelope(HistoryView) },
      409: err('blueprint_id mismatch'),
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b } = await open(ctx, c.params.blueprint_name, 'view', c.query.blueprint_id);
      return {
        success: true,
        data: {
          blueprint_name: b.manifest.name,
          blueprint_id: b.kind === 'custom' ? b.row.blueprint_id : b.def.blueprint_id,
          commits: await historyOf(b, c.query.limit),
        },
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/:blueprint_name/rename',
    operationId: 'renameBlueprint',
    summary:
      'Rename a blueprint; needs manage access and manage_git. Local: at once (200). Remote-backed: a pull request, applied after merge and sync (202)',
    description:
      'Refuses built-in defaults (409 DEFAULT_BLUEPRINT), taken names (409 BLUEPRINT_NAME_TAKEN), blueprints with in-flight missions (running or paused: 409 BLUEPRINT_HAS_ACTIVE_MISSIONS; finished, cancelled and closed missions do not block) and blueprints with an active work-in-progress session (open and not expired, see POST /api/blueprints/{blueprint_name}/wip-sessions: 409 BLUEPRINT_WIP_SESSION_ACTIVE with payload.wip_session_ids; commit or discard them first). A local blueprint is renamed at once (200); grants, history and versioning state are keyed by blueprint_id and follow. A remote-backed blueprint (imported by a managed source) is renamed in its repository: branch blueprint-rename/<blueprint_id> moves blueprints/<old> to blueprints/<new> (manifest name and the identity sidecar blueprint_export_manifest.yaml updated), a pull request is opened with the source credentials, and the answer is 202 with the pull request and the pending rename; workflow blueprint-rename/<blueprint_id> applies the rename after the merge once a source sync sees the new directory with the same blueprint_id (dropped after 30 days). A second rename while one is pending is 409 BLUEPRINT_RENAME_PENDING; a source without usable credentials 409 SOURCE_CREDENTIALS_MISSING; a push or pull request failure 503.',
    ...ON_BLUEPRINT,
    body: z.object({ new_name: BlueprintName }),
    responses: {
      200: {
        description: 'Renamed',
        schema: successEnvelope(
          z.object({
            blueprint_id: z.string(),
            old_name: z.string(),
            blueprint_name: z.string(),
            status: z.enum(['renamed', 'unchanged']),
            commit_id: z.string().nullable(),
          }),
        ),
      },
      202: {
        description: 'Remote-backed: pull request opened, rename pending',
        schema: successEnvelope(
          z.object({
            blueprint_id: z.string(),
            old_name: z.string(),
            blueprint_name: z.string().describe('The current (old) name until the rename applies'),
            status: z.literal('pending'),
            pull_request: PullRequestView,
            pending_rename: PendingRenameView,
          }),
        ),
      },
      403: err('No manage access or no manage_git'),
      409: err(
        'Built-in default, name taken, in-flight missions (BLUEPRINT_HAS_ACTIVE_MISSIONS), an active WIP session (BLUEPRINT_WIP_SESSION_ACTIVE), blueprint_id mismatch, rename already pending (BLUEPRINT_RENAME_PENDING), source credentials missing (SOURCE_CREDENTIALS_MISSING)',
      ),
      503: err('Remote-backed: pushing the branch or opening the pull request failed'),
    },
    handler: async (c) => {
      const { pending, data } = await renameBlueprint(
        c.deps,
        ctxOf(c),
        c.params.blueprint_name,
        c.body.new_name,
        c.query.blueprint_id,
      );
      if (pending) c.koa.status = 202;
      return { success: true, data };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/blueprints/:blueprint_name/access',
    operationId: 'getBlueprintAccess',
    summary: 'Owner and explicit role grants (blueprint:<name>) of a blueprint',
    ...ON_BLUEPRINT,
    responses: {
      200: { description: 'Access list', schema: successEnvelope(AccessView) },
      409: err('blueprint_id mismatch'),
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b } = await open(ctx, c.params.blueprint_name, 'view', c.query.blueprint_id);
      return { success: true, data: await accessList(ctx, b) };
    },
  }),
  accessChangeRoute('grant'),
  accessChangeRoute('revoke'),
  defineRoute({
    method: 'get',
    path: '/api/blueprints/:blueprint_name/export',
    operationId: 'exportBlueprint',
    summary: 'A ZIP of a custom blueprint working copy plus blueprint_export_manifest.yaml (manifest_version 2)',
    ...ON_BLUEPRINT,
    responses: {
      200: {
        description:
          'The archive (application/zip), streamed from the commit named in the X-Blueprint-Commit header (the working copy when the export began; later writes do not change it)',
      },
      409: err('Built-in default (cannot be exported), or blueprint_id mismatch'),
    },
    handler: async (c) => {
      const ctx = ctxOf(c);
      const { b } = await open(ctx, c.params.blueprint_name, 'view', c.query.blueprint_id);
      const out = await exportZip(ctx, b);
      c.koa.type = 'application/zip';
      c.koa.set('Content-Disposition', `attachment; filename="${out.filename}"`);
      c.koa.set('X-Blueprint-Commit', out.commit);
      c.koa.body = out.stream;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/blueprints/:blueprint_name/versioning/summary',
    operationId: 'getBlueprintVersioningSummary',
    summary: 'Versioning summary: mode, saved versions, production assignment, working copy, promotion history',
    description:
      'View access. A standard blueprint answers mode standard with empty lists; a built-in default also has working_copy null.',
    ...ON_BLUEPRINT,
    responses: {
      200: { description: 'Summary', schema: successEnvelope(VersioningSummary) },
      409: err('blueprint_id mismatch'),
      503: RESTORING_503,
    },
    handler: async (c) => {
      const { ctx, b } = await openVersioned(c, c.params.blueprint_name, 'view', c.query.blueprint_id);
      return { success: true, data: await versioningSummary(ctx, b) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/:blueprint_name/versioning/enable',
    operationId: 'enableBlueprintVersioning',
    summary: 'Turn on versioned mode (manage access; idempotent: changed false when already versioned)',
    description:
      'No request body fields. Records a commit "Enable versioned mode for <name>". Built-in defaults answer 409 DEFAULT_BLUEPRINT.',
    ...ON_BLUEPRINT,
    responses: {
      200: {
        description: 'Versioned',
        schema: successEnvelope(z.object({ changed: z.boolean(), summary: VersioningSummary })),
      },
      403: err('No manage access'),
      409: err('Built-in default (DEFAULT_BLUEPRINT), or blueprint_id mismatch'),
      503: RESTORING_503,
    },
    handler: async (c) => {
      const { ctx, b } = await openVersioned(c, c.params.blueprint_name, 'manage', c.query.blueprint_id);
      const r = await enable(ctx, b);
      return { success: true, data: { changed: r.changed, summary: await versioningSummary(ctx, b) } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/:blueprint_name/versioning/versions',
    operationId: 'saveBlueprintVersion',
    summary: 'Save the working copy as the next immutable version n (a commit tagged version/<n>); edit access',
    description:
      'Versions are numbered 1, 2, … per blueprint and stored in PostgreSQL too. A working copy identical to the latest saved version answers no_change true with that version and writes nothing.',
    ...ON_BLUEPRINT,
    body: z.object({
      label: z.string().max(200).optional().describe('Short name shown with the version'),
      note: z.string().max(4000).optional().describe('Free text kept with the version'),
    }),
    responses: {
      200: {
        description: 'Saved (or no_change)',
        schema: successEnvelope(z.object({ no_change: z.boolean(), version: VersionView })),
      },
      403: err('No edit access'),
      409: err('Not versioned (BLUEPRINT_NOT_VERSIONED), built-in default, or blueprint_id mismatch'),
      503: RESTORING_503,
    },
    handler: async (c) => {
      const { ctx, b } = await openVersioned(c, c.params.blueprint_name, 'edit', c.query.blueprint_id);
      return { success: true, data: await saveVersion(ctx, b, c.body) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/:blueprint_name/versioning/promote',
    operationId: 'promoteBlueprintVersion',
    summary: 'Make a saved version the one production assignment (manage access; kept in promotion_history)',
    description:
      'Promoting the version that is already production answers no_change true and records nothing. Otherwise a commit "Promote version n of <name> to production" is recorded.',
    ...ON_BLUEPRINT,
    body: VersionNumberBody,
    responses: {
      200: {
        description: 'Promoted',
        schema: successEnvelope(
          z.object({
            no_change: z.boolean(),
            previous_version_number: z.number().int().nullable(),
            version: VersionView,
          }),
        ),
      },
      403: err('No manage access'),
      404: err('No such blueprint, or no saved version with that number'),
      409: err('Not versioned (BLUEPRINT_NOT_VERSIONED), built-in default, or blueprint_id mismatch'),
      503: RESTORING_503,
    },
    handler: async (c) => {
      const { ctx, b } = await openVersioned(c, c.params.blueprint_name, 'manage', c.query.blueprint_id);
      return { success: true, data: await promote(ctx, b, c.body.version_number) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/blueprints/:blueprint_name/versioning/restore',
    operationId: 'restoreBlueprintVersion',
    summary: "Copy a saved version's files into the working copy as a new commit (edit access)",
    description:
      'Always one commit "Restore version n of <name> into the working copy" (changed_files false when the content was already identical); the manifest keeps the current name. Saved versions and production are unchanged.',
    ...ON_BLUEPRINT,
    body: VersionNumberBody,
    responses: {
      200: {
        description: 'Restored',
        schema: successEnvelope(
          z.object({
            restored_version_number: z.number().int(),
            commit_sha: z.string(),
            changed_files: z.boolean(),
            working_copy_fingerprint: z.string(),
          }),
        ),
      },
      403: err('No edit access'),
      404: err('No such blueprint, or no saved version with that number'),
      409: err('Not versioned (BLUEPRINT_NOT_VERSIONED), built-in default, or blueprint_id mismatch'),
      503: RESTORING_503,
    },
    handler: async (c) => {
      const { ctx, b } = await openVersioned(c, c.params.blueprint_name, 'edit', c.query.blueprint_id);
      return { success: true, data: await restore(ctx, b, c.body.version_number) };
    },
  }),
];
