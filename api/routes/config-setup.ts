import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { BadRequestError, NotFoundError } from '../../shared/errors.js';
import { applySettings } from '../../shared/settings/save-settings.js';
import { render, type ApplyMode, type ApplyOutcome } from '../../shared/settings/apply.js';
import { isSettingPath, pathsInSection, SETTING_PATHS, settingDef } from '../../shared/settings/definitions.js';
import { savedEndpointRefusalDoc } from '../../shared/http/trust.js';
import type { AppDeps } from '../../shared/app-deps.js';
import { defineRoute, queryBoolean, successEnvelope } from '../http/route.js';
import type { Principal } from '../../shared/auth/principal.js';
import type { EntityManager } from '@mikro-orm/postgresql';

const Source = z.enum(['saved', 'env', 'default']);
const SingleValueSourceResponse = z
  .object({
    path: z.string(),
    effective_value: z.unknown().describe('Secrets read as "********"'),
    source: Source,
    all_sources: z
      .array(z.object({ source: Source, value: z.unknown() }))
      .describe('Every layer that has a value, effective first; the default layer is always listed'),
  })
  .meta({ id: 'SingleValueSourceResponse' });
const ConfigSourcesResponse = z
  .object({ sources: z.array(SingleValueSourceResponse), count: z.number().int() })
  .meta({ id: 'ConfigSourcesResponse' });

const OutputFormat = z.enum(['json', 'yaml']);
const ConfigApplyResponse = z
  .object({
    success: z.literal(true).describe('Always true: a refused apply answers the error envelope (4xx) instead'),
    result: z.object({
      added: z.number().int(),
      updated: z.number().int(),
      deleted: z.number().int(),
      skipped: z.number().int(),
      changes: z.array(
        z.object({
          path: z.string(),
          old_value: z.unknown(),
          new_value: z.unknown(),
          action: z.enum(['added', 'updated', 'deleted']),
        }),
      ),
      errors: z.array(z.string()).describe('Empty: errors refuse the whole apply (4xx, `payload.refused`)'),
    }),
    dry_run: z.boolean(),
    output_format: OutputFormat,
    content: z
      .string()
      .describe('The saved configuration after the apply (as it would be, for a dry run), secrets masked'),
  })
  .meta({ id: 'ConfigApplyResponse' });

const ENDPOINT_PATHS = SETTING_PATHS.filter((p) => settingDef(p).endpoint)
  .map((p) => `\`${p}\``)
  .join(', ');
const APPLY_SHAPE = 'Other named resources: Config apply response (`success` and `result`)';
const MAX_CONTENT = 512 * 1024;
const APPLY_DESCRIPTION =
  'Content is YAML or JSON: nested mappings or dotted keys down to setting paths (see GET /api/config/setup/sources). ' +
  '`null` unsets a saved value; a secret sent back as "********" keeps the saved one. `schema_version`, `name` and ' +
  '`description` at the root are ignored; `connection`/`connections` are refused (use /api/connections). Any error ' +
  'refuses the whole apply with the error envelope and writes nothing (not even the valid paths beside it): 422 ' +
  '`unprocessable_entity` when a path is no setting (an undeclared field), 400 `bad_request` for a process-level ' +
  '(read-only) path, a wrong type, a root that is not a mapping or text that is not YAML/JSON, 403 `forbidden` for a ' +
  'change that needs a permission the caller lacks (such as `mesh.*` without `manage_secrets`); `payload.refused` ' +
  'lists each refused entry (`path`, `reason`, `message`) and `payload.errors` the messages. ' +
  `A new value of an endpoint setting (${ENDPOINT_PATHS}) whose host the egress policy never allows answers 400 and writes nothing (a dry run too). One ` +
  'transaction; every apply that changes something is recorded with who and when.';

const applyResponses = {
  200: { description: 'Applied, or the dry-run result', schema: ConfigApplyResponse },
  400: {
    description: `Refused, nothing written (\`bad_request\`): \`payload.refused[].reason\` process_level, invalid_value, given_twice, not_a_mapping, unparseable, connections_not_configuration; an invalid body field (\`payload.fields\`); or ${savedEndpointRefusalDoc(
      'an endpoint setting (field: its path; the Git remote `enhancements.coding_agent.agent_cli.target_repo_url` answers `GIT_EGRESS_REFUSED`)',
    )}`,
  },
  403: {
    description:
      'A change needs a permission the caller lacks (`forbidden`, `payload.refused[].reason` permission_required); nothing written',
  },
  422: {
    description:
      'A path that is no setting (`unprocessable_entity`, `payload.refused[].reason` unknown_setting); nothing written',
  },
  503: { description: 'PostgreSQL or Temporal (sweep schedule update) unavailable; nothing written' },
};

