import { z } from 'zod';
import {
  brokenRule,
  HttpUrl,
  MASK,
  PROVIDER_BODIES,
  PROVIDER_KINDS,
  PROVIDER_URL_FIELDS,
  SECRET_FIELDS,
  SubProvider,
  withDefaults,
  type ProviderKind,
} from '../../shared/llm/provider-kinds.js';
import {
  deleteProvider,
  findProvider,
  listProviders,
  openFields,
  readLlmSettings,
  writeLlmSettings,
  writeProvider,
} from '../../shared/llm/provider-store.js';
import { BadRequestError, ConflictError, NotFoundError } from '../../shared/errors.js';
import { savedEndpointRefusalDoc } from '../../shared/http/trust.js';
import { secretBox } from '../../shared/secrets/secret-box.js';
import { defineRoute, queryBoolean, successEnvelope, type AnyRoute, type RouteContext } from '../http/route.js';
import { providerIamStatus, SECRET_SETTING_PATHS, setSecretField } from '../../shared/llm/secret-field.js';
import { labelOf, saveProvider, testFields, type LlmOperationResult } from '../../shared/llm/provider-service.js';
import { activeSummary, providerView } from '../../shared/llm/provider-views.js';
import { SettingsCodes } from '../../shared/settings/error-codes.js';

const tags = ['config'];
const panel = { kind: 'authenticated', permission: 'access_config_panel' } as const;
const OWN_SHAPE =
  'Other named resources: LlmOperationResponse (`success`, `message`, optional `embedding_adoption`, optional `warning_message`)';

export const LlmOperationResponse = z
  .object({
    success: z.boolean(),
    message: z.string(),
    embedding_adoption: z
      .object({
        adopted: z.boolean(),
        provider_kind: z.string(),
        sub_provider: z.string().nullable(),
        model_name: z.string(),
      })
      .optional()
      .describe('Set when this provider became the embedding identity'),
    warning_message: z.string().optional(),
  })
  .meta({ id: 'LlmOperationResponse' });
const operation = {
  200: { description: 'Done', schema: LlmOperationResponse },
  404: { description: 'No configuration for that provider is saved (`not_found`)' },
};
/** Save and test routes: the spec has a failed connection test (and a duplicate create) answer in the body. */
const tested = {
  200: {
    description:
      'Outcome: `success` false names the failed connection test (prior credential restored) or, on create, an existing configuration; nothing is left half-written',
    schema: LlmOperationResponse,
  },
  400: { description: 'A provider rule is broken (`bad_request`, `payload.rule`); nothing written' },
};
const SUCCESS_FALSE =
  'Configuration, secrets and providers, provider-route rules 1 and 2: a duplicate create and a failed connection test answer `success` false with the message';

const Kind = z.enum(PROVIDER_KINDS);
const ProviderParams = z.object({ provider: Kind });
const SubOnly = z.object({ sub_provider: SubProvider.optional().describe('Required for the `other` kind') }).strict();

const URL_FIELDS = PROVIDER_URL_FIELDS.map((f) => `\`${f}\``).join(', ');

type Ctx = RouteContext<unknown, unknown, unknown>;
const svc = (c: Ctx) => ({ em: c.em, config: c.deps.config, principal: c.principal, log: c.log });

/** `other` rows are per vendor: routes acting on one name it in `sub_provider` (400 without it). */
function subOf(kind: ProviderKind, sub: string | undefined): { sub: string } {
  if (kind !== 'other') return { sub: '' };
  if (!sub)
    throw new BadRequestError('sub_provider names which `other` provider is meant.', {
      fields: [{ field: 'body.sub_provider', message: 'required for the other kind' }],
    });
  return { sub };
}

const noConfiguration = (label: string, hint = '') =>
  new NotFoundError(`No configuration for the provider ${label} exists${hint}.`, { reason: 'provider_not_saved' });

/** Create, update and delete, one route each per kind, so each kind publishes its own strict body. */
/** The delete body: the provider's base fields, all optional, plus `sub_provider` for an `other` vendor. */
const deleteBodyOf = (kind: ProviderKind) =>
  z
    .object({
      ...Object.fromEntries(
        Object.entries(PROVIDER_BODIES[kind].shape).map(([k, v]) => [k, (v as z.ZodType).optional()]),
      ),
      sub_provider: SubProvider.optional(),
    })
    .strict();

