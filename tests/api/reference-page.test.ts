/**
 * The `/docs` reference page as a reader sees it, rendered from the document `/openapi.json` serves
 * (`platformOpenApi(allRoutes())`): shared responses are spelled out, integer limits are real ones, and the
 * side menu shows every path whole. The layout is measured in the system Chromium.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReferencePage } from '../../api/http/reference-page.js';
import { allRoutes } from '../../api/routes/index.js';
import { platformOpenApi } from '../../api/routes/meta.js';
import { CHROMIUM_INSTALL_TIMEOUT_MS, launchChromium } from '../helpers/browser.js';

type Json = Record<string, any>;

let doc: Json;
let html: string;
let browser: Browser | undefined;

beforeAll(async () => {
  doc = platformOpenApi(allRoutes());
  html = renderReferencePage(doc);
  browser = await launchChromium();
}, CHROMIUM_INSTALL_TIMEOUT_MS);
afterAll(async () => {
  await browser?.close();
});

const operations = () => Object.values(doc.paths as Json).flatMap((ops: Json) => Object.values(ops) as Json[]);

/**
 * The side menu's links and any horizontal overflow, measured in the page (a string: this project's TypeScript has
 * no DOM library).
 */
const LAYOUT = `(() => {
  const nav = document.querySelector('nav');
  const links = [...nav.querySelectorAll('li a')];
  return {
    links: links.length,
    clipped: links
      .filter((a) => a.scrollWidth > a.clientWidth || a.getBoundingClientRect().right > nav.clientWidth)
      .map((a) => a.title),
    untitled: links.filter((a) => a.title !== a.textContent.replace(/^(\\w+)/, '$1 ')).map((a) => a.textContent),
    navOverflow: nav.scrollWidth - nav.clientWidth,
    pageOverflow: document.documentElement.scrollWidth - window.innerWidth,
  };
})()`;

/** The HTML of one operation's section. */
const section = (operationId: string) => {
  const start = html.indexOf(`<section class="op" id="${operationId}">`);
  expect(start).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf('</section>', start));
};

describe('the /docs reference page', () => {
  it('spells out every shared response (405, 413, 415, 431, 404) with its description and schema', () => {
    expect(html).not.toContain('undefined');
    const shared = doc.components.responses as Record<string, Json>;
    let referenced = 0;
    for (const op of operations()) {
      const text = section(op.operationId);
      for (const [status, response] of Object.entries(op.responses as Record<string, Json>)) {
        if (typeof response.$ref !== 'string') continue;
        referenced++;
        const target = shared[response.$ref.split('/').pop()!]!;
        const summary = `<summary><code>${status}</code> ${target.description.replace(/'/g, '&#39;')}</summary>`;
        expect(text, `${op.operationId} ${status}`).toContain(summary);
      }
    }
    expect(referenced).toBeGreaterThan(operations().length * 2);
    const echo = section('runEchoJob');
    const tooLarge = echo.slice(echo.indexOf('<code>413</code>'));
    expect(tooLarge.slice(0, tooLarge.indexOf('</details>'))).toContain('<code>error_type</code>');
  });

  it("shows a response's declared headers (the proposal create's Idempotent-Replayed)", () => {
    const section = html.slice(html.indexOf('id="createActionReviewProposal"'));
    const start = section.indexOf('<code>201</code>');
    const created = section.slice(start, section.indexOf('</details>', start));
    expect(created).toContain('Header <code>Idempotent-Replayed</code>: `true` when this answer is the proposal');
  });

  it('shows real integer limits, and the safe-integer limit a request keeps as 2^53 − 1, never as 9007199254740991', () => {
    const outsideRawSchemas = html.replace(/<pre class="schema">[\s\S]*?<\/pre>/g, '');
    expect(outsideRawSchemas).not.toContain('9007199254740991');
    expect(section('approveActionReviewProposal')).toContain('<td>≥ 1; ≤ 2^53 − 1</td>');
    expect(section('listActionReviewProposals')).toContain('integer (≥ 1; ≤ 200; default 50)');
  });

  it('shows every path of the side menu whole, wrapping at slashes, with the full path as its title', async () => {
    const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
    try {
      await page.setContent(html, { waitUntil: 'domcontentloaded' });
      const layout = (await page.evaluate(LAYOUT)) as Record<string, unknown>;
      expect(layout.links).toBe(operations().length);
      expect(layout).toMatchObject({ clipped: [], untitled: [], navOverflow: 0, pageOverflow: 0 });
    } finally {
      await page.close();
    }
  });
});
