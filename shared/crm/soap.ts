import { CrmApiError } from './errors.js';
import { CRM_API_VERSION, type CrmSession } from './session.js';

/** The SOAP `merge` call (PROTOCOLS.md): merge has no REST endpoint. */
const NS_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';
const NS_PARTNER = 'urn:partner.soap.sforce.com';
const NS_SOBJECT = 'urn:sobject.partner.soap.sforce.com';

export const SOAP_PATH = `/services/Soap/u/${CRM_API_VERSION}`;

const escapeXml = (s: string) =>
  s.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!);

export interface MergeRequest {
  kind: string;
  masterId: string;
  loserIds: string[];
  /** Fields to overwrite on the master as part of the merge (we write survivor fields by PATCH first, so usually empty). */
  masterFields?: Record<string, string>;
}

export function mergeEnvelope(sessionId: string, req: MergeRequest): string {
  const fields = Object.entries(req.masterFields ?? {})
    .map(([k, v]) => `<ens:${k}>${escapeXml(v)}</ens:${k}>`)
    .join('');
  const losers = req.loserIds.map((id) => `<urn:recordToMergeIds>${escapeXml(id)}</urn:recordToMergeIds>`).join('');
  return (
    `<?xml version="1.0" encoding="UTF-8"?>` +
    `<soapenv:Envelope xmlns:soapenv="${NS_ENV}" xmlns:urn="${NS_PARTNER}" xmlns:ens="${NS_SOBJECT}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">` +
    `<soapenv:Header><urn:SessionHeader><urn:sessionId>${escapeXml(sessionId)}</urn:sessionId></urn:SessionHeader></soapenv:Header>` +
    `<soapenv:Body><urn:merge><urn:request>` +
    `<urn:masterRecord xsi:type="ens:${req.kind}"><ens:type>${req.kind}</ens:type><ens:Id>${escapeXml(req.masterId)}</ens:Id>${fields}</urn:masterRecord>` +
    losers +
    `</urn:request></urn:merge></soapenv:Body></soapenv:Envelope>`
  );
}

export interface MergeResult {
  success: boolean;
  id: string | null;
  mergedRecordIds: string[];
  updatedRelatedIds: string[];
  errors: Array<{ statusCode: string; message: string; fields: string[] }>;
}

/** Tag contents by local name, whatever prefix the server chose. */
const all = (xml: string, tag: string) =>
  [...xml.matchAll(new RegExp(`<(?:[\\w-]+:)?${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</(?:[\\w-]+:)?${tag}>`, 'g'))].map(
    (m) => m[1]!,
  );
const one = (xml: string, tag: string) => all(xml, tag)[0] ?? null;
const unescapeXml = (s: string) =>
  s.replace(/&(lt|gt|amp|apos|quot);/g, (_, e: string) => ({ lt: '<', gt: '>', amp: '&', apos: "'", quot: '"' })[e]!);

/** A SOAP Fault, if the body is one: `{faultcode, faultstring}` (e.g. `sf:INVALID_SESSION_ID`). */
export function soapFault(xml: string): { code: string; message: string } | null {
  const fault = one(xml, 'Fault');
  if (fault === null) return null;
  return {
    code: unescapeXml(one(fault, 'faultcode') ?? 'soap:Fault'),
    message: unescapeXml(one(fault, 'faultstring') ?? ''),
  };
}

export function parseMergeResponse(xml: string): MergeResult {
  const result = one(xml, 'result');
  if (result === null) throw new Error('the merge response has no result element');
  return {
    success: one(result, 'success') === 'true',
    id: one(result, 'id'),
    mergedRecordIds: all(result, 'mergedRecordIds'),
    updatedRelatedIds: all(result, 'updatedRelatedIds'),
    errors: all(result, 'errors').map((e) => ({
      statusCode: one(e, 'statusCode') ?? 'UNKNOWN',
      message: unescapeXml(one(e, 'message') ?? ''),
      fields: all(e, 'fields'),
    })),
  };
}

const isSessionFault = (_res: Response, text: string) => /INVALID_SESSION_ID/.test(soapFault(text)?.code ?? '');

/**
 * Calls `merge`. An invalid-session fault is retried once with a new token (the CRM did nothing
 * with it); any other fault is a CrmApiError. Network failures propagate untouched so the caller
 * can tell "never sent" from "sent, answer lost".
 */
export async function mergeRecords(session: CrmSession, req: MergeRequest): Promise<MergeResult> {
  const { res, text } = await session.fetch(
    SOAP_PATH,
    { method: 'POST', headers: { 'content-type': 'text/xml; charset=UTF-8', soapaction: '""', accept: 'text/xml' } },
    (token) => ({ body: mergeEnvelope(token, req) }),
    isSessionFault,
  );
  const fault = soapFault(text);
  if (fault) throw new CrmApiError(res.status, fault.code.replace(/^\w+:/, ''), fault.message);
  if (!res.ok) throw new CrmApiError(res.status, `HTTP_${res.status}`, text);
  return parseMergeResponse(text);
}
