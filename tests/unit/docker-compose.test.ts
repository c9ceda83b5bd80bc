/**
 * The production deployment description (docker-compose.yml + Dockerfile) stays consistent with the
 * repository: every service it needs exists, dependencies point at real services, mounted files
 * exist, the search attributes match temporal-config/search-attributes.json, and the image runs as
 * a non-root user. Where the `docker compose` CLI is installed, `docker compose config` validates
 * the file against the Compose specification too (it needs no Docker engine). The Prometheus
 * configuration passes `promtool check config` (`ensurePromtool`: Debian's promtool, unpacked into the
 * tools folder when none is installed; never skipped).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../shared/config.js';
import { createApiMetrics } from '../../shared/observability/metrics.js';
import { ensurePromtool, PROMTOOL_INSTALL_TIMEOUT_MS } from '../helpers/promtool.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const composePath = path.join(root, 'docker-compose.yml');
const composeText = readFileSync(composePath, 'utf8');

type DependsOn = string[] | Record<string, { condition?: string }>;
interface Service {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, unknown> | string[];
  env_file?: unknown;
  depends_on?: DependsOn;
  volumes?: (string | { type?: string; source?: string; target?: string })[];
  profiles?: string[];
  ports?: string[];
  shm_size?: string | number;
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

// `merge: true`: the file shares settings through YAML merge keys (`<<: *platform-env`).
const compose = parse(composeText, { merge: true }) as ComposeFile;
const services = compose?.services ?? {};

const REQUIRED_SERVICES = ['postgres', 'temporal', 'temporal-setup', 'temporal-ui', 'migrate', 'worker', 'api'];

function dependsOn(service: Service): string[] {
  const deps = service.depends_on;
  if (!deps) return [];
  return Array.isArray(deps) ? deps : Object.keys(deps);
}

function envNames(service: Service): string[] {
  const env = service.environment;
  if (!env) return [];
  if (Array.isArray(env)) return env.map((entry) => entry.split('=')[0]!);
  return Object.keys(env);
}

function asText(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(' ') : (value ?? '');
}

/** The host side of a bind mount, or undefined for named volumes and anonymous ones. */
function hostPath(volume: string | { type?: string; source?: string }): string | undefined {
  if (typeof volume === 'string') {
    const parts = volume.split(':');
    return parts.length > 1 ? parts[0] : undefined;
  }
  return volume.type === 'bind' || volume.source?.startsWith('.') ? volume.source : undefined;
}

