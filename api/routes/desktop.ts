import { z } from 'zod';
import {
  activate,
  cancelSignIn,
  chooseLlm,
  completeSignIn,
  desktopStatus,
  markNoticeSeen,
  readCredit,
  signInStatus,
  signOut,
  startSignIn,
  switchCreditModel,
  updateManifest,
} from '../../shared/desktop/service.js';
import { createDiagnosticsPreview, sendDiagnostics } from '../../shared/desktop/diagnostics.js';
import { desktopSetup } from '../../shared/desktop/setup.js';
import { PlatformError } from '../../shared/errors.js';
import { defineRoute, queryBoolean, successEnvelope } from '../http/route.js';
import { CreditReadingSchema } from './credit-schema.js';
import { DesktopCodes } from '../../shared/desktop/error-codes.js';

/**
 * Desktop (laptop) mode, spec "Desktop mode" and "Desktop status". Every route answers 404
 * `desktop_mode_unavailable` unless `PLATFORM_DESKTOP_MODE` is on, except the two notice routes (409).
 * Paths the spec leaves unnamed (sign-in status, cancel and callback) are chosen here.
 */
const OFF = 'Desktop mode is not enabled in this deployment (`desktop_mode_unavailable`)';
const PROVISIONER_DOWN =
  'The provisioner is not configured or unavailable (`service_unavailable`, `payload.dependency` `desktop_provisioner`)';
const LOCKED =
  'A required version notice locks the app (`update_required`; `payload.status` `update_required`, `payload.app_version_policy`)';

const State = z.string().min(1).max(128);
const AppVersion = z
  .string()
  .regex(/^[0-9A-Za-z.+_-]{1,64}$/)
  .describe('The running app version (dotted numbers, optional `-<build>`)');

const Attempt = z.object({
  status: z.enum(['waiting', 'succeeded', 'failed']),
  failure_reason: z
    .string()
    .nullable()
    .describe('`cancelled`, `expired`, `denied`, `no_code` or `code_refused` when failed; else null'),
  created_at: z.string(),
  finished_at: z.string().nullable(),
  expires_at: z.string(),
});

const Llm = z.object({ returning: z.boolean(), plan_mode: z.string(), remaining_usd: z.number().nullable() });
const Trial = z
  .object({ ends_at: z.string().nullable().optional(), days_left: z.number().int().nullable().optional() })
  .nullable()
  .describe('Null unless the provisioner marks a trial');
const Activation = z.object({
  activation: z.object({ activated: z.boolean(), llm: Llm.nullable().describe('Null when not activated') }),
  trial: Trial,
});

const Notice = z
  .object({
    min_version: z.string().nullable(),
    recommended_version: z.string().nullable(),
    current_version: z.string(),
    message: z.string().nullable(),
    download_url: z.string().nullable(),
  })
  .describe('Versions in display form (a `-3` build suffix shows as `d3`)');

const Credit = CreditReadingSchema.extend({
  device_credential_refused: z
    .boolean()
    .describe('The provisioner refused the device credential less than 180 s ago (no call until then)'),
});

const Status = z.object({
  signed_in: z.boolean(),
  activated: z.boolean(),
  saved_credentials_unreadable: z.number().int().describe('Saved credentials this install cannot decrypt'),
  platform_ai_only: z.boolean(),
  platform_ai_only_notice: z.boolean().describe('Show the platform-AI-only notice (mode on, not yet seen)'),
  platform_ai_only_notice_seen: z.boolean(),
  update_required: Notice.nullable(),
  update_available: Notice.nullable(),
  trial: Trial,
  activation: Activation.shape.activation,
  credit: Credit.nullable().describe('The cached credit reading (no provisioner call); null when none'),
  app_version: z.string().nullable(),
  last_check_in_at: z.string().nullable(),
  llm_choice: z.enum(['platform', 'own_provider']).nullable(),
  provisioner_configured: z.boolean(),
});

const BaseResponse = z.object({ success: z.literal(true), message: z.string() });

const Manifest = z.object({
  version: z.string(),
  url: z.string(),
  signature: z.string().optional(),
  notes: z.string().optional(),
  pub_date: z.string().optional(),
});

const config = { kind: 'authenticated', permission: 'access_config_panel' } as const;
const anyone = { kind: 'authenticated', permission: null } as const;

