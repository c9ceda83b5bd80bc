import { CrmApiError } from './errors.js';
import { CRM_API_VERSION, type CrmSession } from './session.js';
import type { CrmRecord } from './survivorship.js';

const DATA = `/services/data/v${CRM_API_VERSION}`;

/** REST errors are `[{message, errorCode, fields}]`; anything else is reported by status (the text goes to the log only). */
function apiError(status: number, text: string): CrmApiError {
  try {
    const list = JSON.parse(text) as Array<{ message?: string; errorCode?: string }>;
    const first = Array.isArray(list) ? list[0] : undefined;
    if (first?.errorCode) return new CrmApiError(status, first.errorCode, first.message ?? '');
  } catch {
    // not JSON: fall through
  }
  return new CrmApiError(status, `HTTP_${status}`, text);
}

/** Reads one record's fields (plus Id and LastModifiedDate). */
export async function getRecord(session: CrmSession, kind: string, id: string, fields: string[]): Promise<CrmRecord> {
  const list = [...new Set(['Id', 'LastModifiedDate', ...fields])].join(',');
  const { res, text } = await session.fetch(
    `${DATA}/sobjects/${kind}/${encodeURIComponent(id)}?fields=${encodeURIComponent(list)}`,
    { method: 'GET' },
  );
  if (!res.ok) throw apiError(res.status, text);
  const body = JSON.parse(text) as Record<string, unknown>;
  const values: Record<string, unknown> = {};
  for (const f of fields) values[f] = body[f] ?? null;
  return { id: String(body.Id ?? id), lastModified: String(body.LastModifiedDate ?? ''), fields: values };
}

export interface QueryResult {
  totalSize: number;
  records: Array<Record<string, unknown>>;
  truncated: boolean;
}

/** Runs a SOQL query, following `nextRecordsUrl` until `maxRows` rows are read. */
export async function queryRecords(session: CrmSession, soql: string, maxRows: number): Promise<QueryResult> {
  const records: Array<Record<string, unknown>> = [];
  let path: string | undefined = `${DATA}/query?q=${encodeURIComponent(soql)}`;
  let totalSize = 0;
  while (path && records.length < maxRows) {
    const { res, text } = await session.fetch(path, { method: 'GET' });
    if (!res.ok) throw apiError(res.status, text);
    const body = JSON.parse(text) as {
      totalSize: number;
      done: boolean;
      nextRecordsUrl?: string;
      records: Array<Record<string, unknown>>;
    };
    totalSize = body.totalSize;
    records.push(...body.records);
    path = body.done ? undefined : body.nextRecordsUrl;
  }
  return { totalSize, records: records.slice(0, maxRows), truncated: totalSize > maxRows || records.length > maxRows };
}

/** PATCH one record's fields (204 on success). */
export async function updateRecord(
  session: CrmSession,
  kind: string,
  id: string,
  fields: Record<string, unknown>,
): Promise<void> {
  const { res, text } = await session.fetch(`${DATA}/sobjects/${kind}/${encodeURIComponent(id)}`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fields),
  });
  if (!res.ok) throw apiError(res.status, text);
}

/** The connection test's instance check: the versions list needs no particular permission. */
export async function listVersions(session: CrmSession): Promise<void> {
  const { res, text } = await session.fetch('/services/data/', { method: 'GET' });
  if (!res.ok) throw apiError(res.status, text);
}
