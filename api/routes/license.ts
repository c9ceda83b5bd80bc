import { z } from 'zod';
import { activateLicense, deactivateLicense, licenseCheck, licenseStatus } from '../../shared/license/license.js';
import { defineRoute, errorResponse, successEnvelope } from '../http/route.js';

const tags = ['license'];
const access = { kind: 'authenticated', permission: 'access_config_panel' } as const;
const Problem = z.enum(['expired', 'not_yet_valid', 'seat_limit_exceeded', 'license_invalid']);
const Details = z.object({
  license_id: z.string(),
  licensee_id: z.string(),
  licensee: z.string().nullable(),
  edition: z.string().nullable(),
  features: z.array(z.string()),
  seats: z.number().int().nullable().describe('Null: unlimited'),
  issued_at: z.string(),
  not_before: z.string().nullable(),
  expires_at: z.string().nullable().describe('Null: perpetual'),
});
const EnforcementDisabledReason = z
  .enum(['setting', 'no_public_key'])
  .nullable()
  .describe('`setting`: PLATFORM_LICENSE_ENFORCEMENT_DISABLED; `no_public_key`: PLATFORM_LICENSE_PUBLIC_KEY unset');

const LICENSE_DOC =
  'A license is a JWT signed with EdDSA (Ed25519) or ES256, verified offline with PLATFORM_LICENSE_PUBLIC_KEY; `aud` must include `data-agent-platform`, `sub`, `jti` and `iat` are required, `exp`, `nbf`, `seats`, `licensee`, `edition`, `features` optional. Seats are the people (persons in `users`) of the deployment.';

export const licenseRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/license/status',
    operationId: 'getLicenseStatus',
    summary: 'Whether a license is activated, its details, container-service mode and whether enforcement is disabled',
    description: LICENSE_DOC,
    tags,
    access,
    responses: {
      200: {
        description: 'Status',
        schema: successEnvelope(
          z.object({
            activated: z.boolean(),
            spcs_mode: z.boolean().describe('Container-service mode (PLATFORM_CONTAINER_SERVICE_MODE)'),
            enforcement_disabled: z.boolean(),
            enforcement_disabled_reason: EnforcementDisabledReason,
            public_key_configured: z.boolean(),
            valid: z.boolean().nullable().describe('Null when no license is activated'),
            problems: z.array(Problem),
            license: Details.nullable(),
            activated_at: z.string().nullable(),
            activated_by: z.string().nullable(),
            seats_used: z.number().int(),
          }),
        ),
      },
    },
    handler: async ({ em, deps }) => ({ success: true, data: await licenseStatus(em, deps.config) }),
  }),
  defineRoute({
    method: 'get',
    path: '/api/license/check',
    operationId: 'checkLicense',
    summary: 'Whether the deployment is within its license now (expiry and seats); `ok` false names the reason',
    description: `${LICENSE_DOC} Reasons: \`not_activated\`, \`expired\`, \`not_yet_valid\`, \`license_invalid\` (no longer verifies, e.g. the key changed), \`seat_limit_exceeded\` (more people than seats; exactly at the limit is ok). With enforcement disabled \`ok\` is true and \`problems\` still lists what was found.`,
    tags,
    access,
    responses: {
      200: {
        description: 'Check',
        schema: successEnvelope(
          z.object({
            ok: z.boolean(),
            reason: z.string().nullable(),
            problems: z.array(z.string()),
            message: z.string().nullable(),
            enforcement_disabled: z.boolean(),
            enforcement_disabled_reason: EnforcementDisabledReason,
            seats: z.number().int().nullable(),
            seats_used: z.number().int(),
            seats_remaining: z.number().int().nullable(),
            expires_at: z.string().nullable(),
            checked_at: z.string(),
          }),
        ),
      },
    },
    handler: async ({ em, deps }) => ({ success: true, data: await licenseCheck(em, deps.config) }),
  }),
  defineRoute({
    method: 'post',
    path: '/api/license/activate',
    operationId: 'activateLicense',
    summary: 'Verify a license offline and activate it (replacing any other)',
    description: `${LICENSE_DOC} Refusals write nothing: 400 \`payload.reason\` \`signature_invalid\` (altered or signed with another key), \`algorithm_not_allowed\`, \`malformed\`, \`claims_invalid\`, \`audience_mismatch\`, \`expired\`, \`not_yet_valid\`; 409 \`LICENSE_SEAT_LIMIT_EXCEEDED\` when the deployment already has more people than the license's seats; 501 when no public key is configured.`,
    tags,
    access,
    body: z
      .object({
        license: z
          .string()
          .min(1)
          .max(16_384)
          .regex(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'a compact JWS (three base64url parts)')
          .describe('The license token'),
      })
      .strict(),
    bodyKind: 'config',
    responses: {
      200: {
        description: 'Activated',
        schema: successEnvelope(z.object({ activated: z.literal(true), replaced: z.boolean(), license: Details })),
      },
      409: errorResponse('More people than the license has seats'),
      501: errorResponse('Licensing is not configured (no public key)'),
    },
    handler: async ({ em, deps, body, principal }) => {
      const result = await activateLicense(em, deps.config, body.license, principal.id);
      return { success: true, data: { activated: true, ...result } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/license/deactivate',
    operationId: 'deactivateLicense',
    summary: 'Remove the activated license (idempotent; `deactivated` false when none was active)',
    tags,
    access,
    responses: {
      200: { description: 'Deactivated', schema: successEnvelope(z.object({ deactivated: z.boolean() })) },
    },
    handler: async ({ em }) => ({ success: true, data: await deactivateLicense(em) }),
  }),
];
