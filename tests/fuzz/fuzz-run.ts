/**
 * One schemathesis run against a whole stack started here: embedded PostgreSQL, the Temporal dev
 * server, the worker and the API with authentication ON (a local identity provider's JWKS; the
 * fuzzer sends an admin's bearer token). `tests/fuzz/schemathesis.test.ts` runs this script inside a
 * fresh network namespace, so the only network anything here can reach is its own loopback.
 *
 * Environment: SCHEMATHESIS_BIN (the `st` executable), FUZZ_MAX_SECONDS (time budget), the
 * usual TEMPORAL_CLI_PATH so nothing is installed from inside the namespace, and WORKFLOW_BUNDLE_PATH
 * (the test run's workflow bundle, so the stack's worker does not bundle again).
 * Exit status: schemathesis's own (0 only when every check passed).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startBenchStack } from '../../bench/lib/stack.js';
import { exportSPKI, generateKeyPair } from 'jose';
import { startFakeOidc } from '../helpers/fake-oidc.js';

/**
 * Two passes over one stack. The first checks every operation for server errors, undocumented
 * statuses and responses that break their schema. The second checks that schema-valid requests are
 * accepted, except on the operations `POSITIVE_EXCLUDED` names, whose refusals are rules no JSON
 * Schema can state.
 */
export const CONFORMANCE_CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'response_schema_conformance',
  'content_type_conformance',
];
export const POSITIVE_EXCLUDED = [
  // The MCP gateway is a protocol endpoint (any JSON-RPC message; a random one is a JSON-RPC error by design; GET/DELETE answer 405 when stateless); tests/mcp drives it with the SDK's client.
  '^/mcp',
  // OAuth endpoints enforce the protocol's own rules (PKCE, registered redirect URIs, single-use codes bound to a client).
  '^/(authorize|oauth/)',
  // CRM connections and merges: per-auth-mode fields, host checks, an existing connection that answers, a survivor distinct from its losers; each refusal names its rule (tests/crm).
  '^/api/(connections|crm/merge)',
  // Encryption-key enable/verify and the mesh auth key routes answer 400 outside container-service mode (a deployment setting the fuzz stack does not turn on, since it would restrict the stack's own outbound calls); the advertise tags' total length is a cross-item limit (tests/secrets).
  '^/api/secrets/(encryption-key/(enable|verify-setup)|mesh-auth-key)',
  // A license must carry the vendor's signature, and a logo must be an image by its bytes (tests/config-misc).
  '^/api/license/activate',
  '^/api/config/branding/logo/',
  // Hosted identity links exist only with AUTH_PROVIDER=hosted (404 elsewhere) and need a management assertion or a bound caller (tests/hosted).
  '^/api/hosted-identities/',
  // Desktop mode is off in the fuzz stack (a deployment setting), so its routes answer 404/409 by design; tests/desktop drives them with a fake provisioner.
  '^/api/desktop/',
  // A blueprint import must be a ZIP holding a valid blueprint_manifest.yaml, and a grant must name a configured role (spec: 400 otherwise; tests/blueprints).
  '^/api/blueprints/import$',
  // Its multipart form takes at most 4 fields besides the file (413 max_fields); the schema's maxProperties counts the file part too, so five text fields pass it.
  '^/api/blueprints/import/preview$',
  '^/api/blueprints/[^/]+/access/grant$',
  // The service-desk webhook's authentication is an HMAC signature over the raw body (401 without it; tests/tracker).
  '^/api/config/tracker-automation/service-desk/webhook$',
  // A configuration apply's `content` is YAML/JSON text: its setting paths, their types and which are process-level are rules no JSON Schema of the body states (400/422 otherwise, nothing written; tests/config).
  '^/api/config/setup/apply',
  // A local_cli.run.v1 proposal must name a command on the deployment's allow-list (LOCAL_CLI_ALLOWED_COMMANDS, empty here): 400 command_not_allowed otherwise (tests/action-review).
  '^/api/action-review/proposals$',
  // Language-model providers: per-kind rules across fields (rules 3 to 5), and operations on a provider that must be saved, marked configured and admitted first (400/404/409; tests/config/llm-*).
  '^/api/config/(llm-providers/|models/embeddings/config$|[^/]+/test-connection$)',
  // Hosted AI activation and credit answer 404 on a deployment without a hosted AI provisioner (the fuzz stack), and activation needs the demo owner (tests/demo).
  '^/api/hosted-ai/(activate|credit)$',
  // A Git remote must be a host the egress policy allows: one it never allows (e.g. 0.0.0.0, loopback without PLATFORM_EGRESS_ALLOW_PRIVATE) is refused at save, 400 GIT_EGRESS_REFUSED, a rule about addresses no JSON Schema states (tests/managed-sources/egress).
  '^/api/(managed-sources|(skills|apps|flows)/repositories)$',
  // Tool calls: each tool's arguments are published, but an action_review proposal's payload is checked against its action type's own schema, and other tools refer to records that must exist (400/404; tests/api/tool-arguments, tests/action-review).
  '^/api/tool_call$',
].join('|');

