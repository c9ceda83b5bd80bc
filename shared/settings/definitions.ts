import type { z } from 'zod';
import type { Permission } from '../auth/rbac.js';
import { BRANDING_FIELD_SCHEMAS } from '../branding/fields.js';
import { AdvertiseTagsSettingSchema, DEFAULT_EGRESS, EgressListSettingSchema } from '../secrets/mesh-limits.js';
import {
  boolean,
  checked,
  httpsBaseUrl,
  integer,
  number,
  oneOf,
  string,
  stringList,
  url,
  type SettingKind,
} from './kinds.js';

/**
 * One setting: its type, default, optional environment variable, whether it is a secret (sealed at
 * rest, masked on every read) and whether it may be saved at run time. A read-only setting
 * (`writable: false`) is process-level: it is read once at start from the environment, so saving it
 * would change nothing; its source is `env` or `default`, never `saved`.
 */
export interface SettingDef<T = unknown, D = T | null> {
  kind: SettingKind<T>;
  default: D;
  env?: string;
  secret: boolean;
  writable: boolean;
  /** A permission an apply naming (or, in a full apply, unsetting) this path needs beyond `access_config_panel`. */
  permission?: Permission;
  /**
   * The value is an endpoint the platform sends requests to (administrator-saved, shared/http/trust.ts):
   * `http` an API, `git` a Git remote. An apply refuses a host the egress policy never allows.
   */
  endpoint?: 'http' | 'git';
  description: string;
}

interface Options {
  env?: string;
  secret?: boolean;
  permission?: Permission;
  endpoint?: 'http' | 'git';
  description: string;
}

/** A setting that may be saved at run time (effective value: saved, then env, then default). */
function setting<T, D extends T | null>(kind: SettingKind<T>, dflt: D, o: Options): SettingDef<T, D> {
  return {
    kind,
    default: dflt,
    env: o.env,
    secret: o.secret ?? false,
    writable: true,
    permission: o.permission,
    endpoint: o.endpoint,
    description: o.description,
  };
}

/** A process-level setting: environment or default only, read at start. */
function envOnly<T, D extends T | null>(kind: SettingKind<T>, dflt: D, o: Options): SettingDef<T, D> {
  return { kind, default: dflt, env: o.env, secret: o.secret ?? false, writable: false, description: o.description };
}

/**
 * Every setting the platform knows, by dotted path; the first segment is its section. Env names
 * are the ones the README's configuration table lists.
 */
