import { z } from 'zod';
import { egressFetch, type EgressPolicy } from '../http/egress.js';

/**
 * The desktop provisioner's HTTP API as this platform uses it (an external service; tests run a fake
 * on loopback, tests/helpers/fake-provisioner.ts). Every call goes through the egress client and
 * carries the deployment's client credentials (`X-Client-Id`, `X-Client-Secret`); device calls add
 * the device credential as a bearer token.
 *
 * - `GET  {base}/authorize?response_type=code&client_id&redirect_uri&state` (the browser's page)
 * - `POST {base}/v1/desktop/token` `{code, redirect_uri}` → `{device_credential, ai_key: {id, secret}}`
 * - `POST {base}/v1/desktop/ai-keys/revoke` `{key_id}` → 2xx (404: already gone)
 * - `POST {base}/v1/desktop/activate` and `/check-in` `{app_version}` → `{llm, trial, version_policy}`
 * - `POST {base}/v1/desktop/sign-out`
 * - `GET  {base}/v1/desktop/credit` → `{model, max_budget_usd, spend_usd, alternatives, resets_at}`
 * - `GET  {base}/v1/desktop/update/{target}/{arch}/{current_version}` → 200 manifest, 204 none, 404 unknown
 * - `POST {base}/v1/desktop/diagnostics` `{trigger, total_bytes}` → `{upload_id, accept_encoding}` (gzip advertised there)
 * - `PUT  {base}/v1/desktop/diagnostics/{upload_id}/chunks/{index}` raw log bytes (gzip when advertised); 413 too large
 * - `POST {base}/v1/desktop/diagnostics/{upload_id}/complete` `{chunks, bytes}`
 *
 * - `POST {base}/v1/hosted/ai-keys` `{owner_sub, owner_email, owner_display_name}` → `{ai_key: {id, secret}}` (hosted demo AI)
 * - `GET  {base}/v1/hosted/credit?key_id` → the credit reading of that key (same fields as the desktop reading)
 *
 * Outcomes: `refused` (the provisioner answered 4xx: a refused code or device credential), `not_found`
 * (404 where that means "none"), `unavailable` (unreachable, 5xx, or an answer that is not the contract).
 */
