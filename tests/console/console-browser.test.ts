import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { exportPKCS8, exportSPKI, generateKeyPair } from 'jose';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { learning, propose, ticket, tool, waitFor } from '../action-review/support.js';
import { jwtConfig, LOSER_A, seedContacts, selection, SURVIVOR, type CrmStack } from '../crm/support.js';
import { CHROMIUM_INSTALL_TIMEOUT_MS, launchChromium } from '../helpers/browser.js';
import { startFakeCrm, type FakeCrm } from '../helpers/fake-crm.js';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import { startConsoleStack, type ConsoleStack } from './support.js';

// The README's screenshots are refreshed on purpose (`UPDATE_SCREENSHOTS=1 npx vitest run
// tests/console/console-browser.test.ts`); an ordinary run writes them to the git-ignored .data/ so
// `npm test` leaves the checkout clean.
const SCREENSHOTS = fileURLToPath(
  new URL(
    process.env.UPDATE_SCREENSHOTS === '1' ? '../../docs/screenshots/' : '../../.data/screenshots/',
    import.meta.url,
  ),
);

let c: ConsoleStack;
let crm: FakeCrm;
let browser: Browser;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await launchChromium();
  const keys = await generateKeyPair('RS256', { extractable: true });
  crm = await startFakeCrm(await exportSPKI(keys.publicKey));
  seedContacts(crm);
  c = await startConsoleStack({
    PLATFORM_SECRETS_KEY: 'test-secrets-key-of-at-least-32-bytes',
    TEMPORAL_UI_URL: 'http://127.0.0.1:8233',
  });
  const connection = await http(c.stack.url, 'POST', '/api/connections', {
    token: c.tokens.ada,
    body: {
      name: 'crm_main',
      type: 'crm',
      auth_mode: 'jwt_bearer',
      config: jwtConfig({ crm, privateKeyPem: await exportPKCS8(keys.privateKey) } as unknown as CrmStack),
    },
  });
  expect(connection.status, connection.text).toBe(201);
  context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
  watch(page);
}, CHROMIUM_INSTALL_TIMEOUT_MS);
afterEach(() => {
  // Any script error or CSP violation (reported on the console) fails the test that caused it.
  expect(pageErrors.splice(0)).toEqual([]);
});

const pageErrors: string[] = [];
function watch(p: Page) {
  p.on('pageerror', (err) => pageErrors.push(err.message));
  p.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) pageErrors.push(m.text());
  });
}
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await c?.close();
  await crm?.close();
});

/** How far the page is wider than the viewport (evaluated in the page). */
const OVERFLOW = 'document.documentElement.scrollWidth - document.documentElement.clientWidth';

/** Every visible form control on the page has its own label (keyboard and screen-reader users). */
async function expectLabelled(p: Page) {
  const controls = p.locator('textarea, select, input:not([type="hidden"]):not([type="checkbox"])');
  const n = await controls.count();
  for (let i = 0; i < n; i++) {
    const id = await controls.nth(i).getAttribute('id');
    expect(id, 'a form control without an id').toBeTruthy();
    expect(await p.locator(`label[for="${id}"]`).count()).toBe(1);
  }
}

const shot = (name: string, p: Page = page) => p.screenshot({ path: `${SCREENSHOTS}${name}.png` });

