/**
 * The CRM connection type as the spec's tables describe it ("CRM connection"): modes, their fields,
 * requirements and defaults. `GET /api/connections/types` serves this so a UI can render the form,
 * and validation reads the same table. Plain data.
 */
export const CRM_AUTH_MODES = ['user_oauth', 'jwt_bearer', 'refresh_token', 'client_credentials'] as const;
export type CrmAuthMode = (typeof CRM_AUTH_MODES)[number];

export interface FieldSpec {
  name: string;
  type: 'string' | 'secret' | 'select' | 'json';
  required: boolean;
  default: string | null;
  notes: string;
  options?: string[];
}

const loginHost = (notes: string): FieldSpec => ({
  name: 'login_host',
  type: 'string',
  required: true,
  default: null,
  notes,
});
const instanceUrl = (notes: string): FieldSpec => ({
  name: 'instance_url',
  type: 'string',
  required: false,
  default: null,
  notes,
});
const secret = (name: string, notes: string): FieldSpec => ({
  name,
  type: 'secret',
  required: true,
  default: null,
  notes,
});
const text = (name: string, notes: string): FieldSpec => ({
  name,
  type: 'string',
  required: true,
  default: null,
  notes,
});

/** The standard login host and the OAuth paths; the URL defaults are full URLs on that host. */
export const STANDARD_LOGIN_ORIGIN = 'https://login.salesforce.com';
export const AUTHORIZE_PATH = '/services/oauth2/authorize';
export const TOKEN_PATH = '/services/oauth2/token';
export const DEFAULT_AUTHORIZATION_URL = `${STANDARD_LOGIN_ORIGIN}${AUTHORIZE_PATH}`;
export const DEFAULT_TOKEN_URL = `${STANDARD_LOGIN_ORIGIN}${TOKEN_PATH}`;

export const CRM_MODE_FIELDS: Record<CrmAuthMode, FieldSpec[]> = {
  user_oauth: [
    loginHost('Standard or sandbox login host.'),
    instanceUrl(
      'Discovered after authorization; supply it to approve egress in one cycle. May differ from the login host.',
    ),
    text('client_id', 'OAuth consumer key.'),
    secret('client_secret', 'OAuth consumer secret.'),
    {
      name: 'authorization_url',
      type: 'string',
      required: false,
      default: DEFAULT_AUTHORIZATION_URL,
      notes: 'Hosts derive from login_host when left at the default (or empty, or the bare path).',
    },
    { name: 'token_url', type: 'string', required: false, default: DEFAULT_TOKEN_URL, notes: 'Same host derivation.' },
    {
      name: 'scopes',
      type: 'string',
      required: false,
      default: 'api refresh_token',
      notes: 'Comma- or space-separated.',
    },
  ],
  jwt_bearer: [
    text('consumer_key', 'Connected-app consumer key.'),
    text('username', 'Integration user name.'),
    secret('private_key', 'PEM private key for the JWT assertion.'),
    loginHost('Audience of the assertion.'),
    instanceUrl('Recommended.'),
  ],
  refresh_token: [
    text('client_id', 'OAuth consumer key.'),
    secret('client_secret', 'OAuth consumer secret.'),
    secret('refresh_token', 'Pre-issued refresh token.'),
    loginHost('Token endpoint host.'),
    instanceUrl('Recommended.'),
  ],
  client_credentials: [
    text('client_id', 'OAuth consumer key; the app must designate a run-as user.'),
    secret('client_secret', 'OAuth consumer secret.'),
    loginHost("Must be the organization's custom-domain host; the grant is rejected on the standard login host."),
    instanceUrl('Normally equal to the login host.'),
  ],
};

export const CRM_SHARED_FIELDS: FieldSpec[] = [
  {
    name: 'merge_enabled',
    type: 'select',
    required: false,
    default: 'false',
    options: ['false', 'true'],
    notes: 'Opt in to approval-gated merges.',
  },
  {
    name: 'merge_survivorship_policy',
    type: 'json',
    required: false,
    default: null,
    notes:
      'Required when merge_enabled is true: {"version", "preview_fields": [...], "rules": {field: prefer_survivor|prefer_non_null|prefer_most_recent|prefer_loser}}.',
  },
];

/** Secret fields: encrypted at rest, never returned (masked). */
export const SECRET_FIELDS: ReadonlySet<string> = new Set(['client_secret', 'private_key', 'refresh_token']);

/** What a masked secret reads as; sending it back on PATCH keeps the stored value. */
export const MASK = '********';

/** Login hosts that serve every organization; the client-credentials grant is refused there. */
export const STANDARD_LOGIN_HOSTS: ReadonlySet<string> = new Set(['login.salesforce.com', 'test.salesforce.com']);

export const CRM_CONNECTION_TYPE = {
  type: 'crm',
  display_name: 'CRM',
  category: 'Dev Tools',
  suggested_name: { user_oauth: 'crm_oauth_main' },
  auth_modes: CRM_AUTH_MODES,
  shared_fields: CRM_SHARED_FIELDS,
  mode_fields: CRM_MODE_FIELDS,
  rules: [
    'For user_oauth the redirect URI embeds the connection name; register the exact displayed value with the OAuth app. On redirect_uri_mismatch, re-copy it; a callback change can need a few minutes to propagate.',
    'For client_credentials the app must designate a run-as user.',
    'Outbound allowlists must admit both the login host and the instance host (listed as egress_hosts on the connection).',
  ],
} as const;
