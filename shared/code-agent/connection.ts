import type { AppConfig } from '../config.js';
import type { CrmConnectionRow } from '../db/entities/index.js';
import { BadRequestError } from '../errors.js';
import type { EgressPolicy } from '../http/egress-policy.js';
import { checkSavedEndpoint, EGRESS_REFUSED } from '../http/trust.js';
import { secretBox } from '../secrets/secret-box.js';

/**
 * The code-agent connection (spec, "Code-agent connection"): type `api_key`, shared scope only,
 * an `api_key` secret and `api_base_url` defaulting to the provider's production API base. Stored in
 * the connections table beside CRM connections (`type` = `auth_mode` = `api_key`).
 */
export const API_KEY_CONNECTION = 'api_key';
export const CODE_AGENT_DEFAULT_API_BASE = 'https://api.cursor.com';

export const API_KEY_CONNECTION_TYPE = {
  type: API_KEY_CONNECTION,
  category: 'Dev Tools',
  description: 'Cloud code-agent provider. Shared scope only; the connection test calls GET /v1/models.',
  auth_modes: [
    {
      auth_mode: API_KEY_CONNECTION,
      fields: [
        { name: 'api_key', type: 'secret', required: true, default: null, notes: 'Enterprise service-account key.' },
        {
          name: 'api_base_url',
          type: 'string',
          required: false,
          default: CODE_AGENT_DEFAULT_API_BASE,
          notes: 'Override only for testing or dedicated endpoints.',
        },
        {
          name: 'scope',
          type: 'select',
          required: false,
          default: 'shared',
          options: ['shared'],
          notes: 'Personal-scope connections are refused by the cloud adapter.',
        },
      ],
    },
  ],
};

export interface ApiKeySettings {
  api_base_url: string;
  scope: 'shared';
}

export interface ValidatedApiKeyConnection {
  settings: ApiKeySettings;
  secrets: { api_key: string };
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
const KNOWN = new Set(['api_key', 'api_base_url', 'scope']);

/**
 * Validates an `api_key` connection's config; every problem is named in `payload.fields` and nothing
 * is saved. `policy` is the administrator-saved endpoints' (egressFor 'admin'): an `api_base_url` it
 * never allows is refused first (EGRESS_REFUSED); plain http only for a loopback host it allows.
 */
export function validateApiKeyConnection(
  config: Record<string, unknown>,
  opts: { policy: EgressPolicy; storedApiKey?: string },
): ValidatedApiKeyConnection {
  const issues: Array<{ field: string; message: string }> = [];
  for (const k of Object.keys(config))
    if (!KNOWN.has(k)) issues.push({ field: k, message: 'is not a field of api_key' });
  const scope = config.scope ?? 'shared';
  if (scope === 'personal')
    issues.push({
      field: 'scope',
      message: 'personal-scope api_key connections are refused: the cloud code agent uses a shared-scope connection',
    });
  else if (scope !== 'shared') issues.push({ field: 'scope', message: 'must be shared' });
  let apiKey = opts.storedApiKey;
  if (config.api_key !== undefined && config.api_key !== '********') {
    if (typeof config.api_key !== 'string' || !config.api_key.trim() || config.api_key.length > 4096)
      issues.push({ field: 'api_key', message: 'must be a non-empty string' });
    else apiKey = config.api_key.trim();
  }
  if (!apiKey && !issues.some((i) => i.field === 'api_key')) issues.push({ field: 'api_key', message: 'is required' });
  let base = CODE_AGENT_DEFAULT_API_BASE;
  const rawBase = config.api_base_url;
  if (rawBase !== undefined && rawBase !== null && rawBase !== '') {
    let url: URL | null;
    try {
      url = typeof rawBase === 'string' && rawBase.length <= 2000 ? new URL(rawBase) : null;
    } catch {
      url = null;
    }
    if (url && (url.protocol === 'http:' || url.protocol === 'https:'))
      checkSavedEndpoint(url.href, opts.policy, {
        field: 'body.config.api_base_url',
        code: EGRESS_REFUSED,
        what: 'The api_base_url host',
      });
    if (!url) issues.push({ field: 'api_base_url', message: 'is not a URL' });
    // A loopback host got this far only where the policy allows it (PLATFORM_EGRESS_ALLOW_PRIVATE).
    else if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname)))
      issues.push({
        field: 'api_base_url',
        message: 'must use https (plain http only for a loopback host, with PLATFORM_EGRESS_ALLOW_PRIVATE=true)',
      });
    else if (url.username || url.password || url.search || url.hash)
      issues.push({ field: 'api_base_url', message: 'must not carry credentials, a query or a fragment' });
    else base = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  }
  if (issues.length)
    throw new BadRequestError(
      `Invalid api_key connection: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`,
      {
        fields: issues,
      },
    );
  return { settings: { api_base_url: base, scope: 'shared' }, secrets: { api_key: apiKey! } };
}

/** An `api_key` connection with its key opened (memory only). */
export interface CodeAgentCredential {
  name: string;
  apiBaseUrl: string;
  apiKey: string;
  scope: string;
}

export function openApiKeyConnection(config: AppConfig, row: CrmConnectionRow): CodeAgentCredential {
  const settings = row.settings as Partial<ApiKeySettings> & { scope?: string };
  const secrets = JSON.parse(secretBox(config).open(row.secretsSealed)) as { api_key?: string };
  return {
    name: row.name,
    apiBaseUrl: settings.api_base_url ?? CODE_AGENT_DEFAULT_API_BASE,
    apiKey: secrets.api_key ?? '',
    scope: settings.scope ?? 'shared',
  };
}