// Create and update differ only in the duplicate check (rule 1) and in what omitted fields mean.
const saveRoute = (kind: ProviderKind, method: 'post' | 'put', mode: 'create' | 'update', summary: string) =>
  defineRoute({
    method,
    path: `/api/config/llm-providers/${kind}`,
    operationId: `${mode}LlmProvider_${kind}`,
    summary,
    tags,
    access: panel,
    body: PROVIDER_BODIES[kind],
    bodyKind: 'config',
    ownShape: OWN_SHAPE,
    successFalseAt2xx: SUCCESS_FALSE,
    responses: {
      ...tested,
      400: {
        description: `A provider rule is broken (\`bad_request\`, \`payload.rule\`), an invalid field; or ${savedEndpointRefusalDoc(`an address field (${URL_FIELDS})`)}`,
      },
    },
    handler: async (c) => saveProvider(svc(c), kind, c.body as Record<string, unknown>, mode),
  });

const deleteRoute = (kind: ProviderKind) =>
  defineRoute({
    method: 'delete',
    path: `/api/config/llm-providers/${kind}`,
    operationId: `deleteLlmProvider_${kind}`,
    summary: `Delete the ${kind} provider (body: base fields plus sub_provider for an \`other\` vendor)`,
    tags,
    access: panel,
    body: deleteBodyOf(kind),
    bodyKind: 'config',
    ownShape: OWN_SHAPE,
    responses: operation,
    handler: async (c): Promise<LlmOperationResult> => {
      const s = subOf(kind, (c.body as { sub_provider?: string }).sub_provider);
      const gone = await deleteProvider(c.em, c.principal.tenant, kind, s.sub);
      if (!gone) throw noConfiguration(labelOf(kind, s.sub));
      return { success: true, message: `Deleted the ${labelOf(kind, s.sub)} provider.` };
    },
  });

function kindRoutes(kind: ProviderKind): AnyRoute[] {
  return [
    saveRoute(
      kind,
      'post',
      'create',
      `Save the ${kind} provider (duplicate check first; rollback guard with test_connection)`,
    ),
    saveRoute(
      kind,
      'put',
      'update',
      `Update the ${kind} provider; omitted fields (and masked secrets sent back) keep their stored values`,
    ),
    deleteRoute(kind),
  ];
}

const TestBody = z
  .object({
    sub_provider: SubProvider.optional(),
    base_url: HttpUrl.optional(),
    api_key: z.string().min(1).max(8000).optional(),
    model_name: z.string().min(1).max(200).optional(),
    api_version: z
      .string()
      .regex(/^\d{4}-\d{2}-\d{2}(-preview)?$/)
      .optional()
      .describe('Azure-type only; default 2025-04-01-preview'),
    auth_mode: z.enum(['api_key', 'iam_role', 'pat', 'oauth']).optional(),
    endpoint_mode: z.enum(['default', 'custom']).optional(),
    bedrock_chat_route_mode: z.enum(['invoke', 'converse']).optional(),
    aws_bearer_token: z.string().min(1).max(8000).optional(),
    aws_region: z
      .string()
      .regex(/^[a-z]{2}(-[a-z]+)+-\d{1,2}$/)
      .optional(),
    custom_endpoint_url: HttpUrl.optional(),
  })
  .describe('Overrides on top of the saved configuration (secrets sent as the mask keep the stored value)');

/**
 * The secret fields `set-value` accepts: a provider credential `llm_providers.<kind>[.<vendor>].<secret>`,
 * or a secret setting's path.
 */
const SECRET_PATH = new RegExp(
  `^(?:llm_providers\\.(?:${PROVIDER_KINDS.map(
    (k) => `${k}${k === 'other' ? '\\.[a-z0-9][a-z0-9_-]{0,63}' : ''}\\.(?:${SECRET_FIELDS[k].join('|')})`,
  ).join('|')})|${SECRET_SETTING_PATHS.map((p) => p.replace(/\./g, '\\.')).join('|')})$`,
);

