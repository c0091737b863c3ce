// The answers' Markdown, with libraries from the npm registry vendored in static/vendor/
// (refresh.sh; versions in VERSIONS): markdown-it (CommonMark with tables and strikethrough)
// turns the text into HTML with raw HTML off and images off (nothing is loaded from outside),
// highlight.js colours code, and DOMPurify sanitises the result before the page shows it (a
// second wall: markdown-it already escapes every HTML tag and refuses javascript: links).
// `renderInto` also gives every code block a Copy button.
//
// Under node (tests/js/), with no DOM, `toHtml` works; `render` needs DOMPurify, hence a window.

import { highlighter, markdownIt, purifier } from './vendor.js';

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

function highlight(code, lang) {
  const hljs = highlighter();
  const known = !!(hljs && lang && hljs.getLanguage(lang));
  const body = known ? hljs.highlight(code, { language: lang, ignoreIllegals: true }).value : escapeHtml(code);
  const cls = 'hljs' + (lang ? ' language-' + escapeHtml(lang) : '');
  return '<pre><code class="' + cls + '">' + body + '</code></pre>';
}

let md = null;
function parser() {
  if (md) return md;
  md = markdownIt()({ html: false, linkify: true, breaks: false, highlight });
  md.disable('image');
  // Links open in a new tab, and tell the other page nothing.
  const open = md.renderer.rules.link_open || ((tokens, i, options, _env, self) => self.renderToken(tokens, i, options));
  md.renderer.rules.link_open = (tokens, i, options, env, self) => {
    tokens[i].attrSet('target', '_blank');
    tokens[i].attrSet('rel', 'noopener noreferrer');
    return open(tokens, i, options, env, self);
  };
  return md;
}

/** Markdown → HTML (not yet sanitised). */
export function toHtml(markdown) {
  return parser().render(String(markdown || ''));
}

/** Markdown → sanitised HTML, safe for innerHTML. */
export function render(markdown) {
  return purifier().sanitize(toHtml(markdown), {
    ADD_ATTR: ['target'],
    FORBID_TAGS: ['style', 'img', 'form', 'input', 'button', 'textarea', 'select'],
  });
}

/** Shows `markdown` in `node`, each code block with a Copy button. */
export function renderInto(node, markdown) {
  node.innerHTML = render(markdown);
  for (const pre of node.querySelectorAll('pre')) {
    // A bar above the code (its language, Copy), so that Copy never covers a line of it.
    const box = document.createElement('div');
    box.className = 'code-block';
    pre.replaceWith(box);
    const head = document.createElement('div');
    head.className = 'code-head';
    const code = pre.querySelector('code');
    const language = code && /(?:^|\s)language-([\w+#-]+)/.exec(code.className);
    const label = document.createElement('span');
    label.className = 'code-lang';
    label.textContent = language ? language[1] : 'code';
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'copy-code';
    copy.textContent = 'Copy';
    copy.setAttribute('aria-label', 'Copy code');
    head.append(label, copy);
    box.append(head, pre);
  }
}

// The text goes to the clipboard (the async API where the page may use it, else a selection
// and the old command); the button says whether it worked.
async function copyText(text) {
  try {
    if (navigator.clipboard && globalThis.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch (_) { /* fall back below */ }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  let done = false;
  try { done = document.execCommand('copy'); } catch (_) { done = false; }
  area.remove();
  return done;
}

if (globalThis.document) {
  document.addEventListener('click', async (event) => {
    const button = event.target.closest && event.target.closest('button.copy-code');
    if (!button) return;
    const code = button.parentNode.querySelector('pre code') || button.parentNode.querySelector('pre');
    const text = code ? code.textContent : '';
    const ok = await copyText(text);
    button.dataset.copied = String(ok);
    button.textContent = ok ? 'Copied' : 'Copy failed';
    setTimeout(() => { button.textContent = 'Copy'; delete button.dataset.copied; }, 2000);
  });
}
