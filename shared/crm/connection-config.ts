import { importPKCS8 } from 'jose';
import { BadRequestError } from '../errors.js';
import type { EgressPolicy } from '../http/egress-policy.js';
import { checkSavedEndpoint, EGRESS_REFUSED } from '../http/trust.js';
import {
  AUTHORIZE_PATH,
  CRM_AUTH_MODES,
  CRM_MODE_FIELDS,
  DEFAULT_AUTHORIZATION_URL,
  DEFAULT_TOKEN_URL,
  MASK,
  SECRET_FIELDS,
  STANDARD_LOGIN_HOSTS,
  TOKEN_PATH,
  type CrmAuthMode,
} from './connection-types.js';
import { SurvivorshipPolicySchema, type SurvivorshipPolicy } from './survivorship.js';

/** A connection's non-secret settings, normalized: hosts are origins, URLs derived, scopes a list. */
export interface CrmSettings {
  login_host: string;
  instance_url: string | null;
  client_id?: string;
  consumer_key?: string;
  username?: string;
  authorization_url?: string;
  token_url: string;
  scopes?: string[];
}

export interface ValidatedConnection {
  authMode: CrmAuthMode;
  settings: CrmSettings;
  secrets: Record<string, string>;
  mergeEnabled: boolean;
  policy: SurvivorshipPolicy | null;
}

interface Issue {
  field: string;
  message: string;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A host as a URL: a bare host means https. */
const asUrl = (raw: string) => (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `https://${raw}`);

/** An https origin (or a loopback http one when the deployment allows it); a bare host means https. */
export function hostOrigin(raw: string, allowInsecureLoopback: boolean): string | string[] {
  let url: URL;
  try {
    url = new URL(asUrl(raw));
  } catch {
    return ['is not a host name or URL'];
  }
  if (url.protocol === 'https:') return url.origin;
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) {
    return allowInsecureLoopback
      ? url.origin
      : ['plain http is accepted only for loopback hosts with CRM_ALLOW_INSECURE_LOOPBACK=true'];
  }
  return ['must use https'];
}

function parsePolicy(raw: unknown, issues: Issue[]): SurvivorshipPolicy | null {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      issues.push({ field: 'merge_survivorship_policy', message: 'is not valid JSON' });
      return null;
    }
  }
  const parsed = SurvivorshipPolicySchema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const i of parsed.error.issues)
    issues.push({ field: ['merge_survivorship_policy', ...i.path.map(String)].join('.'), message: i.message });
  return null;
}

const asText = (v: unknown) =>
  typeof v === 'string' ? v.trim() : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;

