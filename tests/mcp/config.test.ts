import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/config.js';

describe('gateway configuration', () => {
  it('uses the origin of PLATFORM_MCP_PUBLIC_URL over PLATFORM_PUBLIC_BASE_URL', () => {
    const c = loadConfig({
      PLATFORM_MCP_PUBLIC_URL: 'https://mcp.example.com/mcp/',
      PLATFORM_PUBLIC_BASE_URL: 'https://app.example.com',
    });
    expect(c.mcp.publicOrigin).toBe('https://mcp.example.com');
    expect(loadConfig({ PLATFORM_PUBLIC_BASE_URL: 'https://app.example.com/x' }).mcp.publicOrigin).toBe(
      'https://app.example.com',
    );
    expect(loadConfig({}).mcp).toEqual({ publicOrigin: undefined, oauthProxyEnabled: false });
  });

  it('requires HTTPS except on loopback', () => {
    expect(() => loadConfig({ PLATFORM_MCP_PUBLIC_URL: 'http://mcp.example.com' })).toThrow(ConfigError);
    expect(() => loadConfig({ PLATFORM_MCP_PUBLIC_URL: 'not a url' })).toThrow(/PLATFORM_MCP_PUBLIC_URL/);
    expect(loadConfig({ PLATFORM_PUBLIC_BASE_URL: 'http://localhost:8080' }).mcp.publicOrigin).toBe(
      'http://localhost:8080',
    );
  });

  it('the OAuth proxy needs an issuer and a client id', () => {
    expect(() => loadConfig({ PLATFORM_OAUTH_PROXY_ENABLED: 'true' })).toThrow(/AUTH_ISSUER and AUTH_CLIENT_ID/);
    const c = loadConfig({
      PLATFORM_OAUTH_PROXY_ENABLED: 'yes',
      AUTH_ISSUER: 'https://idp.example',
      AUTH_CLIENT_ID: 'gw',
      AUTH_CLIENT_SECRET: 's',
    });
    expect(c.mcp.oauthProxyEnabled).toBe(true);
    expect(c.auth).toMatchObject({ clientId: 'gw', clientSecret: 's' });
    expect(loadConfig({ PLATFORM_OAUTH_PROXY_ENABLED: '0' }).mcp.oauthProxyEnabled).toBe(false);
  });

  it('splits extra client callbacks on commas and whitespace', () => {
    const c = loadConfig({ AUTH_MCP_CLIENT_REDIRECT_URIS: 'https://a.example/cb, myapp://x\nhttps://b.example/cb' });
    expect(c.auth.mcpClientRedirectUris).toEqual(['https://a.example/cb', 'myapp://x', 'https://b.example/cb']);
    expect(loadConfig({ PLATFORM_SIGNING_KEY: 'k' }).signingKey).toBe('k');
  });
});
