// static/markdown.js without a browser: the vendored markdown-it and highlight.js load as the
// page loads them (classic scripts that define globals, which static/vendor.js hands to the
// modules), and the Markdown real models write comes out as HTML elements; nothing the model
// writes becomes HTML of its own (markdown-it's wall: raw HTML off, links checked, images off).
// (DOMPurify, the second wall, needs a DOM: the browser tests cover it.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

const vendor = await import('../../static/vendor.js');
const missing = (() => { try { vendor.markdownIt(); return null; } catch (error) { return error.message; } })();
for (const file of ['vendor/markdown-it.min.js', 'vendor/highlight.min.js']) {
  vm.runInThisContext(readFileSync(new URL('../../static/' + file, import.meta.url), 'utf8'), { filename: 'static/' + file });
}
const { toHtml, escapeHtml } = await import('../../static/markdown.js');

test('the vendor shim says which library is missing, then hands out the loaded ones', () => {
  assert.match(missing, /markdownit is not loaded/);
  assert.equal(typeof vendor.markdownIt(), 'function');
  assert.equal(typeof vendor.highlighter().highlight, 'function');
  assert.throws(() => vendor.purifier(), /DOMPurify is not loaded/);
});

test('a table becomes a table', () => {
  const html = toHtml('| file | lines |\n|---|---:|\n| a.rs | 12 |\n| b.rs | 3 |\n');
  assert.match(html, /<table>/);
  assert.equal((html.match(/<tr>/g) || []).length, 3);
  assert.match(html, /<td style="text-align:right">12<\/td>/);
});

test('a nested list stays nested', () => {
  const html = toHtml('- one\n  - one.a\n  - one.b\n- two\n');
  assert.match(html, /<li>one\n<ul>\n<li>one.a<\/li>/);
});

test('an ordered list goes on after a code block', () => {
  const html = toHtml('1. first\n\n   ```sh\n   ls\n   ```\n\n2. second\n3. third\n');
  assert.equal((html.match(/<ol>/g) || []).length, 1, html);
  assert.match(html, /<li>\n<p>second<\/p>/);
  // Not indented: the list ends, and the next one starts at its own number.
  const apart = toHtml('1. first\n\n```\nls\n```\n\n2. second\n');
  assert.match(apart, /<ol start="2">/);
});

test('strikethrough, and a fence of four backticks that holds three', () => {
  assert.match(toHtml('~~old~~ new'), /<s>old<\/s> new/);
  const html = toHtml('````markdown\n```rust\nfn main() {}\n```\n````\n');
  assert.match(html, /<pre><code class="hljs language-markdown">/);
  assert.match(html, /```rust/);
  assert.equal((html.match(/<pre>/g) || []).length, 1);
});

test('code is highlighted when its language is known, escaped when not', () => {
  assert.match(toHtml('```rust\nfn main() {}\n```'), /<span class="hljs-keyword">fn<\/span>/);
  assert.match(toHtml('```nolang\n<b>x</b>\n```'), /&lt;b&gt;x&lt;\/b&gt;/);
});

test('HTML from the model is text, links are http(s) only, images are not loaded', () => {
  const html = toHtml('<img src=x onerror="alert(1)"> <script>alert(2)</script> [x](javascript:alert(3)) [ok](https://example.org) ![pic](https://example.org/p.png)');
  assert.doesNotMatch(html, /<img|<script/);
  assert.match(html, /&lt;img src=x/);
  assert.doesNotMatch(html, /href="javascript/);
  assert.match(html, /<a href="https:\/\/example.org" target="_blank" rel="noopener noreferrer">ok<\/a>/);
});

test('links with other schemes than http(s) and mailto are not links, in any spelling', () => {
  for (const link of ['JavaScript:alert(1)', 'vbscript:msgbox(1)', 'data:text/html;base64,PHNjcmlwdD4=', ' javascript:alert(1)', 'java\tscript:alert(1)']) {
    const html = toHtml('[x](' + link + ') <' + link + '>');
    assert.doesNotMatch(html, /<a /, link + ' → ' + html);
  }
  assert.match(toHtml('[mail](mailto:a@example.org)'), /<a href="mailto:a@example.org"/);
  // A bare address becomes a link too, opened the same safe way.
  assert.match(toHtml('see https://example.org/x'), /<a href="https:\/\/example.org\/x" target="_blank" rel="noopener noreferrer">/);
});

test('what the model writes stays text in a table cell, inline code, a heading and a code block', () => {
  const html = toHtml('| a |\n|---|\n| <b onclick=x>b</b> |\n\n`<i>`\n\n# <u>h</u>\n\n```rust\nlet s = "<script>";\n```\n');
  assert.doesNotMatch(html, /<b |<b>|<i>|<u>|<script>/);
  assert.match(html, /<td>&lt;b onclick=x&gt;b&lt;\/b&gt;<\/td>/);
  assert.match(html, /<code>&lt;i&gt;<\/code>/);
  assert.match(html, /&quot;&lt;script&gt;&quot;/);
});

test('a fence\'s language cannot leave its class attribute', () => {
  const html = toHtml('```"><img src=x onerror=alert(1)>\nx\n```\n');
  assert.doesNotMatch(html, /<img/);
  assert.match(html, /class="hljs language-&quot;&gt;&lt;img"/);
});

test('escapeHtml escapes the five characters of HTML', () => {
  assert.equal(escapeHtml('<a href="x">\'&\'</a>'), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
});