describe('review console in Chromium', () => {
  it('signs in through the identity provider (authorization code + PKCE)', async () => {
    await page.goto(`${c.stack.url}/console`);
    await expect.poll(() => new URL(page.url()).pathname).toBe('/console/login');
    await shot('sign-in');
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console\/proposals$/);
    expect(await page.getByTestId('who').textContent()).toBe('Olivia OAuth');
    const authorize = c.idp.authorizeRequests.at(-1)!;
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(c.idp.tokenRequests.at(-1)!.get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cookies = await context.cookies();
    const session = cookies.find((k) => k.name === 'platform_console_session')!;
    expect(session.httpOnly).toBe(true);
    expect(session.sameSite).toBe('Lax');
  });

  it('approves a proposal raised in a thread and shows the hand-back in that thread', async () => {
    await c.ownThread('thread-console-1');
    const agent = await c.agent('bot-console', 'thread-console-1');
    const created = await tool(c.stack.url, agent, { action: 'CREATE_PROPOSAL', ...learning(7) });
    expect(created.status, created.text).toBe(200);
    const id = created.body.data.result.proposal.proposal_id as string;

    await page.goto(`${c.stack.url}/console/proposals?status=requested`);
    await shot('inbox');
    await page.getByRole('link', { name: 'learning.adopt.v1' }).first().click();
    await page.waitForURL(new RegExp(`/console/proposals/${id}$`));
    await expect.poll(() => page.getByTestId('runs-it').textContent()).toContain('Approving runs it');
    expect(await page.getByRole('button', { name: 'Execute' }).count()).toBe(0);
    const temporalUi = await page.getByRole('link', { name: 'Open in the Temporal UI' }).getAttribute('href');
    expect(temporalUi).toMatch(/^http:\/\/127\.0\.0\.1:8233\/namespaces\/default\/workflows\//);
    expect(temporalUi).toContain(id);
    await expectLabelled(page);
    await shot('proposal');
    await page.getByLabel('Reason (optional)').first().fill('Agreed with the team');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.waitForURL(/done=approved/);
    expect(await page.getByTestId('notice').textContent()).toContain('Approved.');
    expect(await page.getByTestId('status').textContent()).toMatch(/approved|resolved|executed/);
    expect(await page.getByRole('button', { name: 'Approve', exact: true }).count()).toBe(0);
    expect(
      (
        await query<{ status: string }>(
          c.stack.db.url,
          'select status from action_review_proposals where proposal_id = $1',
          [id],
        )
      )[0]!.status,
    ).not.toBe('requested');

    await page.goto(`${c.stack.url}/console/threads`);
    await page.getByRole('link', { name: 'Thread thread-console-1' }).click();
    await waitFor(async () => {
      await page.reload();
      return (await page.getByTestId('handback').count()) > 0;
    }, 'the hand-back in the thread');
    const handback = await page.getByTestId('handback').textContent();
    expect(handback).toContain(`proposal ${id} was approved by Olivia OAuth`);
    expect(handback).toContain('Agreed with the team');
    expect(await page.getByTestId('raised').getByRole('link').first().getAttribute('href')).toBe(
      `/console/proposals/${id}`,
    );
    await shot('thread');
  });

  it('rejects a proposal with a reason', async () => {
    const id = await propose(c.stack.url, c.tokens.rita, ticket('Console rejection'));
    await page.goto(`${c.stack.url}/console/proposals/${id}`);
    await page.getByLabel('Reason', { exact: true }).fill('Duplicate of an open issue');
    await page.getByRole('button', { name: 'Reject' }).click();
    await page.waitForURL(/done=rejected/);
    expect(await page.getByTestId('status').textContent()).toContain('rejected');
    expect(await page.getByTestId('decision-reason').textContent()).toBe('Duplicate of an open issue');
    expect(await page.getByTestId('no-actions').textContent()).toContain('Nothing left to decide');
    const api = await http(c.stack.url, 'GET', `/api/action-review/proposals/${id}`, { token: c.tokens.rita });
    expect(api.body.data.status).toBe('rejected');
    expect(api.body.data.decision_reason).toBe('Duplicate of an open issue');
  });

  it('renders hostile proposal text inert', async () => {
    const hostile =
      '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><a href="javascript:alert(1)">x</a>';
    const long = 'A'.repeat(15_000);
    const id = await propose(c.stack.url, c.tokens.rita, {
      ...ticket(hostile),
      expected_effect: `${hostile} ${long}`,
    });
    await page.goto(`${c.stack.url}/console/proposals/${id}`);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(await page.getByTestId('expected-effect').textContent()).toContain('<script>window.__pwned = 1</script>');
    // No element came from the text: the page has no script, img or javascript: link at all.
    expect(await page.locator('script').count()).toBe(0);
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('a[href^="javascript:"]').count()).toBe(0);
    // The long string wraps instead of widening the page.
    const overflow = await page.evaluate(OVERFLOW);
    expect(overflow).toBeLessThanOrEqual(0);
    const phone = await context.newPage();
    watch(phone);
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${c.stack.url}/console/proposals/${id}`);
    expect(await phone.evaluate(OVERFLOW)).toBeLessThanOrEqual(0);
    await phone.close();
  });

  it('reviews, approves and executes a merge against the fake CRM', async () => {
    const requested = await http(c.stack.url, 'POST', '/api/crm/merge/approvals', {
      token: c.tokens.rita,
      body: selection(),
    });
    expect(requested.status, requested.text).toBe(201);
    const id = requested.body.data.approval_id as string;
    await page.goto(`${c.stack.url}/console/merges`);
    await page.getByRole('link', { name: `Contact ${SURVIVOR}` }).click();
    await page.waitForURL(new RegExp(`/console/merges/${id}$`));
    expect(await page.getByTestId('digest').textContent()).toBe(requested.body.data.digest);
    const table = page.locator('table.side-by-side');
    expect(await table.locator('thead').textContent()).toContain(LOSER_A);
    // Email comes from the loser that has one (prefer_non_null), and the page says which record.
    const email = table.locator('tbody tr', { hasText: 'Email' });
    expect(await email.locator('td.projected').textContent()).toBe('ada@example.com');
    expect(await email.textContent()).toContain(LOSER_A);
    await expect.poll(() => page.getByTestId('countdown').textContent()).toMatch(/left$/);
    await expectLabelled(page);
    await shot('merge');
    await page.getByRole('button', { name: 'Approve merge' }).click();
    await page.waitForURL(/done=merge-approved/);
    expect(await page.getByTestId('status').textContent()).toContain('approved');
    await page.getByRole('button', { name: 'Execute merge' }).click();
    await page.waitForURL(/done=merge-executed/);
    expect(await page.getByTestId('status').textContent()).toContain('merged');
    expect(await page.getByTestId('outcome').textContent()).toContain('executed');
    expect(crm.counts.soap).toBe(1);
    await shot('merge-executed');
  });

  it('counts an approval down to its expiry, then refuses approving it', async () => {
    seedContacts(crm);
    const requested = await http(c.stack.url, 'POST', '/api/crm/merge/approvals', {
      token: c.tokens.rita,
      body: { ...selection(), ttl_seconds: 3 },
    });
    expect(requested.status, requested.text).toBe(201);
    const id = requested.body.data.approval_id as string;
    await page.goto(`${c.stack.url}/console/merges/${id}`);
    const approve = page.getByRole('button', { name: 'Approve merge' });
    expect(await approve.isEnabled()).toBe(true);
    // Waits on the page's state (the countdown script's doing), not on a fixed time.
    await page
      .getByTestId('countdown')
      .filter({ hasText: /^Expired$/ })
      .waitFor({ timeout: 30_000 });
    expect(await approve.isDisabled()).toBe(true);
    // The page's countdown runs on the browser's clock; the workflow records the expiry on its own timer.
    await waitFor(
      async () =>
        (
          await query<{ status: string }>(
            c.stack.db.url,
            'select status from crm_merge_approvals where approval_id = $1',
            [id],
          )
        )[0]?.status === 'expired',
      'the workflow to record the expiry',
    );
    const refused = await http(c.stack.url, 'POST', `/api/crm/merge/approvals/${id}/approve`, {
      token: c.tokens.ada,
      body: {},
    });
    expect(refused.status).toBe(410);
    await page.reload();
    expect(await page.getByTestId('status').textContent()).toContain('expired');
    expect(await page.getByRole('button', { name: 'Approve merge' }).count()).toBe(0);
  });

  it('renders the API reference with field tables and examples, self-contained', async () => {
    await page.goto(`${c.stack.url}/docs#createActionReviewProposal`);
    const section = page.locator('#requestCrmMergeApproval');
    expect(await section.locator('table.fields').first().textContent()).toContain('connection_name');
    expect(await section.locator('pre.example').first().textContent()).toContain('"survivor_id"');
    await shot('docs');
  });

  it('signs out', async () => {
    const phone = await context.newPage();
    watch(phone);
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${c.stack.url}/console/proposals`);
    await shot('inbox-phone', phone);
    await phone.close();
    await page.goto(`${c.stack.url}/console/proposals`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/signed_out=1/);
    await page.goto(`${c.stack.url}/console/proposals`);
    await expect.poll(() => new URL(page.url()).pathname).toBe('/console/login');
  });
});
