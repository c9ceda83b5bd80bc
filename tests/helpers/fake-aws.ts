/**
 * What AWS checks on a SigV4-signed request, rebuilt here from AWS's documentation step by step
 * (independently of shared/aws/sigv4.ts): the fakes of Bedrock and STS refuse what AWS refuses,
 * with AWS's error codes.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';

export interface FakeAwsIdentity {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  account: string;
  arn: string;
}

export type SigV4Refusal = {
  code: 'UnrecognizedClientException' | 'InvalidSignatureException' | 'MissingAuthenticationTokenException';
  message: string;
};

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
/** RFC 3986 unreserved characters stay, everything else becomes %XX with upper-case hex. */
const encode = (v: string) =>
  Array.from(Buffer.from(v, 'utf8'))
    .map((b) => {
      const c = String.fromCharCode(b);
      return /[A-Za-z0-9\-_.~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');

/**
 * Verifies the request's `Authorization` header as AWS does: known access key (and session token),
 * scope naming today's date, the expected region and service, `host` and `x-amz-date` signed, the
 * time within five minutes, and the signature recomputed over what arrived.
 */
export function verifySigV4(
  req: IncomingMessage,
  body: string,
  identity: FakeAwsIdentity,
  region: string,
  service: string,
): SigV4Refusal | null {
  const auth = req.headers.authorization ?? '';
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(
      auth,
    );
  if (!m) return { code: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
  const [, keyId, date, scopeRegion, scopeService, signedHeaders, signature] = m as unknown as string[];
  if (keyId !== identity.accessKeyId)
    return { code: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  if (identity.sessionToken !== undefined && req.headers['x-amz-security-token'] !== identity.sessionToken)
    return { code: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const names = signedHeaders!.split(';');
  if (!names.includes('host') || !names.includes('x-amz-date') || !/^\d{8}T\d{6}Z$/.test(amzDate))
    return { code: 'InvalidSignatureException', message: "'Host' or 'X-Amz-Date' must be a signed header." };
  const sent = Date.parse(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
  );
  if (Math.abs(Date.now() - sent) > 5 * 60_000)
    return { code: 'InvalidSignatureException', message: 'Signature expired.' };
  if (date !== amzDate.slice(0, 8) || scopeRegion !== region || scopeService !== service)
    return {
      code: 'InvalidSignatureException',
      message: `Credential should be scoped to a valid region and service (expected ${region}/${service}).`,
    };
  const [rawPath, rawQuery = ''] = (req.url ?? '/').split('?');
  const canonicalUri = rawPath!.split('/').map(encode).join('/');
  const query = rawQuery
    .split('&')
    .filter(Boolean)
    .map((p) => p.split('=').map((x) => encode(decodeURIComponent(x ?? ''))) as [string, string])
    .map(([k, v = '']) => `${k}=${v}`)
    .sort()
    .join('&');
  const headerLines = names
    .map((n) => {
      const v = req.headers[n];
      return `${n}:${(Array.isArray(v) ? v.join(',') : (v ?? '')).trim().replace(/\s+/g, ' ')}\n`;
    })
    .join('');
  const canonical = [req.method, canonicalUri, query, headerLines, signedHeaders, sha256(body)].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, `${date}/${region}/${service}/aws4_request`, sha256(canonical)].join(
    '\n',
  );
  const kSigning = hmac(hmac(hmac(hmac(`AWS4${identity.secretAccessKey}`, date!), region), service), 'aws4_request');
  const expected = createHmac('sha256', kSigning).update(toSign).digest();
  const given = Buffer.from(signature!, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return {
      code: 'InvalidSignatureException',
      message:
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
    };
  return null;
}

/** Bedrock's (JSON protocol) refusal: 403, the code in `x-amzn-ErrorType`, `{message}` as the body. */
export function bedrockRefusal(refusal: SigV4Refusal): {
  status: number;
  headers: Record<string, string>;
  body: string;
} {
  return {
    status: 403,
    headers: {
      'content-type': 'application/json',
      'x-amzn-errortype': `${refusal.code}:http://internal.amazon.com/coral/com.amazon.coral.service/`,
    },
    body: JSON.stringify({ message: refusal.message }),
  };
}

export interface FakeSts {
  url: string;
  identity: FakeAwsIdentity;
  region: string;
  calls: number;
  close(): Promise<void>;
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => resolve(data));
  });

/** STS's query API on loopback: `GetCallerIdentity`, SigV4 service `sts`, XML answers and XML errors. */
export async function startFakeSts(identity: FakeAwsIdentity, region = 'us-east-1'): Promise<FakeSts> {
  const fake: FakeSts = {
    url: '',
    identity,
    region,
    calls: 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const xmlError = (status: number, code: string, message: string) =>
    `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>fake-request</RequestId></ErrorResponse>`;
  const server: Server = createServer(
    (req, res) =>
      void (async () => {
        fake.calls++;
        const body = await readBody(req);
        const send = (status: number, xml: string) => res.writeHead(status, { 'content-type': 'text/xml' }).end(xml);
        const params = new URLSearchParams(body);
        if (req.method !== 'POST' || params.get('Action') !== 'GetCallerIdentity')
          return send(400, xmlError(400, 'InvalidAction', 'Could not find operation.'));
        const refusal = verifySigV4(req, body, fake.identity, fake.region, 'sts');
        if (refusal) {
          const code =
            refusal.code === 'UnrecognizedClientException'
              ? 'InvalidClientTokenId'
              : refusal.code === 'MissingAuthenticationTokenException'
                ? 'MissingAuthenticationToken'
                : 'SignatureDoesNotMatch';
          return send(403, xmlError(403, code, refusal.message));
        }
        send(
          200,
          `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>${fake.identity.arn}</Arn><UserId>AIDAFAKE</UserId><Account>${fake.identity.account}</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>fake-request</RequestId></ResponseMetadata></GetCallerIdentityResponse>`,
        );
      })(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return fake;
}