const ACTIVATION_CONFLICTS = {
  activate:
    'Not signed in (`not_signed_in`), or the provisioner refused the device credential (`device_credential_refused`)',
  'check-in':
    'Not signed in (`not_signed_in`), not activated (`not_activated`), or the device credential was refused (`device_credential_refused`)',
};

function activationRoute(path: string, operationId: string, kind: 'activate' | 'check-in', summary: string) {
  return defineRoute({
    method: 'post',
    path,
    operationId,
    summary,
    tags: ['desktop'],
    access: config,
    body: z.object({ app_version: AppVersion.optional() }),
    responses: {
      200: { description: 'Activation', schema: successEnvelope(Activation) },
      404: { description: OFF },
      409: { description: ACTIVATION_CONFLICTS[kind] },
      503: { description: PROVISIONER_DOWN },
    },
    handler: async ({ deps, em, body }) => ({
      success: true,
      data: await activate(deps, em, kind, body.app_version),
    }),
  });
}

function noticeRoute(path: string, operationId: string, notice: 'platform_ai_only' | 'credentials', summary: string) {
  return defineRoute({
    method: 'post',
    path,
    operationId,
    summary,
    tags: ['desktop'],
    access: anyone,
    ownShape: 'Desktop mode: the notice routes return `BaseResponse` (`success`, `message`)',
    responses: {
      200: { description: 'Recorded', schema: BaseResponse },
      409: { description: `${OFF}; answered 409 here` },
    },
    handler: async ({ deps, em }) => {
      await markNoticeSeen(deps, em, notice);
      return { success: true, message: 'Notice marked as seen.' };
    },
  });
}

