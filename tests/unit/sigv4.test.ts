import { describe, expect, it } from 'vitest';
import { canonicalQuery, canonicalUri, signV4, signingKey } from '../../shared/aws/sigv4.js';

// AWS's published SigV4 test suite (aws-sig-v4-test-suite): the example credentials, time, region and service.
const EXAMPLE = {
  region: 'us-east-1',
  service: 'service',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
  now: new Date('2015-08-30T12:36:00Z'),
};
const PREFIX =
  'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=';

describe('SigV4 against the AWS test-suite vectors', () => {
  it('get-vanilla: canonical request, string to sign and signature', () => {
    const s = signV4({
      ...EXAMPLE,
      method: 'GET',
      url: new URL('https://example.amazonaws.com/'),
      headers: {},
      body: '',
    });
    expect(s.canonicalRequest).toBe(
      'GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n' +
        'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
    expect(s.stringToSign).toBe(
      'AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n' +
        'bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63',
    );
    expect(s.authorization).toBe(`${PREFIX}5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31`);
    expect(s.headers['x-amz-date']).toBe('20150830T123600Z');
  });

  it('post-vanilla', () => {
    const s = signV4({
      ...EXAMPLE,
      method: 'POST',
      url: new URL('https://example.amazonaws.com/'),
      headers: {},
      body: '',
    });
    expect(s.authorization).toBe(`${PREFIX}5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b`);
  });

  it('get-vanilla-query-order-key-case: the query is sorted before signing', () => {
    const s = signV4({
      ...EXAMPLE,
      method: 'GET',
      url: new URL('https://example.amazonaws.com/?Param2=value2&Param1=value1'),
      headers: {},
      body: '',
    });
    expect(s.authorization).toBe(`${PREFIX}b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500`);
  });

  it('derives the signing key by the HMAC chain and changes with every input', () => {
    const key = signingKey(EXAMPLE.credentials.secretAccessKey, '20150830', 'us-east-1', 'service');
    expect(key).toHaveLength(32);
    expect(signingKey(EXAMPLE.credentials.secretAccessKey, '20150830', 'us-east-1', 'bedrock').equals(key)).toBe(false);
  });

  it('signs a session token and double-encodes path segments (Bedrock model ids with a colon)', () => {
    const s = signV4({
      ...EXAMPLE,
      credentials: { ...EXAMPLE.credentials, sessionToken: 'tok' },
      method: 'POST',
      url: new URL('https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A1/invoke'),
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(s.signedHeaders).toBe('content-type;host;x-amz-date;x-amz-security-token');
    expect(s.canonicalRequest.split('\n')[1]).toBe('/model/anthropic.claude-v2%253A1/invoke');
    expect(s.headers['x-amz-security-token']).toBe('tok');
    expect(canonicalUri('/a b/c')).toBe('/a%20b/c');
    expect(canonicalQuery('?b=2&a=1&A=0')).toBe('A=0&a=1&b=2');
  });
});