describe('docker-compose.yml', () => {
  it('is YAML with a services map', () => {
    expect(compose).toBeTypeOf('object');
    expect(compose.services).toBeTypeOf('object');
    expect(Array.isArray(compose.services)).toBe(false);
  });

  it('defines every service the deployment needs', () => {
    for (const name of REQUIRED_SERVICES) expect(Object.keys(services), name).toContain(name);
  });

  it('depends only on defined services', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const target of dependsOn(service)) {
        expect(services, `${name} depends on undefined service ${target}`).toHaveProperty([target]);
      }
    }
  });

  it("gives PostgreSQL a /dev/shm above pgvector's parallel HNSW build memory (Docker's 64 MiB fails every build)", () => {
    const postgres = services.postgres!;
    // `${VAR:-default}` as Compose reads it with VAR unset.
    const resolved = String(postgres.shm_size ?? '64mb').replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');
    const match = /^(\d+)\s*([kmg]?)b?$/i.exec(resolved);
    expect(match, `shm_size ${resolved}`).not.toBeNull();
    const bytes = Number(match![1]) * 1024 ** ' kmg'.indexOf((match![2] || ' ').toLowerCase());
    // The worker's build memory as configured for it (the default when Compose does not set it).
    const worker = services.worker!;
    const env = Array.isArray(worker.environment) ? {} : (worker.environment ?? {});
    const buildMb = loadConfig({
      DATABASE_URL: 'postgres://x@127.0.0.1/x',
      ...(env.PLATFORM_DOCUMENT_INDEX_HNSW_BUILD_MEMORY_MB
        ? { PLATFORM_DOCUMENT_INDEX_HNSW_BUILD_MEMORY_MB: String(env.PLATFORM_DOCUMENT_INDEX_HNSW_BUILD_MEMORY_MB) }
        : {}),
    }).documentIndex.hnswBuildMemoryMb;
    expect(bytes).toBeGreaterThan(1.25 * buildMb * 2 ** 20);
    expect(asText(postgres.command)).toMatch(/shared_buffers=/);
  });

  it('runs the API and the worker as separate services built from the Dockerfile, configured by environment', () => {
    expect(services.api).not.toBe(services.worker);
    for (const name of ['api', 'worker', 'migrate']) {
      const service = services[name]!;
      const build = typeof service.build === 'string' ? { context: service.build } : service.build;
      expect(build, `${name} is built`).toBeDefined();
      expect(path.resolve(root, build!.context ?? '.'), `${name} build context`).toBe(path.resolve(root));
      expect(build!.dockerfile ?? 'Dockerfile', `${name} dockerfile`).toBe('Dockerfile');
      expect(service.env_file, `${name} uses no env_file`).toBeUndefined();
    }
    expect(asText(services.api!.command)).toContain('dist/api/server.js');
    expect(asText(services.worker!.command)).toContain('dist/worker/index.js');
    expect(asText(services.migrate!.command)).toContain('dist/scripts/migrate.js');
    for (const name of ['api', 'worker']) {
      const env = envNames(services[name]!);
      expect(env, name).toContain('DATABASE_URL');
      expect(env, name).toContain('TEMPORAL_ADDRESS');
      // The API seals secrets and the worker opens them: one shared key, never a per-container file.
      expect(env, name).toEqual(expect.arrayContaining(['PLATFORM_SECRETS_KEY', 'PLATFORM_SIGNING_KEY']));
    }
    expect(envNames(services.migrate!)).toContain('DATABASE_URL');
  });

  it('orders start-up: migrations and search attributes before the worker, the worker before the API', () => {
    const conditions = (name: string) => services[name]!.depends_on as Record<string, { condition?: string }>;
    expect(conditions('worker').migrate?.condition).toBe('service_completed_successfully');
    expect(conditions('worker')['temporal-setup']?.condition).toBe('service_completed_successfully');
    expect(conditions('api').migrate?.condition).toBe('service_completed_successfully');
    expect(Object.keys(conditions('api'))).toContain('worker');
    expect(conditions('temporal').postgres?.condition).toBe('service_healthy');
    expect(conditions('temporal-setup').temporal?.condition).toBe('service_healthy');
  });

  it('mounts only host paths that exist in the repository', () => {
    const mounted: string[] = [];
    for (const service of Object.values(services)) {
      for (const volume of service.volumes ?? []) {
        const source = hostPath(volume);
        if (source?.startsWith('./')) mounted.push(source);
      }
    }
    expect(mounted).toContain('./temporal-config/dynamic-config.yaml');
    expect(mounted).toContain('./temporal-config/observability/prometheus.yml');
    for (const source of mounted) expect(existsSync(path.resolve(root, source)), source).toBe(true);
  });

  it('registers every search attribute of temporal-config/search-attributes.json in temporal-setup', () => {
    const file = JSON.parse(readFileSync(path.join(root, 'temporal-config/search-attributes.json'), 'utf8')) as {
      searchAttributes: Record<string, string>;
    };
    const attributes = Object.entries(file.searchAttributes);
    expect(attributes.length).toBeGreaterThan(0);
    const setup = services['temporal-setup']!;
    const script = `${asText(setup.entrypoint)} ${asText(setup.command)}`;
    expect(script).toContain('temporal operator search-attribute create');
    for (const [name, type] of attributes) expect(script, name).toContain(`${name}:${type}`);
  });
});

