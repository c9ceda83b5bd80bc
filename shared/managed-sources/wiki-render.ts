import MarkdownIt from 'markdown-it';
import sanitizeHtml from 'sanitize-html';

/**
 * Markdown to safe HTML: markdown-it (raw HTML allowed in the source, GitHub-like) followed by
 * sanitize-html with an allow-list, so scripts, event-handler attributes, `javascript:` and other
 * non-web URLs never reach a reader, whatever a repository or a commenter wrote.
 */
const md = new MarkdownIt({ html: true, linkify: true, typographer: false });

const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img', 'del', 's', 'input'],
  allowedAttributes: {
    a: ['href', 'title', 'id'],
    img: ['src', 'alt', 'title', 'width', 'height'],
    code: ['class'],
    th: ['align', 'style'],
    td: ['align', 'style'],
    input: ['type', 'checked', 'disabled'],
    '*': ['id'],
  },
  allowedClasses: { code: [/^language-[A-Za-z0-9_+-]+$/] },
  allowedStyles: { th: { 'text-align': [/^(left|right|center)$/] }, td: { 'text-align': [/^(left|right|center)$/] } },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['http', 'https'] },
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
};

export type Token = ReturnType<MarkdownIt['parse']>[number];

/** Parses Markdown into tokens (for link extraction and rewriting before rendering). */
export function parseMarkdown(source: string): Token[] {
  return md.parse(source, {});
}

/** Renders tokens (possibly with rewritten links) and sanitizes the HTML. */
export function renderTokens(tokens: Token[]): string {
  return sanitizeHtml(md.renderer.render(tokens, md.options, {}), SANITIZE);
}

export function renderMarkdown(source: string): string {
  return renderTokens(parseMarkdown(source));
}

/** Every `link_open` token's href, in document order (inline children included). */
export function linkTokens(tokens: Token[]): Token[] {
  const out: Token[] = [];
  for (const t of tokens) {
    if (t.type === 'link_open') out.push(t);
    if (t.children) out.push(...linkTokens(t.children));
  }
  return out;
}

/** The first level-1 heading's text, if any. */
export function firstHeading(tokens: Token[]): string | null {
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.type === 'heading_open' && t.tag === 'h1') {
      const text = tokens[i + 1]?.children
        ?.filter((c) => c.type === 'text' || c.type === 'code_inline')
        .map((c) => c.content)
        .join('')
        .trim();
      if (text) return text.slice(0, 300);
    }
  }
  return null;
}
