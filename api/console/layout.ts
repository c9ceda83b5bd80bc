import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Principal } from '../../shared/auth/principal.js';
import { html, type Html } from './html.js';

/**
 * Static assets, read once from `api/console/static/` and served under a content-hashed name
 * (`/console/static/<name>.<hash>.<ext>`, cached as immutable), so the CSP can stay `'self'` with
 * no inline script or style.
 */
export interface Asset {
  path: string;
  type: string;
  body: Buffer;
}

function loadAsset(file: string, type: string): Asset {
  const body = readFileSync(new URL(`./static/${file}`, import.meta.url));
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  const dot = file.lastIndexOf('.');
  return { path: `/console/static/${file.slice(0, dot)}.${hash}${file.slice(dot)}`, type, body };
}

let assets: { css: Asset; countdown: Asset } | undefined;
export function consoleAssets() {
  return (assets ??= {
    css: loadAsset('console.css', 'text/css; charset=utf-8'),
    countdown: loadAsset('countdown.js', 'text/javascript; charset=utf-8'),
  });
}

/** The console's Content-Security-Policy: nothing inline, nothing foreign, forms only to itself. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export interface PageContext {
  principal: Principal | null;
  csrfToken: string | null;
  /** AUTH_PROVIDER=none: everyone is the local admin. */
  localAdmin: boolean;
}

export function layout(
  page: PageContext,
  title: string,
  body: Html,
  options: { scripts?: Array<'countdown'>; current?: string } = {},
): string {
  const { css, countdown } = consoleAssets();
  const nav = [
    { href: '/console/proposals', label: 'Action Review' },
    { href: '/console/merges', label: 'CRM merges' },
    { href: '/console/threads', label: 'My threads' },
    { href: '/docs', label: 'API reference' },
  ];
  const scripts = (options.scripts ?? []).map((s) =>
    s === 'countdown' ? html`<script src="${countdown.path}" defer></script>` : html``,
  );
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · Review console</title>
        <link rel="stylesheet" href="${css.path}" />
        ${scripts}
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        ${page.localAdmin ? html`<div class="banner" role="status">Authentication is off (AUTH_PROVIDER=none): you are the local admin. Do not expose this deployment.</div>` : ''}
        <header class="top">
          <strong>Review console</strong>
          ${
            page.principal
              ? html`<nav aria-label="Console">
                    <ul>
                      ${nav.map(
                        (n) =>
                          html`<li>
                            <a href="${n.href}" ${options.current === n.href ? html` aria-current="page"` : ''}
                              >${n.label}</a
                            >
                          </li>`,
                      )}
                    </ul>
                  </nav>
                  <div class="who">
                    <span>Signed in as <strong data-testid="who">${page.principal.displayName}</strong></span> ${
                      page.localAdmin
                        ? ''
                        : html`<form method="post" action="/console/logout">
                            <input type="hidden" name="_csrf" value="${page.csrfToken ?? ''}" /><button
                              class="plain"
                              type="submit"
                            >
                              Sign out
                            </button>
                          </form>`
                    }
                  </div>`
              : ''
          }
        </header>
        <main id="main">
          <h1>${title}</h1>
          ${body}
        </main>
      </body>
    </html>`.value;
}

/** A hidden CSRF field for a form. */
export const csrfField = (page: PageContext) =>
  html`<input type="hidden" name="_csrf" value="${page.csrfToken ?? ''}" />`;

export const dateText = (iso: string | null | undefined) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—');