describe('docker-compose.yml observability profile', () => {
  const OBSERVABILITY = ['prometheus', 'grafana', 'jaeger'];
  const observabilityDir = path.join(root, 'temporal-config/observability');
  const prometheus = parse(readFileSync(path.join(observabilityDir, 'prometheus.yml'), 'utf8')) as {
    scrape_configs: {
      job_name: string;
      metrics_path?: string;
      authorization?: { type?: string; credentials?: string; credentials_file?: string };
      static_configs: { targets: string[] }[];
    }[];
  };
  /** Keys of one scrape config that Prometheus 2.42 (Debian bookworm's package) does not know: promtool refuses them. */
  const NEWER_SCRAPE_KEYS = ['http_headers'];

  it('runs Prometheus, Grafana and Jaeger only under the observability profile; the platform needs no profile', () => {
    for (const name of OBSERVABILITY) expect(services[name]?.profiles, name).toEqual(['observability']);
    for (const name of REQUIRED_SERVICES) expect(services[name]!.profiles, name).toBeUndefined();
  });

  it('scrapes the API with the internal token from a file and the worker on its SDK metrics port', () => {
    const api = prometheus.scrape_configs.find((c) => c.static_configs.some((s) => s.targets.includes('api:8080')));
    expect(api?.metrics_path ?? '/metrics').toBe('/metrics');
    // A bearer token from a file: what GET /metrics accepts besides X-Platform-Internal-Token.
    expect(api?.authorization).toMatchObject({ type: 'Bearer' });
    expect(api?.authorization?.credentials).toBeUndefined();
    const tokenFile = api?.authorization?.credentials_file;
    expect(tokenFile).toBeDefined();
    // The prometheus service writes PLATFORM_INTERNAL_TOKEN to that file at start; the token is never in the config.
    expect(asText(services.prometheus!.command)).toContain(`> ${tokenFile}`);
    expect(envNames(services.prometheus!)).toContain('PLATFORM_INTERNAL_TOKEN');
    const workerAddress = String(
      (services.worker!.environment as Record<string, unknown>).TEMPORAL_WORKER_METRICS_ADDRESS ?? '',
    );
    const workerPort = /:(\d+)\}?$/.exec(workerAddress)?.[1];
    expect(workerPort, workerAddress).toBeDefined();
    const worker = prometheus.scrape_configs.find((c) =>
      c.static_configs.some((s) => s.targets.includes(`worker:${workerPort}`)),
    );
    expect(worker, `a scrape job for worker:${workerPort}`).toBeDefined();
    // The worker's metrics port stays on the compose network.
    expect(services.worker!.ports).toBeUndefined();
  });

  it('uses only scrape settings the Prometheus versions Debian ships understand', () => {
    for (const job of prometheus.scrape_configs)
      for (const key of NEWER_SCRAPE_KEYS) expect(Object.keys(job), job.job_name).not.toContain(key);
  });

  it(
    "passes `promtool check config` (Debian's promtool unpacked into the tools folder when none is installed)",
    async () => {
      const promtool = await ensurePromtool();
      // --syntax-only: the token file exists only inside the prometheus container.
      const result = spawnSync(
        promtool,
        ['check', 'config', '--syntax-only', path.join(observabilityDir, 'prometheus.yml')],
        { encoding: 'utf8', timeout: 30_000 },
      );
      expect(result.status, `${result.stdout}${result.stderr}`).toBe(0);
    },
    PROMTOOL_INSTALL_TIMEOUT_MS,
  );

  it('sends traces to Jaeger over OTLP only when OTEL_EXPORTER_OTLP_ENDPOINT is set', () => {
    for (const name of ['api', 'worker'])
      expect(envNames(services[name]!), name).toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
    expect(composeText).toContain('OTEL_EXPORTER_OTLP_ENDPOINT: ${OTEL_EXPORTER_OTLP_ENDPOINT:-}');
    expect(composeText).toContain(
      'OTEL_EXPORTER_OTLP_ENDPOINT=http://jaeger:4318 docker compose --profile observability up',
    );
    expect(String((services.jaeger!.environment as Record<string, unknown>).COLLECTOR_OTLP_ENABLED)).toBe('true');
  });

  it('provisions Grafana with Prometheus and Jaeger data sources and the platform dashboard', () => {
    const mounts = (services.grafana!.volumes ?? []).map((v) =>
      typeof v === 'string' ? v : `${v.source}:${v.target}`,
    );
    expect(mounts).toContain('./temporal-config/observability/grafana/provisioning:/etc/grafana/provisioning:ro');
    expect(mounts).toContain('./temporal-config/observability/grafana/dashboards:/var/lib/grafana/dashboards:ro');
    const datasources = parse(
      readFileSync(path.join(observabilityDir, 'grafana/provisioning/datasources/datasources.yml'), 'utf8'),
    ) as { datasources: { uid: string; type: string; url: string }[] };
    expect(datasources.datasources).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ uid: 'prometheus', type: 'prometheus', url: 'http://prometheus:9090' }),
        expect.objectContaining({ type: 'jaeger', url: 'http://jaeger:16686' }),
      ]),
    );
    const providers = parse(
      readFileSync(path.join(observabilityDir, 'grafana/provisioning/dashboards/dashboards.yml'), 'utf8'),
    ) as { providers: { options: { path: string } }[] };
    expect(providers.providers[0]!.options.path).toBe('/var/lib/grafana/dashboards');
  });

  it('has a dashboard whose every panel queries Prometheus for metrics the API or the worker serves', () => {
    const dashboard = JSON.parse(
      readFileSync(path.join(observabilityDir, 'grafana/dashboards/platform.json'), 'utf8'),
    ) as { uid: string; panels: { title: string; datasource: { uid: string }; targets: { expr: string }[] }[] };
    expect(dashboard.uid).toBeTruthy();
    const apiFamilies = new Set(
      createApiMetrics()
        .registry.getMetricsAsArray()
        .map((m) => m.name),
    );
    const names = new Set<string>();
    for (const panel of dashboard.panels) {
      expect(panel.datasource.uid, panel.title).toBe('prometheus');
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const { expr } of panel.targets)
        for (const m of expr.matchAll(/\b((?:http|platform|temporal)_[a-z_]+)\b/g)) names.add(m[1]!);
    }
    for (const name of names) {
      if (name.startsWith('temporal_')) continue; // checked against a live worker in tests/observability/worker-metrics.test.ts
      expect(apiFamilies, name).toContain(name.replace(/_(bucket|count|sum)$/, ''));
    }
    for (const required of [
      'platform_action_review_proposals',
      'platform_action_review_events_total',
      'platform_crm_merge_approvals_expiring',
      'platform_thread_turns_total',
      'platform_llm_spend_usd_total',
      'http_request_duration_seconds_bucket',
    ])
      expect(names, required).toContain(required);
  });
});

