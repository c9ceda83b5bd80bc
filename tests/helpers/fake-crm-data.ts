import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { FakeCrm } from './fake-crm-types.js';

interface Parts {
  token(form: URLSearchParams, res: ServerResponse): Promise<unknown>;
  authorize(url: URL, res: ServerResponse): unknown;
  json(res: ServerResponse, status: number, body: unknown): void;
  restError(res: ServerResponse, status: number, errorCode: string, message: string): void;
  tick(): string;
  accessTokens: Set<string>;
}

const ENV = 'http://schemas.xmlsoap.org/soap/envelope/';
const soapFault = (code: string, message: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="${ENV}" xmlns:sf="urn:fault.partner.soap.sforce.com"><soapenv:Body><soapenv:Fault><faultcode>sf:${code}</faultcode><faultstring>${code}: ${message}</faultstring></soapenv:Fault></soapenv:Body></soapenv:Envelope>`;
const tag = (xml: string, name: string) =>
  [...xml.matchAll(new RegExp(`<(?:\\w+:)?${name}(?:\\s[^>]*)?>([^<]*)</(?:\\w+:)?${name}>`, 'g'))].map((m) => m[1]!);

/** REST data API and the SOAP merge of the fake CRM; the token endpoint and authorize come from `parts`. */
export async function finishFakeCrm(crm: FakeCrm, parts: Parts): Promise<FakeCrm> {
  const { json, restError } = parts;
  const dropped: ServerResponse[] = [];
  const hanging: ServerResponse[] = [];
  const cursors = new Map<string, Array<Record<string, unknown>>>();
  crm.releaseHanging = () => {
    for (const res of hanging.splice(0)) res.socket?.destroy();
  };

  /** One page of a result set from `offset`; the rest stays behind a `nextRecordsUrl` locator. */
  function queryPage(res: ServerResponse, locator: string, offset: number) {
    const rows = cursors.get(locator);
    if (!rows) return restError(res, 400, 'INVALID_QUERY_LOCATOR', 'invalid query locator');
    const records = rows.slice(offset, offset + crm.queryPageSize);
    const next = offset + records.length;
    const done = next >= rows.length;
    json(res, 200, {
      totalSize: rows.length,
      done,
      records,
      ...(done ? {} : { nextRecordsUrl: `/services/data/v62.0/query/${locator}-${next}` }),
    });
  }

  function merge(xml: string, res: ServerResponse) {
    crm.counts.soap++;
    if (crm.soapMode === 'hang') return void hanging.push(res);
    const send = (status: number, body: string) =>
      res.writeHead(status, { 'content-type': 'text/xml; charset=utf-8' }).end(body);
    if (!xml.includes(ENV) || !xml.includes('urn:partner.soap.sforce.com') || !/<(\w+:)?merge>/.test(xml))
      return send(500, soapFault('INVALID_XML', 'not a merge envelope'));
    const [session] = tag(xml, 'sessionId');
    if (!session || !parts.accessTokens.has(session))
      return send(500, soapFault('INVALID_SESSION_ID', 'Invalid Session ID found in SessionHeader'));
    const [type] = tag(xml, 'type');
    const [masterId] = tag(xml, 'Id');
    const losers = tag(xml, 'recordToMergeIds');
    const errors: string[] = [];
    const master = crm.records.get(masterId ?? '');
    if (!master || master.type !== type)
      errors.push(
        `<errors><fields></fields><message>invalid master</message><statusCode>INVALID_CROSS_REFERENCE_KEY</statusCode></errors>`,
      );
    for (const id of losers) {
      const r = crm.records.get(id);
      if (!r)
        errors.push(
          `<errors><message>invalid id ${id}</message><statusCode>INVALID_CROSS_REFERENCE_KEY</statusCode></errors>`,
        );
      else if (r.deleted)
        errors.push(`<errors><message>entity is deleted</message><statusCode>ENTITY_IS_DELETED</statusCode></errors>`);
    }
    const ok = errors.length === 0 && losers.length >= 1 && losers.length <= 2;
    if (ok) {
      for (const id of losers) crm.records.get(id)!.deleted = true;
      master!.lastModified = parts.tick();
    }
    if (ok && crm.soapMode === 'apply_then_drop') {
      dropped.push(res);
      return void res.socket?.destroy();
    }
    if (ok && crm.soapMode === 'apply_then_504') {
      return void res
        .writeHead(504, { 'content-type': 'text/html' })
        .end(`<html><body>504 Gateway Time-out: upstream ${masterId} secret-upstream-detail</body></html>`);
    }
    const result = ok
      ? `<id>${masterId}</id>${losers.map((l) => `<mergedRecordIds>${l}</mergedRecordIds>`).join('')}<success>true</success>`
      : `${errors.join('')}<id>${masterId}</id><success>false</success>`;
    send(
      200,
      `<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="${ENV}" xmlns="urn:partner.soap.sforce.com"><soapenv:Body><mergeResponse><result>${result}</result></mergeResponse></soapenv:Body></soapenv:Envelope>`,
    );
  }

  function rest(req: IncomingMessage, url: URL, raw: string, res: ServerResponse) {
    crm.calls.push({ method: req.method ?? 'GET', path: `${url.pathname}${url.search}` });
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (!parts.accessTokens.has(token)) return restError(res, 401, 'INVALID_SESSION_ID', 'Session expired or invalid');
    if (url.pathname === '/services/data/') return json(res, 200, [{ version: '62.0', url: '/services/data/v62.0' }]);
    const m = url.pathname.match(/^\/services\/data\/v62\.0\/sobjects\/(\w+)\/(\w+)$/);
    if (m) {
      const r = crm.records.get(m[2]!);
      if (!r || r.type !== m[1]) return restError(res, 404, 'NOT_FOUND', 'The requested resource does not exist');
      if (r.deleted) return restError(res, 404, 'ENTITY_IS_DELETED', 'entity is deleted');
      if (req.method === 'PATCH') {
        crm.counts.patch++;
        Object.assign(r.fields, JSON.parse(raw) as Record<string, unknown>);
        r.lastModified = parts.tick();
        return void res.writeHead(204).end();
      }
      const fields = (url.searchParams.get('fields') ?? '').split(',').filter(Boolean);
      const body: Record<string, unknown> = {
        attributes: { type: r.type, url: url.pathname },
        Id: m[2],
        LastModifiedDate: r.lastModified,
      };
      for (const f of fields) if (!(f in body)) body[f] = r.fields[f] ?? null;
      return json(res, 200, body);
    }
    if (url.pathname === '/services/data/v62.0/query') {
      const q = url.searchParams.get('q') ?? '';
      const sel = q.match(/^SELECT\s+(.+?)\s+FROM\s+(\w+)/i);
      if (!sel) return restError(res, 400, 'MALFORMED_QUERY', 'unexpected token');
      const fields = sel[1]!.split(',').map((f) => f.trim());
      const rows = [...crm.records.entries()].filter(([, r]) => r.type === sel[2] && !r.deleted);
      const records = rows.map(([id, r]) => ({
        attributes: { type: r.type },
        ...Object.fromEntries(fields.map((f) => [f, f === 'Id' ? id : (r.fields[f] ?? null)])),
      }));
      const locator = `01g${String(cursors.size + 1).padStart(15, '0')}`;
      cursors.set(locator, records);
      return queryPage(res, locator, 0);
    }
    const more = url.pathname.match(/^\/services\/data\/v62\.0\/query\/(\w+)-(\d+)$/);
    if (more) return queryPage(res, more[1]!, Number(more[2]));
    restError(res, 404, 'NOT_FOUND', 'The requested resource does not exist');
  }

  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', crm.url);
      if (url.pathname === '/services/oauth2/token' && req.method === 'POST')
        return void parts.token(new URLSearchParams(raw), res);
      if (url.pathname === '/services/oauth2/authorize') return parts.authorize(url, res);
      if (url.pathname === '/services/Soap/u/62.0' && req.method === 'POST') return merge(raw, res);
      if (url.pathname.startsWith('/services/data/')) return rest(req, url, raw, res);
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>login</html>');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  crm.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  crm.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return crm;
}
