import { afterEach, describe, expect, it, vi } from 'vitest';

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

describe('browser test harness', () => {
  it('fails with exactly what to install when the named Chromium is missing (never skips)', async () => {
    vi.stubEnv('CHROMIUM_PATH', '/nonexistent/chromium');
    const { ensureChromium } = await import('../helpers/browser.js');
    await expect(ensureChromium()).rejects.toThrow(
      /Chromium was not found at \/nonexistent\/chromium\. .*apt-get install -y chromium/,
    );
  });
});
