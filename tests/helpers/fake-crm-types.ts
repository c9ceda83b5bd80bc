/** The fake CRM's shape, apart from its two halves (fake-crm.ts: tokens and authorize; fake-crm-data.ts: REST and SOAP), which both use it. */

export interface FakeRecord {
  type: string;
  fields: Record<string, unknown>;
  lastModified: string;
  deleted: boolean;
}

export interface FakeCrm {
  url: string;
  /** The instance URL the token endpoint reports (the org's own host); `url` unless set. */
  instanceUrl?: string;
  records: Map<string, FakeRecord>;
  /** Connected app: consumer key/secret, the uploaded certificate's public key (SPKI PEM), the registered callback. */
  app: {
    clientId: string;
    clientSecret: string;
    publicKeyPem: string;
    callbackUrl: string;
    jwtUser: string;
    runAsUser: boolean;
  };
  /** Behaves as the standard login host (refuses client credentials) unless false. */
  customDomain: boolean;
  /**
   * `ok` answers the merge; `apply_then_drop` applies it and drops the connection before answering;
   * `apply_then_504` applies it, then answers like a proxy that gave up waiting (504, an HTML page);
   * `hang` holds the request unanswered (nothing applied) until `releaseHanging`.
   */
  soapMode: 'ok' | 'apply_then_drop' | 'apply_then_504' | 'hang';
  counts: { soap: number; patch: number; token: Record<string, number> };
  /** Every REST data API request as received (method, path with query), in order. */
  calls: Array<{ method: string; path: string }>;
  /** Rows per query page; more rows come through `nextRecordsUrl`, as the real API pages them. */
  queryPageSize: number;
  revokeAccessTokens(): void;
  /** Drops the connections of held (`hang`) merge requests, so the caller sees the answer lost. */
  releaseHanging(): void;
  issueRefreshToken(): string;
  /** Changes a field the way a CRM user would (new LastModifiedDate). */
  touch(id: string, field: string, value: unknown): void;
  close(): Promise<void>;
}
