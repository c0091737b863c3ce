// A small, safe Markdown renderer: every piece of text is HTML-escaped *before* any markup is
// added, and links keep only http(s) and mailto URLs. Nothing the model writes can become HTML.
// Supports fenced code blocks, inline code, headings, bold, italic, links, lists, quotes, rules.
(function (global) {
  'use strict';

  function escapeHtml(text) {
    return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  }

  function safeUrl(url) {
    // `url` is already escaped; decode only to check the scheme.
    const raw = url.replace(/&amp;/g, '&').trim();
    return /^(https?:|mailto:)/i.test(raw) ? url : null;
  }

  function inline(escaped) {
    // Inline code first, so its content is not formatted; placeholders keep it aside.
    const codes = [];
    let text = escaped.replace(/`([^`]+)`/g, (_, code) => {
      codes.push(code);
      return '\u0000' + (codes.length - 1) + '\u0000';
    });
    text = text
      .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
      .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, '$1<em>$2</em>')
      .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (match, label, url) => {
        const href = safeUrl(url);
        return href ? '<a href="' + href + '" target="_blank" rel="noopener noreferrer">' + label + '</a>' : match;
      });
    return text.replace(/\u0000(\d+)\u0000/g, (_, i) => '<code>' + codes[Number(i)] + '</code>');
  }

  function render(markdown) {
    const lines = markdown.replace(/\r\n/g, '\n').split('\n');
    const out = [];
    let paragraph = [];
    let list = null; // 'ul' or 'ol'
    const flushParagraph = () => {
      if (paragraph.length) out.push('<p>' + paragraph.map((l) => inline(escapeHtml(l))).join('<br>') + '</p>');
      paragraph = [];
    };
    const closeList = () => {
      if (list) out.push('</' + list + '>');
      list = null;
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      const fence = line.match(/^\s*```\s*([\w+-]*)\s*$/);
      if (fence) {
        flushParagraph();
        closeList();
        const code = [];
        i++;
        while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) code.push(lines[i++]);
        const lang = fence[1] ? ' class="language-' + escapeHtml(fence[1]) + '"' : '';
        out.push('<pre><code' + lang + '>' + escapeHtml(code.join('\n')) + '</code></pre>');
        continue;
      }
      const heading = line.match(/^(#{1,6})\s+(.*)$/);
      const bullet = line.match(/^\s*[-*+]\s+(.*)$/);
      const numbered = line.match(/^\s*\d+[.)]\s+(.*)$/);
      if (heading) {
        flushParagraph();
        closeList();
        const level = Math.min(heading[1].length + 2, 6);
        out.push('<h' + level + '>' + inline(escapeHtml(heading[2])) + '</h' + level + '>');
      } else if (bullet || numbered) {
        flushParagraph();
        const kind = bullet ? 'ul' : 'ol';
        if (list !== kind) {
          closeList();
          out.push('<' + kind + '>');
          list = kind;
        }
        out.push('<li>' + inline(escapeHtml((bullet || numbered)[1])) + '</li>');
      } else if (/^\s*>\s?/.test(line)) {
        flushParagraph();
        closeList();
        out.push('<blockquote>' + inline(escapeHtml(line.replace(/^\s*>\s?/, ''))) + '</blockquote>');
      } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
        flushParagraph();
        closeList();
        out.push('<hr>');
      } else if (line.trim() === '') {
        flushParagraph();
        closeList();
      } else {
        closeList();
        paragraph.push(line);
      }
    }
    flushParagraph();
    closeList();
    return out.join('');
  }

  global.HookwireMarkdown = { render, escapeHtml };
})(window);
