import { describe, expect, it } from 'vitest';
import { BUILT_IN_CLIENT_CALLBACKS, checkClientRedirectUri } from '../../api/mcp/oauth/redirect-uris.js';

const listed = ['https://tools.example.com/oauth/cb', 'myapp://callback', 'http://intranet.example/cb'];
const check = (uri: string) => checkClientRedirectUri(uri, listed);

describe('client redirect-URI rules', () => {
  it.each([
    ['http://localhost:3000/callback', 'loopback'],
    ['http://127.0.0.1:49152/', 'loopback'],
    ['http://[::1]:8080/cb', 'loopback'],
    ['https://localhost/cb', 'loopback'],
    ['http://LOCALHOST:1/x', 'loopback'],
    ['https://claude.ai/api/mcp/auth_callback', 'built_in'],
    ['cursor://anysphere.cursor-mcp/oauth/callback', 'built_in'],
    ['https://tools.example.com/oauth/cb', 'configured'],
    ['myapp://callback', 'configured'],
    ['http://intranet.example/cb', 'configured'],
  ])('accepts %s (%s)', (uri, kind) => {
    expect(check(uri)).toEqual({ ok: true, kind });
  });

  it('accepts every built-in callback exactly', () => {
    for (const { uri } of BUILT_IN_CLIENT_CALLBACKS) expect(checkClientRedirectUri(uri, []).ok).toBe(true);
  });

  it.each([
    ['javascript:alert(1)', 'unsafe_scheme'],
    ['data:text/html,hi', 'unsafe_scheme'],
    ['vbscript:msgbox', 'unsafe_scheme'],
    ['file:///etc/passwd', 'unsafe_scheme'],
    ['blob:https://a.example/1', 'unsafe_scheme'],
    ['about:blank', 'unsafe_scheme'],
    ['not a uri', 'malformed'],
    ['/relative/cb', 'malformed'],
    ['http://localhost:3000/cb#frag', 'fragment'],
    ['http://user:pw@localhost/cb', 'credentials'],
    ['http://evil.example/cb', 'not_https'],
    ['myapp://other', 'not_https'],
    ['https://evil.example/cb', 'not_listed'],
    ['https://claude.ai/api/mcp/auth_callback/extra', 'not_listed'],
    ['https://tools.example.com/oauth/cb?x=1', 'not_listed'],
    ['http://127.0.0.1.evil.example/cb', 'not_https'],
    ['https://localhost.evil.example/cb', 'not_listed'],
  ])('refuses %s (%s)', (uri, reason) => {
    const decision = check(uri);
    expect(decision.ok).toBe(false);
    if (!decision.ok) expect(decision.reason).toBe(reason);
  });

  it('refuses an unsafe scheme even when an administrator listed it', () => {
    expect(checkClientRedirectUri('javascript:alert(1)', ['javascript:alert(1)'])).toMatchObject({
      ok: false,
      reason: 'unsafe_scheme',
    });
  });
});