describe('Dockerfile', () => {
  const dockerfilePath = path.join(root, 'Dockerfile');

  it('exists and its final stage runs as a non-root user', () => {
    expect(existsSync(dockerfilePath)).toBe(true);
    const lines = readFileSync(dockerfilePath, 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'));
    const lastFrom = lines.findLastIndex((line) => /^FROM\s/i.test(line));
    expect(lastFrom).toBeGreaterThanOrEqual(0);
    const users = lines.slice(lastFrom).filter((line) => /^USER\s/i.test(line));
    expect(users.length, 'final stage sets USER').toBeGreaterThan(0);
    const user = users.at(-1)!.split(/\s+/)[1]!.split(':')[0]!;
    expect(['root', '0']).not.toContain(user);
  });

  it('ships the workflow sources next to the compiled worker (the bundler reads dist/workflows/index.ts)', () => {
    const text = readFileSync(dockerfilePath, 'utf8');
    expect(text).toMatch(/workflows\/?\.? +dist\/workflows/);
  });
});

function composeCliWorks(): boolean {
  const result = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8', timeout: 20_000 });
  return result.status === 0;
}

describe('docker compose config', () => {
  it.skipIf(!composeCliWorks())('validates the file against the Compose specification', () => {
    // Every `${VAR:?message}` must be set for `config` to succeed: give dummy values.
    const required = new Set([...composeText.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*):?\?/g)].map((m) => m[1]!));
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of required) env[name] = env[name] || `dummy-${name.toLowerCase()}`;
    const result = spawnSync('docker', ['compose', '-f', composePath, 'config', '-q'], {
      cwd: root,
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status, result.stderr || result.error?.message).toBe(0);
  });
});