/** Refuses (400 EGRESS_REFUSED) an http(s) host the CRM egress policy never allows; other shapes are hostOrigin's to name. */
function checkCrmHost(field: string, raw: string, policy: EgressPolicy): void {
  const url = asUrl(raw);
  if (!/^https?:\/\//i.test(url) || !URL.canParse(url)) return;
  checkSavedEndpoint(url, policy, { field: `body.config.${field}`, code: EGRESS_REFUSED, what: 'The CRM host' });
}

/**
 * Validates a create or PATCH body for one mode. `stored` holds the current secrets, kept when a
 * field is omitted or sent back masked. Every failing field is named (`config.<field>`). A host
 * `policy` (crmEgress) never allows is refused first, with its own code and the flag that would allow it.
 */
export async function validateCrmConnection(
  authMode: unknown,
  config: Record<string, unknown>,
  opts: { policy: EgressPolicy; storedSecrets?: Record<string, string> },
): Promise<ValidatedConnection> {
  if (typeof authMode !== 'string' || !(CRM_AUTH_MODES as readonly string[]).includes(authMode)) {
    throw new BadRequestError(`Unknown auth_mode "${String(authMode)}"; use one of ${CRM_AUTH_MODES.join(', ')}.`, {
      fields: [{ field: 'body.auth_mode', message: `must be one of ${CRM_AUTH_MODES.join(', ')}` }],
    });
  }
  const mode = authMode as CrmAuthMode;
  const issues: Issue[] = [];
  const specs = CRM_MODE_FIELDS[mode];
  const known = new Set([...specs.map((f) => f.name), 'merge_enabled', 'merge_survivorship_policy']);
  for (const key of Object.keys(config))
    if (!known.has(key)) issues.push({ field: key, message: `is not a field of mode ${mode}` });

  const values: Record<string, string> = {};
  const secrets: Record<string, string> = {};
  for (const spec of specs) {
    let value = asText(config[spec.name]);
    if (SECRET_FIELDS.has(spec.name) && (value === undefined || value === MASK))
      value = opts.storedSecrets?.[spec.name];
    if (value === undefined || value === '') {
      if (spec.required) issues.push({ field: spec.name, message: `is required for mode ${mode}` });
      continue;
    }
    if (SECRET_FIELDS.has(spec.name)) secrets[spec.name] = value;
    else values[spec.name] = value;
  }

  const origin = (field: string): string | null => {
    if (!values[field]) return null;
    checkCrmHost(field, values[field]!, opts.policy);
    // crmEgress opens loopback exactly when CRM_ALLOW_INSECURE_LOOPBACK is set, which also admits plain http there.
    const o = hostOrigin(values[field]!, opts.policy.allowLoopback);
    if (Array.isArray(o)) {
      issues.push({ field, message: o[0]! });
      return null;
    }
    return o;
  };
  const loginHost = origin('login_host');
  const instanceUrl = origin('instance_url');
  // Left at the default (the full standard URL, the bare path, or empty), an OAuth URL derives from
  // login_host; any other full URL must be https too.
  const derive = (field: 'authorization_url' | 'token_url', path: string, standard: string) => {
    const given = values[field];
    if (!given || given === path || given === standard) return loginHost ? `${loginHost}${path}` : '';
    const o = origin(field);
    return o ? `${o}${new URL(given.includes('://') ? given : `https://${given}`).pathname}` : '';
  };
  const settings: CrmSettings = {
    login_host: loginHost ?? '',
    instance_url: instanceUrl,
    token_url: derive('token_url', TOKEN_PATH, DEFAULT_TOKEN_URL),
  };
  if (values.client_id) settings.client_id = values.client_id;
  if (values.consumer_key) settings.consumer_key = values.consumer_key;
  if (values.username) settings.username = values.username;
  if (mode === 'user_oauth') {
    settings.authorization_url = derive('authorization_url', AUTHORIZE_PATH, DEFAULT_AUTHORIZATION_URL);
    settings.scopes = (values.scopes ?? 'api refresh_token').split(/[\s,]+/).filter(Boolean);
  }
  if (mode === 'client_credentials' && loginHost && STANDARD_LOGIN_HOSTS.has(new URL(loginHost).hostname)) {
    issues.push({
      field: 'login_host',
      message:
        "the client-credentials grant is refused on the standard login host; use your organization's custom-domain host (e.g. https://yourorg.my.example.com)",
    });
  }
  if (mode === 'jwt_bearer' && secrets.private_key) {
    try {
      await importPKCS8(secrets.private_key, 'RS256');
    } catch {
      issues.push({
        field: 'private_key',
        message: 'is not a PEM-encoded PKCS#8 RSA private key (-----BEGIN PRIVATE KEY-----)',
      });
    }
  }

  const mergeFlag = asText(config.merge_enabled) ?? 'false';
  if (mergeFlag !== 'true' && mergeFlag !== 'false')
    issues.push({ field: 'merge_enabled', message: 'must be "true" or "false"' });
  const mergeEnabled = mergeFlag === 'true';
  const rawPolicy = config.merge_survivorship_policy;
  const hasPolicy = rawPolicy !== undefined && rawPolicy !== null && rawPolicy !== '';
  if (mergeEnabled && !hasPolicy)
    issues.push({ field: 'merge_survivorship_policy', message: 'is required when merge_enabled is true' });
  const policy = hasPolicy ? parsePolicy(rawPolicy, issues) : null;

  if (issues.length > 0) {
    throw new BadRequestError(
      `Invalid CRM connection: ${issues.map((i) => `config.${i.field} ${i.message}`).join('; ')}.`,
      {
        fields: issues.map((i) => ({ field: `body.config.${i.field}`, message: i.message })),
      },
    );
  }
  return { authMode: mode, settings, secrets, mergeEnabled, policy };
}