export const llmProviderRoutes: AnyRoute[] = [
  ...PROVIDER_KINDS.flatMap(kindRoutes),
  defineRoute({
    method: 'put',
    path: '/api/config/llm-providers/:provider/admission',
    operationId: 'setLlmProviderAdmission',
    summary: 'Admit (`auto`) or deny (`deny`) a saved provider; a denied provider is never called',
    tags,
    access: panel,
    params: ProviderParams,
    body: z.object({ admission: z.enum(['deny', 'auto']), sub_provider: SubProvider.optional() }).strict(),
    bodyKind: 'config',
    ownShape: OWN_SHAPE,
    responses: operation,
    handler: async (c): Promise<LlmOperationResult> => {
      const kind = c.params.provider;
      const s = subOf(kind, c.body.sub_provider);
      const p = await findProvider(c.em, c.principal.tenant, kind, s.sub);
      if (!p) throw noConfiguration(labelOf(kind, s.sub));
      await writeProvider(c.em, { ...p, admission: c.body.admission }, c.principal.id);
      return { success: true, message: `Admission of ${labelOf(kind, s.sub)} is ${c.body.admission}.` };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/config/llm-providers/:llm_type/activate',
    operationId: 'activateLlmProvider',
    summary: 'Make a saved provider the active chat provider; saved model assignments are left as they are',
    tags,
    access: panel,
    params: z.object({ llm_type: Kind }),
    body: SubOnly.extend({ force_activation: z.boolean().optional() }).strict().meta({ id: 'LLMActivateRequest' }),
    bodyKind: 'config',
    ownShape: OWN_SHAPE,
    responses: {
      ...operation,
      409: { description: '`payload.code` provider_not_configured or provider_denied; nothing changed' },
    },
    handler: async (c): Promise<LlmOperationResult> => {
      const kind = c.params.llm_type;
      const s = subOf(kind, c.body.sub_provider);
      const label = labelOf(kind, s.sub);
      const p = await findProvider(c.em, c.principal.tenant, kind, s.sub);
      if (!p) throw noConfiguration(label, '; save it first');
      if (!p.configured)
        throw new ConflictError(
          `The provider ${label} is not marked configured (POST /api/config/llm-providers/mark-configured).`,
          { code: SettingsCodes.provider_not_configured },
        );
      if (p.admission === 'deny')
        throw new ConflictError(`The provider ${label} is denied (admission deny); admit it before activating.`, {
          code: SettingsCodes.provider_denied,
        });
      await writeLlmSettings(c.em, c.principal.tenant, { activeKind: kind, activeSubProvider: s.sub });
      return { success: true, message: `${label} is now the active chat provider.` };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/llm-providers/info',
    operationId: 'getLlmProvidersInfo',
    summary: 'Saved providers (secrets masked) and a summary: active provider and its source, embeddings, assignments',
    tags,
    access: panel,
    responses: {
      200: {
        description: 'Overview grid plus summary',
        schema: successEnvelope(
          z.object({
            providers: z.array(z.record(z.string(), z.unknown())),
            summary: z.object({
              active: z.object({
                source: z.enum(['saved', 'env', 'none']),
                provider_kind: z.string().nullable(),
                sub_provider: z.string().nullable(),
                model: z.string().nullable(),
              }),
              configured_count: z.number().int(),
              embeddings: z.record(z.string(), z.unknown()).nullable(),
              assignments: z.record(z.string(), z.record(z.string(), z.string())),
            }),
          }),
        ),
      },
    },
    handler: async (c) => {
      const [providers, s] = await Promise.all([
        listProviders(c.em, c.principal.tenant),
        readLlmSettings(c.em, c.principal.tenant),
      ]);
      return {
        success: true,
        data: {
          providers: providers.map((p) => providerView(p, s)),
          summary: {
            active: activeSummary(c.deps.config, providers, s),
            configured_count: providers.filter((p) => p.configured).length,
            embeddings: s.embeddings,
            assignments: s.assignments,
          },
        },
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/config/llm-providers/mark-configured',
    operationId: 'markLlmProviderConfigured',
    summary: 'Mark a secret-only provider configured once its secret is set (set-value)',
    tags,
    access: panel,
    body: z.object({ provider: Kind, sub_provider: SubProvider.optional() }).strict(),
    bodyKind: 'config',
    ownShape: OWN_SHAPE,
    responses: { ...operation, 400: { description: 'A provider rule is broken (`bad_request`, `payload.rule`)' } },
    handler: async (c): Promise<LlmOperationResult> => {
      const kind = c.body.provider;
      const s = subOf(kind, c.body.sub_provider);
      const label = labelOf(kind, s.sub);
      const p = await findProvider(c.em, c.principal.tenant, kind, s.sub);
      if (!p)
        throw noConfiguration(
          label,
          `; set its secret first (POST /api/config/secret-fields/llm_providers.${kind}${s.sub ? `.${s.sub}` : ''}.${SECRET_FIELDS[kind][0]}/set-value)`,
        );
      const rule = brokenRule(kind, withDefaults(kind, openFields(p, secretBox(c.deps.config))));
      if (rule) throw new BadRequestError(`Not marked configured: ${rule}.`, { reason: 'provider_rule', rule });
      await writeProvider(c.em, { ...p, configured: true }, c.principal.id);
      return { success: true, message: `${label} is configured.` };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/config/:provider/test-connection',
    operationId: 'testLlmProviderConnection',
    summary: 'Provider-specific connection test of the saved configuration with optional overrides',
    tags,
    access: panel,
    params: ProviderParams,
    body: TestBody,
    ownShape: OWN_SHAPE,
    successFalseAt2xx:
      'Configuration, secrets and providers: the provider-specific connection test; a failed test is its answer (LlmOperationResponse `success` false, the classified message), not a refusal',
    responses: tested,
    handler: async (c): Promise<LlmOperationResult> => {
      const kind = c.params.provider;
      const s = subOf(kind, c.body.sub_provider);
      const stored = await findProvider(c.em, c.principal.tenant, kind, s.sub);
      const fields = stored ? openFields(stored, secretBox(c.deps.config)) : {};
      for (const [k, v] of Object.entries(c.body))
        if (v !== undefined && k !== 'sub_provider' && v !== MASK) fields[k] = v;
      const merged = withDefaults(kind, fields);
      const rule = brokenRule(kind, merged);
      if (rule) throw new BadRequestError(`Cannot test: ${rule}.`, { reason: 'provider_rule', rule });
      const test = await testFields(
        { em: c.em, config: c.deps.config, tenant: c.principal.tenant },
        kind,
        s.sub,
        merged,
      );
      return { success: test.ok, message: test.ok ? test.message : `Connection test failed: ${test.message}` };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/config/:provider/iam-status',
    operationId: 'getLlmProviderIamStatus',
    summary:
      'Whether AWS credentials for the Bedrock-type iam_role mode are available; refresh=true verifies them with STS GetCallerIdentity',
    tags,
    access: panel,
    params: ProviderParams,
    query: z.object({
      region: z
        .string()
        .regex(/^[a-z]{2}(-[a-z]+)+-\d{1,2}$/)
        .optional()
        .describe('Default us-east-1'),
      refresh: queryBoolean(false).describe('Re-check instead of answering the cached reading'),
    }),
    responses: {
      200: {
        description: 'IAM status',
        schema: successEnvelope(
          z.object({
            provider: z.string(),
            region: z.string(),
            applicable: z.boolean(),
            credentials_available: z.boolean(),
            source: z.enum(['environment']).nullable(),
            access_key_id: z.string().nullable().describe('Masked but for the last four characters'),
            session_token: z.boolean(),
            verified: z.boolean().nullable().describe('null until verified (refresh=true)'),
            identity: z.object({ account: z.string(), arn: z.string() }).nullable(),
            message: z.string(),
            checked_at: z.string().nullable(),
            cached: z.boolean(),
          }),
        ),
      },
    },
    handler: async (c) => ({
      success: true,
      data: await providerIamStatus(c.deps.config, c.params.provider, c.query.region ?? 'us-east-1', c.query.refresh),
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/config/secret-fields/:field_path/set-value',
    operationId: 'setSecretFieldValue',
    summary:
      'Set one secret field: a provider credential (`llm_providers.<kind>[.<vendor>].<secret>`, a configured provider tested first) or a secret setting',
    description: `Secret settings: ${SECRET_SETTING_PATHS.map((p) => `\`${p}\``).join(', ')}. A setting is saved through the configuration apply (sealed at rest, masked on read, recorded); a process-level one (environment only) answers 400 with \`payload.refused\` reason \`process_level\` and nothing is saved; a path of neither kind is 400.`,
    tags,
    access: panel,
    params: z.object({ field_path: z.string().regex(SECRET_PATH) }),
    body: z.object({ value: z.string().min(1).max(8000).regex(/^\S+$/) }).strict(),
    bodyKind: 'config',
    ownShape: 'Configuration, secrets and providers: SetSecretValueResponse (`success`, `message`, `field_path`)',
    successFalseAt2xx:
      'Configuration, secrets and providers: set-value runs the save-time connection test first (provider-route rule 2); a failed test answers `success` false, the secret unchanged',
    responses: {
      200: {
        description: 'Outcome',
        schema: z
          .object({ success: z.boolean(), message: z.string(), field_path: z.string() })
          .meta({ id: 'SetSecretValueResponse' }),
      },
      400: { description: 'Not a secret field, or a process-level setting (`payload.refused`); nothing saved' },
      403: { description: 'The setting needs a further permission (`permission_required`)' },
    },
    handler: async (c) => setSecretField(c.deps, c.em, c.principal, c.params.field_path, c.body.value),
  }),
];
