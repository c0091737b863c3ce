// static/markdown.js without a browser: the vendored markdown-it and highlight.js load as the
// page loads them (plain scripts in the global scope), and the Markdown real models write comes
// out as HTML elements; nothing the model writes becomes HTML of its own. (DOMPurify, the second
// wall, needs a DOM: the browser tests cover it.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

for (const file of ['vendor/markdown-it.min.js', 'vendor/highlight.min.js', 'markdown.js']) {
  vm.runInThisContext(readFileSync(new URL('../../static/' + file, import.meta.url), 'utf8'), { filename: 'static/' + file });
}
const { toHtml } = globalThis.HookwireMarkdown;

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
