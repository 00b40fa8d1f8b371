// Markdown to safe DOM: markdown-it (raw HTML off), highlight.js for code, DOMPurify on the result.
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/common";
import MarkdownIt from "markdown-it";

const md: MarkdownIt = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  highlight(code: string, lang: string): string {
    try {
      const html =
        lang && hljs.getLanguage(lang)
          ? hljs.highlight(code, { language: lang, ignoreIllegals: true }).value
          : md.utils.escapeHtml(code);
      return `<pre class="hljs"><code>${html}</code></pre>`;
    } catch {
      return "";
    }
  },
});

export function renderMarkdown(src: string): DocumentFragment {
  const html = md.render(src);
  return DOMPurify.sanitize(html, { RETURN_DOM_FRAGMENT: true }) as DocumentFragment;
}

/**
 * The length of the longest prefix of `text` that ends at a blank line outside a code
 * fence: that part renders the same whatever comes after, so it is rendered once.
 */
export function stablePrefix(text: string): number {
  let inFence = false;
  let fence = "";
  let cut = 0;
  let pos = 0;
  while (pos < text.length) {
    const nl = text.indexOf("\n", pos);
    if (nl < 0) break; // the last line may still grow
    const line = text.slice(pos, nl);
    const m = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (!inFence) {
        inFence = true;
        fence = m[1]!;
      } else if (line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, "") === "") {
        inFence = false;
      }
    } else if (!inFence && line.trim() === "" && pos > 0) {
      cut = nl + 1;
    }
    pos = nl + 1;
  }
  return cut;
}
