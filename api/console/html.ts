/**
 * The console's one escaping template helper. `html` is a tagged template: every interpolated value
 * is escaped for HTML text and attribute context unless it is itself `Html` built by `html` (or an
 * array of such). Pages never concatenate strings: untrusted text from agents, CRMs or people can
 * only ever reach the page as escaped text.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

export const escapeHtml = (text: string): string => text.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);

type Interpolation = Html | string | number | boolean | null | undefined | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map((v: Interpolation) => render(v)).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Joins fragments (each already escaped or escaped here). */
export const join = (parts: readonly Interpolation[]): Html => new Html(render(parts));

/**
 * A URL safe to put in `href`: same-origin paths, or http(s) URLs; anything else (javascript:, data:)
 * becomes `#`. The result is still escaped by `html` when interpolated.
 */
export function safeHref(url: string | null | undefined): string {
  if (!url) return '#';
  if (url.startsWith('/') && !url.startsWith('//')) return url;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.toString() : '#';
  } catch {
    return '#';
  }
}

/** A table in its scrolling wrapper: one header cell a column, the rows as given, an optional screen-reader caption. */
export function dataTable(
  columns: readonly Interpolation[],
  rows: Interpolation,
  opts: { caption?: string; className?: string } = {},
): Html {
  return html`<div class="table-wrap">
    <table${opts.className ? html` class="${opts.className}"` : ''}>
      ${
        opts.caption
          ? html`<caption class="skip">
              ${opts.caption}
            </caption>`
          : ''
      }
      <thead>
        <tr>
          ${join(columns.map((c) => html`<th scope="col">${c}</th>`))}
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>
  </div>`;
}
