/**
 * Trust levels of outbound endpoints: who chose a destination decides which egress policy guards it.
 *
 * - `operator`: set in the environment before the process starts (AUTH_JWKS_URL, AUTH_ISSUER and the
 *   endpoints its discovery document names, TICKET_TRACKER_URL, PLATFORM_LLM_BASE_URL,
 *   OTEL_EXPORTER_OTLP_ENDPOINT, AWS_ENDPOINT_URL_*; DATABASE_URL and TEMPORAL_ADDRESS connect
 *   directly). Trusted as configured: loopback and private addresses are allowed (the operator chose
 *   them); link-local and cloud-metadata addresses never. `loadConfig` checks each at start and stops
 *   the process naming the variable when it is malformed or never allowed.
 * - `admin`: saved through the API by an administrator (managed-source Git remotes, CRM and
 *   code-agent connections, language-model providers, tracker credentials, endpoint settings such as
 *   the ETL runner). The deployment's policy: private ranges and loopback only with
 *   PLATFORM_EGRESS_ALLOW_PRIVATE (CRM hosts: loopback also with CRM_ALLOW_INSECURE_LOOPBACK). A host
 *   the policy never allows is refused when saved (`checkSavedEndpoint`: GIT_EGRESS_REFUSED for a Git
 *   host, EGRESS_REFUSED otherwise); every request checks again (a name's DNS answer may change).
 * - `user`: a URL supplied with a request by a user or an agent. Private and loopback never, whatever
 *   the flags. No route fetches such a URL today; one that does takes `egressFor(config, 'user')`.
 *
 * In container-service mode every level reaches only the mesh egress list's destinations.
 */
import type { AppConfig } from '../config.js';
import { BadRequestError, type ErrorCode } from '../errors.js';
import {
  ALLOW_PRIVATE_FLAG,
  DEFAULT_DESTINATIONS,
  EgressCodes,
  refusedAtSave,
  type EgressPolicy,
  type EndpointTrust,
} from './egress-policy.js';

export type { EndpointTrust } from './egress-policy.js';

type EgressConfig = Pick<AppConfig, 'egress'>;

/** The policy for destinations chosen at `trust` level. */
export function egressFor(config: EgressConfig, trust: EndpointTrust): EgressPolicy {
  const base = config.egress;
  const open = trust === 'operator';
  const closed = trust === 'user';
  return {
    allowPrivate: open || (!closed && base.allowPrivate),
    allowLoopback: open || (!closed && base.allowLoopback),
    trust,
    containerService: base.containerService,
    // attachMeshEgress gives the list its source after the config is built: read it at each request.
    destinations: () => (base.destinations ? base.destinations() : Promise.resolve(DEFAULT_DESTINATIONS)),
  };
}

/** CRM hosts (administrator-saved): loopback also with CRM_ALLOW_INSECURE_LOOPBACK, for local CRM fakes. */
export function crmEgress(config: EgressConfig & Pick<AppConfig, 'crm'>): EgressPolicy {
  return {
    ...egressFor(config, 'admin'),
    allowLoopback: config.crm.allowInsecureLoopback,
    loopbackFlag: 'CRM_ALLOW_INSECURE_LOOPBACK',
  };
}

/**
 * The flag that would let `policy` reach a URL it refuses at save, or null when none would (metadata,
 * link-local). A loopback host names the policy's own loopback flag when it has one (CRM hosts:
 * CRM_ALLOW_INSECURE_LOOPBACK, which also admits their plain-http form).
 */
export function allowingFlag(raw: string, policy: EgressPolicy): string | null {
  if (policy.trust === 'user') return null;
  if (policy.loopbackFlag && !refusedAtSave(raw, { ...policy, allowLoopback: true })) return policy.loopbackFlag;
  return refusedAtSave(raw, { ...policy, allowPrivate: true }) ? null : ALLOW_PRIVATE_FLAG;
}

/**
 * The refusal code of an administrator-saved endpoint other than a Git host (CRM and code-agent
 * connections, tracker credentials, model providers, URL settings); Git hosts answer GIT_EGRESS_REFUSED.
 */
export const EGRESS_REFUSED = EgressCodes.EGRESS_REFUSED;

/**
 * Refuses to save an administrator's endpoint the policy never allows: 400 with `code`
 * (EGRESS_REFUSED, or GIT_EGRESS_REFUSED for a Git host), the host, the flag that would allow it
 * (null: none would) and the field; the caller has written nothing yet.
 */
export function checkSavedEndpoint(
  raw: string,
  policy: EgressPolicy,
  where: { field: string; code: ErrorCode; what: string },
): void {
  const refused = refusedAtSave(raw, policy);
  if (!refused) return;
  const host = URL.canParse(raw) ? new URL(raw).host : raw;
  throw new BadRequestError(
    `${where.what} ${host} is not allowed for outbound requests: ${refused.message}. Nothing was saved.`,
    {
      code: where.code,
      host,
      allowed_by: allowingFlag(raw, policy),
      fields: [{ field: where.field, message: refused.message }],
    },
  );
}

/** The route tables' 400 description of `checkSavedEndpoint`'s refusal, for the fields `fields` names. */
export function savedEndpointRefusalDoc(fields: string, code: string = EGRESS_REFUSED): string {
  return `\`${code}\`: ${fields} names a host the egress policy never allows (a loopback or private address without PLATFORM_EGRESS_ALLOW_PRIVATE, link-local or cloud metadata); payload \`host\`, \`allowed_by\` (the flag that would allow it, null if none), \`fields\`. Nothing saved`;
}