async function runApply(
  deps: AppDeps,
  em: EntityManager,
  principal: Principal,
  mode: ApplyMode,
  content: string,
  dryRun: boolean,
  outputFormat: 'json' | 'yaml',
) {
  const outcome: ApplyOutcome = await applySettings(deps, em, principal, mode, content, dryRun);
  return {
    success: true,
    result: outcome.result,
    dry_run: dryRun,
    output_format: outputFormat,
    content: render(outcome.saved, outputFormat),
  };
}

export const configSetupRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/config/setup/sources',
    operationId: 'getConfigSources',
    summary: 'Where each effective setting comes from (saved, env, default); secrets masked',
    description:
      'With `path`: that setting (`SingleValueSourceResponse`; unknown path 404). With `section` (a dotted prefix such as `etl` or `enhancements.code_agent`): its settings. Without both: every setting (`ConfigSourcesResponse`). `path` wins over `section`.',
    tags: ['config'],
    access: { kind: 'authenticated', permission: 'access_config_panel' },
    query: z.object({ path: z.string().min(1).max(200).optional(), section: z.string().min(1).max(200).optional() }),
    responses: {
      200: {
        description: 'Provenance',
        schema: successEnvelope(z.union([SingleValueSourceResponse, ConfigSourcesResponse])),
      },
      404: { description: 'No such setting path, or no setting in that section' },
    },
    handler: async ({ deps, query }) => {
      // What any replica saved last, not this process's cache.
      await deps.settings.catchUp();
      if (query.path !== undefined) {
        if (!isSettingPath(query.path)) throw new NotFoundError(`No setting ${query.path}.`, { path: query.path });
        const [view] = await deps.settings.sources([query.path]);
        return { success: true, data: view };
      }
      const paths = query.section !== undefined ? pathsInSection(query.section) : SETTING_PATHS;
      if (paths.length === 0)
        throw new NotFoundError(`No setting in section ${query.section}.`, { section: query.section });
      const sources = await deps.settings.sources(paths);
      return { success: true, data: { sources, count: sources.length } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/config/setup/apply',
    operationId: 'applyConfig',
    summary: 'Replace the saved configuration with the given one (paths not named are unset)',
    description: APPLY_DESCRIPTION,
    tags: ['config'],
    access: { kind: 'authenticated', permission: 'access_config_panel' },
    body: z
      .object({
        content: z.string().max(MAX_CONTENT).describe('The configuration, YAML or JSON'),
        output_format: OutputFormat.default('json').describe('Format of `content` in the response'),
        dry_run: z.boolean().default(false).describe('Report the changes without writing anything'),
      })
      .strict(),
    bodyKind: 'config',
    ownShape: APPLY_SHAPE,
    responses: applyResponses,
    handler: ({ deps, em, principal, body }) =>
      runApply(deps, em, principal, 'full', body.content, body.dry_run, body.output_format),
  }),
  defineRoute({
    method: 'post',
    path: '/api/config/setup/apply-file',
    operationId: 'applyConfigFile',
    summary: 'Replace the saved configuration with an uploaded YAML or JSON file (multipart `file`)',
    description: `${APPLY_DESCRIPTION} Without a \`file\` part the answer is 400 (\`payload.fields\` names \`file\`).`,
    tags: ['config'],
    access: { kind: 'authenticated', permission: 'access_config_panel' },
    query: z.object({
      dry_run: queryBoolean(false),
      output_format: OutputFormat.default('json'),
    }),
    bodyKind: 'multipart',
    multipart: { maxFileBytes: MAX_CONTENT, maxFiles: 1, maxFields: 4, fileFields: ['file'] },
    body: z.object({}),
    ownShape: APPLY_SHAPE,
    responses: applyResponses,
    handler: async ({ deps, em, principal, query, files }) => {
      const file = files.find((f) => f.field === 'file');
      if (!file)
        throw new BadRequestError('No `file` part in the upload; nothing was saved.', {
          fields: [{ field: 'body.file', message: 'required' }],
        });
      const content = await readFile(file.path, 'utf8');
      return runApply(deps, em, principal, 'full', content, query.dry_run, query.output_format);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/config/setup/apply-partial',
    operationId: 'applyConfigPartial',
    summary: 'Change only the given setting paths; everything else stays as saved',
    description: APPLY_DESCRIPTION,
    tags: ['config'],
    access: { kind: 'authenticated', permission: 'access_config_panel' },
    body: z
      .object({
        content: z
          .string()
          .max(MAX_CONTENT)
          .describe('The settings to change, YAML or JSON; the root must be a mapping'),
        output_format: OutputFormat.default('json'),
        dry_run: z.boolean().default(false),
      })
      .strict(),
    bodyKind: 'config',
    ownShape: APPLY_SHAPE,
    responses: applyResponses,
    handler: ({ deps, em, principal, body }) =>
      runApply(deps, em, principal, 'partial', body.content, body.dry_run, body.output_format),
  }),
];