export const desktopRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/desktop/auth/login',
    operationId: 'desktopSignIn',
    summary: 'Start a desktop sign-in: the provisioner page to open and the attempt state',
    description:
      'The provisioner redirects the browser to `http://127.0.0.1:{port}/api/desktop/auth/callback`; only ports 47080 to 47083 are registered.',
    tags: ['desktop'],
    access: config,
    query: z.object({
      port: z
        .string()
        .regex(/^[0-9]{1,5}$/)
        .optional()
        .describe('Loopback callback port (47080 to 47083; default 47080)'),
    }),
    responses: {
      200: {
        description: 'Attempt started (waiting)',
        schema: successEnvelope(z.object({ authorize_url: z.string(), state: z.string(), redirect_uri: z.string() })),
      },
      400: {
        description:
          'Unregistered port (`bad_request`, `payload.reason` `sign_in_port_not_registered`, `payload.sign_in_ports`)',
      },
      404: { description: OFF },
      503: { description: PROVISIONER_DOWN },
    },
    handler: async ({ deps, em, query }) => ({
      success: true,
      data: await startSignIn(deps, em, query.port === undefined ? 47080 : Number(query.port)),
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/desktop/auth/status',
    operationId: 'desktopSignInStatus',
    summary: 'A sign-in attempt: waiting, then succeeded or failed',
    tags: ['desktop'],
    access: config,
    query: z.object({ state: State }),
    responses: {
      200: { description: 'The attempt', schema: successEnvelope(Attempt) },
      404: { description: `${OFF}; or no attempt has this state` },
    },
    handler: async ({ deps, em, query }) => ({ success: true, data: await signInStatus(deps, em, query.state) }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/desktop/auth/cancel',
    operationId: 'desktopSignInCancel',
    summary: 'Cancel a waiting sign-in attempt (failed, `cancelled`); a finished one is answered as it is',
    tags: ['desktop'],
    access: config,
    body: z.object({ state: State }),
    responses: {
      200: { description: 'The attempt', schema: successEnvelope(Attempt) },
      404: { description: `${OFF}; or no attempt has this state` },
    },
    handler: async ({ deps, em, body }) => ({ success: true, data: await cancelSignIn(deps, em, body.state) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/desktop/auth/callback',
    operationId: 'desktopSignInCallback',
    summary: "The provisioner's redirect back to the loopback port (the browser, no credential; bound by `state`)",
    tags: ['desktop'],
    access: { kind: 'public' },
    query: z.object({
      state: State,
      code: z.string().min(1).max(4096).optional(),
      error: z.string().max(512).optional(),
    }),
    responses: {
      200: { description: 'The attempt, succeeded or failed', schema: successEnvelope(Attempt) },
      404: { description: `${OFF}; or no attempt has this state` },
      409: { description: 'The attempt has already finished (`sign_in_attempt_finished`)' },
      503: {
        description: `The previous AI key cannot be removed (the attempt keeps waiting; retry), or: ${PROVISIONER_DOWN}`,
      },
    },
    handler: async ({ deps, em, query }) => ({ success: true, data: await completeSignIn(deps, em, query) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/desktop/status',
    operationId: 'desktopStatus',
    summary: 'Desktop status (spec, Desktop status)',
    tags: ['desktop'],
    access: anyone,
    responses: {
      200: { description: 'Status', schema: successEnvelope(Status) },
      404: { description: OFF },
    },
    handler: async ({ deps, em }) => ({ success: true, data: await desktopStatus(deps, em) }),
  }),
  activationRoute('/api/desktop/activate', 'desktopActivate', 'activate', 'Activate this laptop at the provisioner'),
  activationRoute(
    '/api/desktop/check-in',
    'desktopCheckIn',
    'check-in',
    'Check in: refresh the activation and the version policy (a lowered minimum unlocks here)',
  ),
  defineRoute({
    method: 'post',
    path: '/api/desktop/sign-out',
    operationId: 'desktopSignOut',
    summary: 'Sign out: the provisioner is told (best effort) and the saved credentials are removed',
    tags: ['desktop'],
    access: config,
    responses: {
      200: { description: 'Signed out', schema: successEnvelope(Activation) },
      404: { description: OFF },
    },
    handler: async ({ deps, em }) => ({ success: true, data: await signOut(deps, em) }),
  }),
  noticeRoute(
    '/api/desktop/platform-ai-only-notice/seen',
    'desktopPlatformAiOnlyNoticeSeen',
    'platform_ai_only',
    'Mark the platform-AI-only notice as seen',
  ),
  noticeRoute(
    '/api/desktop/credentials-notice/seen',
    'desktopCredentialsNoticeSeen',
    'credentials',
    'Acknowledge unreadable saved credentials (they are dropped; sign in again)',
  ),
  defineRoute({
    method: 'get',
    path: '/api/desktop/credit',
    operationId: 'desktopCredit',
    summary: 'The credit reading (cached up to about 3 minutes; `fresh` refreshes one older than about 15 s)',
    tags: ['desktop'],
    access: anyone,
    query: z.object({ fresh: queryBoolean(false) }),
    responses: {
      200: { description: 'Reading (`available` false when there is none)', schema: successEnvelope(Credit) },
      404: { description: OFF },
      426: { description: LOCKED },
      503: { description: `${PROVISIONER_DOWN}, and no cached reading` },
    },
    handler: async ({ deps, em, query }) => ({ success: true, data: await readCredit(deps, em, query.fresh) }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/desktop/llm-choice',
    operationId: 'desktopLlmChoice',
    summary: "Choose the platform AI or the laptop's own provider",
    tags: ['desktop'],
    access: config,
    body: z.object({ choice: z.enum(['platform', 'own_provider']) }),
    responses: {
      200: {
        description: 'Stored',
        schema: successEnvelope(z.object({ llm_choice: z.enum(['platform', 'own_provider']) })),
      },
      403: { description: 'Platform-AI-only mode (`platform_ai_only`)' },
      404: { description: OFF },
      426: { description: LOCKED },
    },
    handler: async ({ deps, em, body }) => ({ success: true, data: await chooseLlm(deps, em, body.choice) }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/desktop/credit/switch',
    operationId: 'desktopCreditSwitch',
    summary: "Switch to another model the plan offers (one of the reading's `alternatives`)",
    tags: ['desktop'],
    access: config,
    body: z.object({ model: z.string().min(1).max(200) }),
    responses: {
      200: { description: 'The reading with the chosen model', schema: successEnvelope(Credit) },
      400: { description: 'The plan does not offer this model (`payload.reason` `model_not_offered`)' },
      403: { description: 'Platform-AI-only mode (`platform_ai_only`)' },
      404: { description: OFF },
      409: { description: 'No credit reading yet (`no_credit_reading`)' },
      426: { description: LOCKED },
    },
    handler: async ({ deps, em, body }) => ({ success: true, data: await switchCreditModel(deps, em, body.model) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/desktop/update/:target/:arch/:current_version',
    operationId: 'desktopUpdateManifest',
    summary: "The update channel's manifest for this build (204 when there is no update)",
    tags: ['desktop'],
    access: anyone,
    params: z.object({
      target: z.string().regex(/^[a-z0-9_]{1,32}$/),
      arch: z.string().regex(/^[a-z0-9_]{1,32}$/),
      current_version: z.string().regex(/^[0-9A-Za-z.+_-]{1,64}$/),
    }),
    ownShape: "Desktop mode: the update route returns the channel's update manifest as the updater reads it",
    responses: {
      200: { description: 'Update manifest', schema: Manifest },
      204: { description: 'No update' },
      404: { description: `${OFF}; or no update channel for this target and architecture (\`update_unavailable\`)` },
      409: { description: 'Not activated (`not_activated`)' },
      503: { description: 'The update check failed (`service_unavailable`)' },
    },
    handler: async ({ deps, em, params, koa }) => {
      const manifest = await updateManifest(deps, em, params.target, params.arch, params.current_version);
      if (manifest === null) {
        koa.status = 204;
        return undefined;
      }
      return manifest;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/desktop/diagnostics/preview',
    operationId: 'desktopDiagnosticsPreview',
    summary: 'Collect the log files a diagnostics send would upload (newest bytes; sendable for 15 minutes)',
    tags: ['desktop'],
    access: config,
    responses: {
      200: {
        description: 'Preview',
        schema: successEnvelope(
          z.object({
            preview_id: z.string(),
            trigger: z.enum(['manual', 'automatic']),
            total_bytes: z.number().int(),
            files: z.array(z.object({ name: z.string(), bytes: z.number().int() })),
            excerpt: z.string().describe('The last 4000 characters'),
            created_at: z.string(),
            expires_at: z.string(),
          }),
        ),
      },
      404: { description: OFF },
    },
    handler: async ({ deps, em }) => ({ success: true, data: await createDiagnosticsPreview(deps, em, 'manual') }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/desktop/diagnostics/send',
    operationId: 'desktopDiagnosticsSend',
    summary:
      'Send a preview: chunks of 1,500,000 bytes (4,000,000 with gzip advertised), at most 4, halved on 413 down to 64,000',
    tags: ['desktop'],
    access: config,
    body: z.object({ preview_id: z.string().min(1).max(64) }),
    responses: {
      200: {
        description: 'Sent',
        schema: successEnvelope(
          z.object({
            preview_id: z.string(),
            upload_id: z.string(),
            gzip: z.boolean(),
            chunks_sent: z.number().int(),
            bytes_sent: z.number().int(),
            chunk_bytes: z.number().int().describe('The chunk size in use at the end (after any halving)'),
            truncated: z.boolean().describe('Older bytes beyond 4 chunks were not sent'),
          }),
        ),
      },
      404: { description: `${OFF}; or the preview is unknown, expired or already sent` },
      409: { description: 'Not activated (`not_activated`)' },
      503: { description: 'The provisioner refused or failed (the preview stays sendable)' },
    },
    handler: async ({ deps, em, body }) => ({
      success: true,
      data: await sendDiagnostics(deps, em, body.preview_id),
    }),
  }),
  ...(['install', 'remove'] as const).map((action) =>
    defineRoute({
      method: 'post',
      path: `/api/desktop/browser-tool/${action}`,
      operationId: action === 'install' ? 'desktopBrowserToolInstall' : 'desktopBrowserToolRemove',
      summary: `${action === 'install' ? 'Install' : 'Remove'} the browser tool (only where the deployment manages it)`,
      description:
        'This platform manages no browser-tool installation on the laptop, so in desktop mode the route answers 501 `not_available_here` (spec: 501 when not managed).',
      tags: ['desktop'],
      access: config,
      responses: {
        404: { description: OFF },
        501: { description: 'The browser tool is not managed by this deployment (`not_available_here`)' },
      },
      handler: async ({ deps }) => {
        await desktopSetup(deps);
        throw new PlatformError(
          'not_available_here',
          'The browser tool is not managed by this deployment: install or remove it outside the app.',
          { code: DesktopCodes.browser_tool_not_managed },
        );
      },
    }),
  ),
];