export const SETTINGS = {
  // Process-level: where the process listens and what it connects to.
  'server.port': envOnly(integer(0, 65535), 8080, { env: 'PORT', description: 'API listen port' }),
  'server.host': envOnly(string(), '0.0.0.0', { env: 'HOST', description: 'API listen address' }),
  'server.public_base_url': envOnly(url, null, {
    env: 'PLATFORM_PUBLIC_BASE_URL',
    description: 'Customer-facing HTTPS origin',
  }),
  'database.url': envOnly(string(), null, { env: 'DATABASE_URL', secret: true, description: 'PostgreSQL to use' }),
  'database.pool_max': envOnly(integer(1, 1000), 10, {
    env: 'DATABASE_POOL_MAX',
    description: 'Connection pool size per process',
  }),
  'temporal.address': envOnly(string(), '127.0.0.1:7233', {
    env: 'TEMPORAL_ADDRESS',
    description: 'Temporal frontend',
  }),
  'temporal.namespace': envOnly(string(), 'default', { env: 'TEMPORAL_NAMESPACE', description: 'Temporal namespace' }),
  'temporal.task_queue': envOnly(string(), 'platform', { env: 'TEMPORAL_TASK_QUEUE', description: 'Task queue' }),
  'temporal.ui_url': envOnly(url, null, { env: 'TEMPORAL_UI_URL', description: 'Temporal Web UI' }),
  'platform.data_dir': envOnly(string(), '.data', { env: 'PLATFORM_DATA_DIR', description: 'Local state folder' }),
  'platform.tenant': envOnly(string(), 'default', {
    env: 'PLATFORM_TENANT',
    description: 'Deployment tenant when a token names none',
  }),
  'platform.signing_key': envOnly(string(), null, {
    env: 'PLATFORM_SIGNING_KEY',
    secret: true,
    description: 'HS256 key of signed download URLs',
  }),
  'platform.skills_dir': envOnly(string(), null, {
    env: 'PLATFORM_SKILLS_DIR',
    description: 'Folder of skills the gateway serves',
  }),
  'secrets.key': envOnly(string(), null, {
    env: 'PLATFORM_SECRETS_KEY',
    secret: true,
    description: 'Key material for sealing secrets at rest',
  }),
  'limits.max_json_body_bytes': envOnly(integer(1, 2 ** 31), 1024 * 1024, {
    env: 'MAX_JSON_BODY_BYTES',
    description: 'Larger JSON bodies answer 413',
  }),
  'log.level': envOnly(oneOf(['debug', 'info', 'warn', 'error']), 'info', {
    env: 'LOG_LEVEL',
    description: 'Log level',
  }),
  'egress.allow_private': envOnly(boolean, false, {
    env: 'PLATFORM_EGRESS_ALLOW_PRIVATE',
    description: 'Outbound requests may reach private addresses',
  }),
  'platform.container_service_mode': envOnly(boolean, false, {
    env: 'PLATFORM_CONTAINER_SERVICE_MODE',
    description:
      'The deployment runs as a warehouse container service: encryption-key enable/verify and the mesh routes answer, and the mesh egress list restricts outbound requests',
  }),
  // Desktop (laptop) mode, issue 18: off unless the deployment turns it on; the provisioner is reached through egress.
  'desktop.enabled': envOnly(boolean, false, {
    env: 'PLATFORM_DESKTOP_MODE',
    description: 'Desktop (laptop) mode: the /api/desktop routes answer (otherwise 404, or 409 for the notice routes)',
  }),
  'desktop.provisioner_url': envOnly(url, null, {
    env: 'PLATFORM_DESKTOP_PROVISIONER_URL',
    description:
      'Base URL of the provisioner issuing sign-in, activation, AI keys, credit readings and the version policy',
  }),
  'desktop.provisioner_client_id': envOnly(string(200), null, {
    env: 'PLATFORM_DESKTOP_PROVISIONER_CLIENT_ID',
    description: 'Client id this deployment presents to the provisioner (authorize URL and every call)',
  }),
  'desktop.provisioner_client_secret': envOnly(string(), null, {
    env: 'PLATFORM_DESKTOP_PROVISIONER_CLIENT_SECRET',
    secret: true,
    description: 'Client secret this deployment presents to the provisioner',
  }),
  'desktop.platform_ai_only': envOnly(boolean, false, {
    env: 'PLATFORM_DESKTOP_PLATFORM_AI_ONLY',
    description:
      'Platform-AI-only mode: the laptop uses only the platform AI key (llm-choice and credit switch answer 403)',
  }),
  'desktop.diagnostics_dir': envOnly(string(), null, {
    env: 'PLATFORM_DESKTOP_DIAGNOSTICS_DIR',
    description: 'Folder whose log files diagnostics previews collect (default: <PLATFORM_DATA_DIR>/logs)',
  }),
  'desktop.diagnostics_auto': envOnly(boolean, false, {
    env: 'PLATFORM_DESKTOP_DIAGNOSTICS_AUTO',
    description:
      'Send diagnostics automatically (at most one attempt an hour, by the desktop-diagnostics-auto Schedule)',
  }),
  'desktop.home': envOnly(string(), null, {
    env: 'PLATFORM_DESKTOP_HOME',
    description:
      "Home folder whose MCP client configurations the laptop routes list and write (default: the process user's home)",
  }),
  'desktop.cli_path': envOnly(string(), null, {
    env: 'PLATFORM_DESKTOP_CLI_PATH',
    description: 'PATH-style folder list searched for local coding CLIs (default: the process PATH)',
  }),
  'secrets.reseal_batch_size': envOnly(integer(1, 2 ** 31), 100, {
    env: 'PLATFORM_SECRETS_RESEAL_BATCH_SIZE',
    description: 'Rows one re-seal activity handles (one transaction)',
  }),
  'secrets.reseal_pause_ms': envOnly(number(0), 0, {
    env: 'PLATFORM_SECRETS_RESEAL_PAUSE_MS',
    description: 'Durable pause between re-seal batches (0: none)',
  }),

  // Mesh (spec, Limits). The auth key file is where the container service mounts the key (never served).
  'mesh.auth_key_file': envOnly(string(), null, {
    env: 'PLATFORM_MESH_AUTH_KEY_FILE',
    description: 'Mounted mesh auth key file; unset: <PLATFORM_DATA_DIR>/mesh-auth.key',
  }),
  'mesh.egress': setting(checked('string_list', EgressListSettingSchema), [...DEFAULT_EGRESS], {
    permission: 'manage_secrets',
    description:
      'Mesh egress list: 1 to 256 host:port entries (port 1 to 65535); in container-service mode the outbound allow-list (PUT /api/secrets/mesh-auth-key/egress)',
  }),
  'mesh.advertise_tags': setting(checked('string_list', AdvertiseTagsSettingSchema), [], {
    permission: 'manage_secrets',
    description:
      'Mesh advertise tags: at most 32 tag:<name>, 512 characters together (PUT /api/secrets/mesh-auth-key/advertise-tags)',
  }),

  // License: the key licenses are verified with is a trust root, so it (and switching enforcement off)
  // is the operator's, not a configuration admin's.
  'license.public_key': envOnly(string(16_384), null, {
    env: 'PLATFORM_LICENSE_PUBLIC_KEY',
    description: 'PEM (SPKI) or JWK JSON of the EdDSA/ES256 key licenses are signed with',
  }),
  'license.enforcement_disabled': envOnly(boolean, false, {
    env: 'PLATFORM_LICENSE_ENFORCEMENT_DISABLED',
    description: 'License check always answers ok (reported by GET /api/license/status)',
  }),

  // Hosted documentation (POST /api/docs/session).
  'docs.base_url': setting(httpsBaseUrl, null, {
    env: 'PLATFORM_DOCS_BASE_URL',
    description:
      'Root of the hosted docs tree (https; http only for loopback); unset: POST /api/docs/session answers 503',
  }),

  // Authentication (spec, Authentication 3 and 4; Gateway settings): verified with keys fetched at start.
  'auth.provider': envOnly(oneOf(['oidc', 'proxy', 'hosted', 'none']), 'none', {
    env: 'AUTH_PROVIDER',
    description: 'Identity provider kind',
  }),
  'auth.issuer': envOnly(string(), null, { env: 'AUTH_ISSUER', description: 'Token issuer' }),
  'auth.audience': envOnly(string(), null, { env: 'AUTH_AUDIENCE', description: 'Token audience' }),
  'auth.jwks_url': envOnly(url, null, { env: 'AUTH_JWKS_URL', description: "Identity provider's JWKS" }),
  'auth.client_id': envOnly(string(), null, { env: 'AUTH_CLIENT_ID', description: "Platform's client id" }),
  'auth.client_secret': envOnly(string(), null, {
    env: 'AUTH_CLIENT_SECRET',
    secret: true,
    description: "Platform's client secret (OAuth proxy)",
  }),
  'auth.mcp_client_redirect_uris': envOnly(stringList(), [], {
    env: 'AUTH_MCP_CLIENT_REDIRECT_URIS',
    description: 'Extra MCP client callbacks, matched verbatim',
  }),
  'auth.installation': envOnly(string(), null, {
    env: 'AUTH_INSTALLATION',
    description: 'Hosted mode: the installation signed assertions must name (claim installation)',
  }),
  'auth.roles_claim': envOnly(string(), 'roles', { env: 'AUTH_ROLES_CLAIM', description: 'Claim holding roles' }),
  'auth.service_token': envOnly(string(), null, {
    env: 'PLATFORM_SERVICE_TOKEN',
    secret: true,
    description: 'X-Platform-Service-Token value',
  }),
  'auth.internal_token': envOnly(string(), null, {
    env: 'PLATFORM_INTERNAL_TOKEN',
    secret: true,
    description: 'X-Platform-Internal-Token value',
  }),

  // Hosted gateway deployment settings.
  'mcp.public_url': envOnly(url, null, { env: 'PLATFORM_MCP_PUBLIC_URL', description: 'Public origin of /mcp' }),
  'mcp.oauth_proxy_enabled': envOnly(boolean, false, {
    env: 'PLATFORM_OAUTH_PROXY_ENABLED',
    description: 'Serve the OAuth proxy routes',
  }),
  'mcp.default_agent_id': envOnly(string(), null, {
    env: 'PLATFORM_MCP_DEFAULT_AGENT_ID',
    description: 'Gateway default agent when the gateway setting is unset',
  }),
  'mcp.default_agent_unavailable_policy': envOnly(
    oneOf(['require_selection', 'first_available']),
    'require_selection',
    {
      env: 'PLATFORM_MCP_DEFAULT_AGENT_UNAVAILABLE_POLICY',
      description: 'What the gateway does when the default agent is unavailable',
    },
  ),

  // CRM (spec, Limits).
  'crm.max_approval_ttl_seconds': setting(integer(1, 30 * 86_400), 86_400, {
    env: 'CRM_MAX_APPROVAL_TTL_SECONDS',
    description: "Cap on a merge approval's lifetime; each approval records the cap it was requested under",
  }),
  'crm.allow_insecure_loopback': envOnly(boolean, false, {
    env: 'CRM_ALLOW_INSECURE_LOOPBACK',
    description: 'Accept plain-http loopback CRM hosts (local testing only)',
  }),

  // Action Review.
  'action_review.sweep_interval_seconds': setting(integer(1, 7 * 86_400), 600, {
    env: 'ACTION_REVIEW_SWEEP_INTERVAL_SECONDS',
    description: 'How often the hand-back sweep schedule runs; saving it updates the schedule',
  }),
  'action_review.max_proposal_bytes': setting(integer(1, 64 * 1024 * 1024), 256 * 1024, {
    env: 'ACTION_REVIEW_MAX_PROPOSAL_BYTES',
    description: 'A proposal whose stored form is larger answers 413',
  }),
  'action_review.effect_timeout_seconds': envOnly(integer(1, 86_400), 600, {
    env: 'ACTION_REVIEW_EFFECT_TIMEOUT_SECONDS',
    description: "Start-to-close limit of an effect's one attempt",
  }),
  'action_review.effect_heartbeat_seconds': envOnly(integer(1, 86_400), 30, {
    env: 'ACTION_REVIEW_EFFECT_HEARTBEAT_SECONDS',
    description: "Heartbeat limit of an effect's one attempt",
  }),
  'action_review.handback_max_attempts': envOnly(integer(1, 10_000), 20, {
    env: 'ACTION_REVIEW_HANDBACK_MAX_ATTEMPTS',
    description: 'Delivery attempts of one hand-back workflow',
  }),
  'action_review.local_cli_allowed_commands': envOnly(stringList(), [], {
    env: 'LOCAL_CLI_ALLOWED_COMMANDS',
    description: 'Commands local_cli.run.v1 may run',
  }),
  'action_review.local_cli_timeout_seconds': envOnly(integer(1, 86_400), 120, {
    env: 'LOCAL_CLI_TIMEOUT_SECONDS',
    description: 'Limit of one local_cli.run.v1 command',
  }),
  'action_review.ticket_tracker_url': envOnly(url, null, {
    env: 'TICKET_TRACKER_URL',
    description: 'Issue tracker ticket.write.v1 posts to',
  }),
  'action_review.ticket_tracker_token': envOnly(string(), null, {
    env: 'TICKET_TRACKER_TOKEN',
    secret: true,
    description: "Issue tracker's token",
  }),

  // The language model (its provider routes belong to another issue; read at start for now).
  'llm.base_url': envOnly(url, null, { env: 'PLATFORM_LLM_BASE_URL', description: 'OpenAI-compatible endpoint' }),
  'llm.api_key': envOnly(string(), null, { env: 'PLATFORM_LLM_API_KEY', secret: true, description: 'Model API key' }),
  'llm.model': envOnly(string(), null, { env: 'PLATFORM_LLM_MODEL', description: 'Model name' }),
  'llm.timeout_seconds': envOnly(integer(1, 3600), 120, {
    env: 'PLATFORM_LLM_TIMEOUT_SECONDS',
    description: "One model call's limit",
  }),
  'llm.input_usd_per_mtok': envOnly(number(0), 0, {
    env: 'PLATFORM_LLM_INPUT_USD_PER_MTOK',
    description: 'Input price per million tokens',
  }),
  'llm.output_usd_per_mtok': envOnly(number(0), 0, {
    env: 'PLATFORM_LLM_OUTPUT_USD_PER_MTOK',
    description: 'Output price per million tokens',
  }),

  // ETL tool (spec, ETL-tool settings).
  'etl.project_path': setting(string(), null, {
    env: 'ETL_PROJECT_PATH',
    description: 'Project root with the project file and process/',
  }),
  'etl.jobs_dir': setting(string(), null, { env: 'ETL_JOBS_DIR', description: 'Directory of built jobs' }),
  'etl.run_timeout_seconds': setting(integer(1, 86_400), 900, {
    description: 'Seconds before a hung job is killed',
  }),
  'etl.runner_url': setting(url, null, {
    env: 'ETL_RUNNER_URL',
    endpoint: 'http',
    description: 'Remote runner base URL',
  }),
  'etl.runner_token': setting(string(), null, {
    env: 'ETL_RUNNER_TOKEN',
    secret: true,
    description: "Bearer token the remote runner expects (the runner's own ETL_RUNNER_TOKEN)",
  }),
  'etl.cloud_base_url': setting(url, null, { description: 'Reserved; ignored by the current execution path' }),
  'etl.cloud_token': setting(string(), null, {
    secret: true,
    description: 'Reserved; ignored by the current execution path',
  }),

  // Enhancements (spec, Code-agent connection).
  'enhancements.code_agent.enabled': setting(boolean, false, {
    env: 'CODE_AGENT_TICKET_ENABLED',
    description: 'Launch code agents from tickets',
  }),
  'enhancements.code_agent.adapter': setting(oneOf(['auto', 'local', 'cloud']), 'auto', {
    description: 'auto, local or cloud',
  }),
  'enhancements.code_agent.connection_name': setting(string(200), '', {
    description: 'Shared-scope code-agent connection',
  }),
  'enhancements.code_agent.target_repo_url': setting(string(), '', {
    description: 'Repository cloud agents modify',
  }),
  'enhancements.code_agent.target_base_ref': setting(string(200), 'main', {
    env: 'CODE_AGENT_TARGET_BRANCH',
    description: 'Base branch of cloud runs',
  }),
  'enhancements.code_agent.auto_create_pr': setting(boolean, true, {
    description: 'Ask the cloud to open a pull request',
  }),
  'enhancements.code_agent.runner_command': envOnly(string(), null, {
    env: 'CODE_AGENT_RUNNER_COMMAND',
    description: 'Local runner: program and arguments (split at spaces, run without a shell); auto picks it when set',
  }),
  'enhancements.code_agent.run_timeout_seconds': setting(integer(1, 86_400), 3600, {
    env: 'CODE_AGENT_RUN_TIMEOUT_SECONDS',
    description: 'A local run is killed, a cloud run given up (expired), after this long',
  }),
  'enhancements.code_agent.poll_interval_seconds': setting(integer(1, 3600), 15, {
    description: 'Cloud runs: first poll delay; doubles while the status stays, up to 8 times this',
  }),
  'enhancements.coding_agent.backend': setting(oneOf(['code_agent', 'agent_cli']), 'code_agent', {
    description: 'Coding-agent backend',
  }),
  'enhancements.coding_agent.agent_cli.enabled': setting(boolean, false, {
    description: 'Enable the agent-CLI backend',
  }),
  'enhancements.coding_agent.agent_cli.target_repo_url': setting(string(), '', {
    endpoint: 'git',
    description: 'Repository the agent CLI modifies',
  }),
  'enhancements.coding_agent.agent_cli.target_base_ref': setting(string(200), 'main', {
    description: 'Base branch of agent-CLI runs',
  }),
  'enhancements.coding_agent.agent_cli.connection_name': setting(string(200), '', {
    description: 'Model credential connection',
  }),
  'enhancements.coding_agent.agent_cli.git_connection_name': setting(string(200), '', {
    description: 'Identity that pushes the branch and opens the pull request',
  }),
  'enhancements.coding_agent.agent_cli.worktree_root': setting(string(), '/opt/platform-agents-start-code-agent', {
    description: 'Per-run worktree root',
  }),
  'enhancements.coding_agent.agent_cli.command': envOnly(string(), null, {
    env: 'CODE_AGENT_CLI_COMMAND',
    description: 'Agent CLI: program and arguments (split at spaces, run without a shell in the run worktree)',
  }),
  'enhancements.coding_agent.agent_cli.forge_api_url': setting(url, null, {
    endpoint: 'http',
    description:
      'Git host REST API base for pull requests; empty: derived from target_repo_url (github.com: https://api.github.com, else <origin>/api/v3)',
  }),
  'enhancements.knowledge_base.forge_api_url': setting(url, null, {
    endpoint: 'http',
    description:
      'Git host REST API base for knowledge-base pull requests (open_kb_pull_request); empty: derived from the managed source repo_url',
  }),
  'enhancements.tracker_automation.enabled': setting(boolean, false, {
    env: 'TRACKER_AUTOMATION_ENABLED',
    description: 'Issue-tracker automation rollout (frontend flag jira_automation_enabled)',
  }),
  'enhancements.tracker_automation.poll_interval_seconds': setting(integer(10, 86_400), 300, {
    description: 'Tracker poll interval',
  }),
  'enhancements.tracker_automation.poll_lookback_minutes': setting(integer(1, 10_080), 60, {
    description: 'Tracker poll lookback',
  }),
  'enhancements.tracker_automation.connection_name': setting(string(200), '', {
    description:
      'api_key connection of the tracker: api_base_url is the tracker site, api_key the bearer token (email:token for basic auth)',
  }),
  'enhancements.tracker_automation.jql_filter': setting(string(1000), '', {
    description: 'Extra JQL the issue-tracker poll ANDs to its updated-since window (e.g. project = APP)',
  }),
  'enhancements.tracker_automation.eligible_labels': setting(stringList(), ['ai-agent'], {
    description: 'An issue carrying one of these labels starts a code-agent run (issue tracker)',
  }),
  'enhancements.tracker_automation.eligible_issue_types': setting(stringList(), [], {
    description: 'An issue of one of these types starts a code-agent run (issue tracker)',
  }),
  'enhancements.tracker_automation.done_statuses': setting(stringList(), ['Done', 'Closed', 'Resolved'], {
    description: 'Provider statuses mapped to the work state done',
  }),
  'enhancements.tracker_automation.needs_info_statuses': setting(
    stringList(),
    ['Needs Info', 'Waiting for customer', 'Pending'],
    { description: 'Provider statuses mapped to the work state needs_info' },
  ),
  'enhancements.tracker_automation.working_statuses': setting(stringList(), ['In Progress', 'In Review'], {
    description: 'Provider statuses mapped to the work state working',
  }),
  'enhancements.tracker_automation.service_desk_webhook_secret': setting(string(), null, {
    secret: true,
    description: 'Shared secret of the service-desk webhook signature (X-Webhook-Signature: sha256=<hmac hex>)',
  }),

  // Branding and the hosted demo.
  ...brandingSettings(),
  'demo.mode_enabled': setting(boolean, false, {
    env: 'PLATFORM_DEMO_MODE',
    description: 'Hosted demo mode (GET /api/config/demo-mode)',
  }),
  'demo.access_denied_path': setting(string(2048), '/demo/access-denied', {
    env: 'PLATFORM_DEMO_ACCESS_DENIED_PATH',
    description: 'Refusal page the demo gate redirects a denied browser to (303)',
  }),
  'hosted_ai.provisioner_url': envOnly(url, null, {
    env: 'PLATFORM_HOSTED_AI_PROVISIONER_URL',
    description:
      'Provisioner issuing the hosted demo its AI key and credit readings (unset: not a provisioned instance)',
  }),
  'hosted_ai.provisioner_client_id': envOnly(string(200), null, {
    env: 'PLATFORM_HOSTED_AI_PROVISIONER_CLIENT_ID',
    description: 'Client id this deployment presents to the hosted AI provisioner',
  }),
  'hosted_ai.provisioner_client_secret': envOnly(string(), null, {
    env: 'PLATFORM_HOSTED_AI_PROVISIONER_CLIENT_SECRET',
    secret: true,
    description: 'Client secret this deployment presents to the hosted AI provisioner',
  }),
  'hosted_ai.ai_only': envOnly(boolean, false, {
    env: 'PLATFORM_HOSTED_AI_ONLY',
    description: 'The hosted demo uses only the hosted AI (reported as `ai_only` by GET /api/hosted-ai/status)',
  }),
} as const satisfies Record<string, SettingDef<never, unknown> | SettingDef<unknown, unknown>>;