export class ProvisionerError extends Error {
  override name = 'ProvisionerError';
  constructor(
    readonly kind: 'refused' | 'not_found' | 'unavailable',
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface ProvisionerSettings {
  baseUrl: string;
  clientId: string | null;
  clientSecret: string | null;
  egress: EgressPolicy;
}

export const LlmActivationSchema = z.object({
  returning: z.boolean(),
  plan_mode: z.string().max(64),
  remaining_usd: z.number().nullable(),
});
export type LlmActivation = z.infer<typeof LlmActivationSchema>;

export const TrialSchema = z
  .object({
    ends_at: z.string().max(64).nullable().optional(),
    days_left: z.number().int().nullable().optional(),
  })
  .nullable();

const VersionPolicySchema = z
  .object({
    min_version: z.string().max(64).nullable().default(null),
    recommended_version: z.string().max(64).nullable().default(null),
    message: z.string().max(2000).nullable().default(null),
    // Spec, Versioning 5: the download URL is HTTPS; another scheme is dropped, never shown.
    download_url: z
      .string()
      .max(2048)
      .nullable()
      .default(null)
      .transform((u) => (u !== null && /^https:\/\/[^\s]+$/i.test(u) ? u : null)),
  })
  .nullable()
  .default(null);

const TokenSchema = z.object({
  device_credential: z.string().min(1).max(4096),
  ai_key: z.object({ id: z.string().min(1).max(200), secret: z.string().min(1).max(4096) }),
});

const ActivationSchema = z.object({
  llm: LlmActivationSchema,
  trial: TrialSchema.default(null),
  version_policy: VersionPolicySchema,
});
export type ProvisionerActivation = z.infer<typeof ActivationSchema>;

const CreditSchema = z.object({
  model: z.string().max(200),
  max_budget_usd: z.number().nonnegative(),
  spend_usd: z.number().nonnegative(),
  alternatives: z.array(z.string().max(200)).max(50).default([]),
  resets_at: z.string().max(64).nullable().default(null),
});
export type ProvisionerCredit = z.infer<typeof CreditSchema>;

export const UpdateManifestSchema = z.object({
  version: z.string().max(64),
  url: z.string().max(2048),
  signature: z.string().max(8192).optional(),
  notes: z.string().max(20000).optional(),
  pub_date: z.string().max(64).optional(),
});
export type UpdateManifest = z.infer<typeof UpdateManifestSchema>;

const DiagnosticsUploadSchema = z.object({
  upload_id: z.string().min(1).max(200),
  accept_encoding: z.array(z.string().max(32)).max(10).default([]),
});

const TIMEOUT_MS = 15_000;

export class ProvisionerClient {
  constructor(private readonly s: ProvisionerSettings) {}

  authorizeUrl(redirectUri: string, state: string): string {
    const u = new URL(`${this.s.baseUrl.replace(/\/+$/, '')}/authorize`);
    u.searchParams.set('response_type', 'code');
    if (this.s.clientId) u.searchParams.set('client_id', this.s.clientId);
    u.searchParams.set('redirect_uri', redirectUri);
    u.searchParams.set('state', state);
    return u.toString();
  }

  async exchangeCode(code: string, redirectUri: string): Promise<z.infer<typeof TokenSchema>> {
    return this.parse(TokenSchema, await this.call('POST', '/v1/desktop/token', { code, redirect_uri: redirectUri }));
  }

  /** Removes an AI key; a key the provisioner no longer knows counts as removed. */
  async revokeAiKey(keyId: string, deviceCredential: string | null): Promise<void> {
    try {
      await this.call('POST', '/v1/desktop/ai-keys/revoke', { key_id: keyId }, deviceCredential);
    } catch (err) {
      if (err instanceof ProvisionerError && err.kind === 'not_found') return;
      throw err;
    }
  }

  async activate(kind: 'activate' | 'check-in', deviceCredential: string, appVersion: string | null) {
    const body = await this.call('POST', `/v1/desktop/${kind}`, { app_version: appVersion }, deviceCredential);
    return this.parse(ActivationSchema, body);
  }

  async signOut(deviceCredential: string): Promise<void> {
    await this.call('POST', '/v1/desktop/sign-out', {}, deviceCredential);
  }

  async credit(deviceCredential: string): Promise<ProvisionerCredit> {
    return this.parse(CreditSchema, await this.call('GET', '/v1/desktop/credit', undefined, deviceCredential));
  }

  /** The channel's manifest, or null when there is no update (204). */
  async update(deviceCredential: string, target: string, arch: string, current: string) {
    const path = `/v1/desktop/update/${encodeURIComponent(target)}/${encodeURIComponent(arch)}/${encodeURIComponent(current)}`;
    const body = await this.call('GET', path, undefined, deviceCredential);
    return body === null ? null : this.parse(UpdateManifestSchema, body);
  }

  async startDiagnostics(deviceCredential: string, trigger: string, totalBytes: number) {
    const body = await this.call(
      'POST',
      '/v1/desktop/diagnostics',
      { trigger, total_bytes: totalBytes },
      deviceCredential,
    );
    return this.parse(DiagnosticsUploadSchema, body);
  }

  /** One chunk; `too_large` when the provisioner answers 413. */
  async putDiagnosticsChunk(
    deviceCredential: string,
    uploadId: string,
    index: number,
    bytes: Uint8Array,
    gzip: boolean,
  ): Promise<'ok' | 'too_large'> {
    try {
      await this.call(
        'PUT',
        `/v1/desktop/diagnostics/${encodeURIComponent(uploadId)}/chunks/${index}`,
        bytes,
        deviceCredential,
        gzip ? { 'content-encoding': 'gzip' } : {},
      );
      return 'ok';
    } catch (err) {
      if (err instanceof ProvisionerError && err.status === 413) return 'too_large';
      throw err;
    }
  }

  async completeDiagnostics(deviceCredential: string, uploadId: string, chunks: number, bytes: number) {
    await this.call(
      'POST',
      `/v1/desktop/diagnostics/${encodeURIComponent(uploadId)}/complete`,
      { chunks, bytes },
      deviceCredential,
    );
  }

  /** Hosted demo: issues the deployment's AI key for its owner. */
  async issueHostedAiKey(owner: { owner_sub: string; owner_email: string; owner_display_name: string }) {
    const body = await this.call('POST', '/v1/hosted/ai-keys', owner);
    return this.parse(TokenSchema.shape.ai_key, (body as { ai_key?: unknown } | null)?.ai_key);
  }

  /** Hosted demo: the credit reading of the deployment's AI key. */
  async hostedCredit(keyId: string): Promise<ProvisionerCredit> {
    return this.parse(CreditSchema, await this.call('GET', `/v1/hosted/credit?key_id=${encodeURIComponent(keyId)}`));
  }

  private parse<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
    const parsed = schema.safeParse(body);
    if (!parsed.success) throw new ProvisionerError('unavailable', 'the provisioner answered outside its contract');
    return parsed.data;
  }

  /** One call; answers the JSON body, or null for 204. */
  private async call(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    body?: unknown,
    bearer?: string | null,
    extraHeaders: Record<string, string> = {},
  ): Promise<unknown> {
    const raw = body instanceof Uint8Array;
    const headers: Record<string, string> = { accept: 'application/json', ...extraHeaders };
    if (this.s.clientId) headers['x-client-id'] = this.s.clientId;
    if (this.s.clientSecret) headers['x-client-secret'] = this.s.clientSecret;
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (body !== undefined) headers['content-type'] = raw ? 'application/octet-stream' : 'application/json';
    let res: Response;
    try {
      res = await egressFetch(`${this.s.baseUrl.replace(/\/+$/, '')}${path}`, {
        policy: this.s.egress,
        method,
        headers,
        body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
        timeoutMs: TIMEOUT_MS,
        maxResponseBytes: 1024 * 1024,
      });
    } catch (err) {
      throw new ProvisionerError('unavailable', `the provisioner cannot be reached: ${(err as Error).message}`);
    }
    if (res.status === 204) return null;
    if (res.status === 404) throw new ProvisionerError('not_found', 'the provisioner does not know it', 404);
    if (res.status >= 400 && res.status < 500)
      throw new ProvisionerError('refused', `the provisioner refused (status ${res.status})`, res.status);
    if (!res.ok) throw new ProvisionerError('unavailable', `the provisioner failed (status ${res.status})`, res.status);
    try {
      const text = await res.text();
      return text.trim() === '' ? null : (JSON.parse(text) as unknown);
    } catch {
      throw new ProvisionerError('unavailable', 'the provisioner answered something that is not JSON');
    }
  }
}