const st = process.env.SCHEMATHESIS_BIN;
if (!st) throw new Error('SCHEMATHESIS_BIN is not set');
const maxSeconds = Number(process.env.FUZZ_MAX_SECONDS ?? 120);
/**
 * CI derandomizes (as Hypothesis advises for CI): a fixed seed, so a submission is judged on the same
 * cases as the one before it and a finding reproduces. Elsewhere every run explores new cases, and
 * FUZZ_SEED replays one (each pass prints its seed).
 */
const CI_SEED = '20261123';
const seed = process.env.FUZZ_SEED || (process.env.CI === 'true' ? CI_SEED : undefined);

const idp = await startFakeOidc({ subject: 'fuzz-admin', roles: ['admin'] });
const stack = await startBenchStack({
  AUTH_PROVIDER: 'oidc',
  PLATFORM_OAUTH_PROXY_ENABLED: 'true',
  AUTH_CLIENT_ID: idp.clientId,
  AUTH_CLIENT_SECRET: idp.clientSecret,
  AUTH_JWKS_URL: idp.jwksUrl,
  AUTH_ISSUER: idp.issuer,
  AUTH_AUDIENCE: idp.audience,
  PLATFORM_SERVICE_TOKEN: 'fuzz-service-token',
  PLATFORM_INTERNAL_TOKEN: 'fuzz-internal-token',
  // Only loopback exists in the namespace; the policy says the same wherever this runs.
  PLATFORM_EGRESS_ALLOW_PRIVATE: 'false',
  // Licensing and the hosted docs configured, so their routes answer as a deployment using them would.
  PLATFORM_LICENSE_PUBLIC_KEY: await exportSPKI((await generateKeyPair('EdDSA', { extractable: true })).publicKey),
  PLATFORM_DOCS_BASE_URL: 'https://docs.example.com/platform',
  PLATFORM_SIGNING_KEY: 'fuzz-signing-key-0123456789abcdef0123456789',
});
let code: number;
const scratch = await mkdtemp(path.join(os.tmpdir(), 'platform-fuzz-'));
try {
  const token = await idp.sign({ sub: 'fuzz-admin', name: 'Fuzz Admin', roles: ['admin'] });
  const common = [
    `${stack.api.url}/openapi.json`,
    '--header',
    `Authorization: Bearer ${token}`,
    '--header',
    'X-Platform-Internal-Token: fuzz-internal-token',
    '--max-time',
    String(Math.max(1, Math.floor(maxSeconds / 2))),
    // One worker: with two threads, hypothesis's lambda introspection trips CPython 3.11's ast.parse
    // ("AST constructor recursion depth mismatch"), a fuzzer crash rather than a finding.
    '--workers',
    '1',
    '--request-timeout',
    '30',
    '--phases',
    'examples,coverage,fuzzing',
    '--suppress-health-check',
    'all',
    ...(seed ? ['--seed', seed] : []),
  ];
  const passes = [
    ['run', '--checks', CONFORMANCE_CHECKS.join(','), ...common],
    ['run', '--checks', 'positive_data_acceptance', '--exclude-path-regex', POSITIVE_EXCLUDED, ...common],
  ];
  code = 0;
  for (const args of passes) {
    process.stdout.write(`\n[fuzz] st ${args.filter((a) => !a.startsWith('Authorization')).join(' ')}\n`);
    // In a scratch folder: schemathesis keeps a cache (.schemathesis/) in its working directory.
    const child = spawn(st, ['--no-color', ...args], {
      cwd: scratch,
      stdio: 'inherit',
      env: { ...process.env, NO_COLOR: '1' },
    });
    const [exit] = (await once(child, 'exit')) as [number | null];
    if (exit !== 0) code = exit ?? 1;
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
  await stack.close();
  await idp.close();
}
process.exit(code ?? 1);