/**
 * Branding fields (`PUT /api/config/branding` writes these same paths; one store, one validator each).
 * No default: the web app shows its own when a field is unset.
 */
function brandingSettings() {
  const kind = <T>(schema: z.ZodType<T>) => checked('string', schema);
  const f = BRANDING_FIELD_SCHEMAS;
  return {
    'branding.product_name': setting(kind(f.product_name), null, { description: 'Product name shown in the UI' }),
    'branding.primary_color': setting(kind(f.primary_color), null, { description: 'Primary UI colour (#rrggbb)' }),
    'branding.accent_color': setting(kind(f.accent_color), null, { description: 'Accent UI colour (#rrggbb)' }),
    'branding.support_url': setting(kind(f.support_url), null, { description: 'Support page (https)' }),
    'branding.support_email': setting(kind(f.support_email), null, { description: 'Support e-mail address' }),
    'branding.sign_in_message': setting(kind(f.sign_in_message), null, { description: 'Message on the sign-in page' }),
  } as const;
}

export type SettingPath = keyof typeof SETTINGS;
type Def<P extends SettingPath> = (typeof SETTINGS)[P];
/** The effective value's type: the kind's type, or null when the default is none. */
export type SettingValue<P extends SettingPath> =
  Def<P> extends SettingDef<infer T, infer D> ? T | (D extends null ? null : never) : never;

export const SETTING_PATHS = Object.keys(SETTINGS) as SettingPath[];

export function isSettingPath(path: string): path is SettingPath {
  return Object.hasOwn(SETTINGS, path);
}

export function settingDef(path: SettingPath): SettingDef {
  return SETTINGS[path] as unknown as SettingDef;
}

/** A section is any dotted prefix of a path (`etl`, `enhancements.code_agent`). */
export function pathsInSection(section: string): SettingPath[] {
  return SETTING_PATHS.filter((p) => p.startsWith(`${section}.`));
}

/** Every env name a setting reads, for the config loader to keep. */
export const SETTING_ENV_NAMES = [
  ...new Set(SETTING_PATHS.map((p) => settingDef(p).env).filter((e): e is string => !!e)),
];
