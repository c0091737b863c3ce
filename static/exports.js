// A conversation as a file: JSON (what the protocol needs to go on) or Markdown (what the page
// showed). No DOM: the page turns the text into a download.

import { KEYS, UNTITLED, list } from './protocol.js';
import { errorOf, explainError } from './errors.js';
import { formatMs, turnLine } from './trace.js';

function iso(ms) {
  return typeof ms === 'number' && isFinite(ms) ? new Date(ms).toISOString() : null;
}

/**
 * A conversation as one JSON value: its `messages` (the protocol history, exactly what the next
 * chat would send), `session_hooks`, the waiting `approval`, and the `transcript` the page
 * shows, with its title, times and (from `extra`) the model.
 */
export function exportJson(meta, store, extra) {
  extra = extra || {};
  return {
    format: 'hookwire.conversation',
    version: 1,
    title: meta.title,
    created_at: iso(meta.created),
    updated_at: iso(meta.updated),
    exported_at: iso(extra.exported),
    model: extra.model || null,
    messages: list(store.load(KEYS.history, [])),
    session_hooks: list(store.load(KEYS.sessionHooks, [])),
    approval: store.load(KEYS.approval, null) || null,
    transcript: list(store.load(KEYS.transcript, [])),
  };
}

// A code fence longer than any run of backticks in `text`.
function fenced(text, lang) {
  const runs = String(text).match(/`+/g) || [];
  const longest = runs.reduce((n, r) => Math.max(n, r.length), 0);
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return fence + (lang || '') + '\n' + String(text).replace(/\n$/, '') + '\n' + fence;
}

function quoted(text) {
  return String(text).split('\n').map((line) => (line ? '> ' + line : '>')).join('\n');
}

/**
 * A conversation as Markdown, from its transcript (what the page showed: the messages, plans,
 * tool calls with arguments and results, hooks, summaries, approvals, usage and hook traces).
 */
export function exportMarkdown(meta, transcript, extra) {
  extra = extra || {};
  const out = ['# ' + (meta.title || UNTITLED).replace(/\n/g, ' ')];
  const facts = ['Exported from hookwire'];
  if (extra.model) facts.push('model ' + extra.model);
  if (iso(extra.exported)) facts.push(iso(extra.exported));
  out.push('_' + facts.join(' · ') + '_');
  for (const item of list(transcript)) {
    if (!item || typeof item !== 'object') continue;
    switch (item.kind) {
      case 'user': out.push('## You\n\n' + item.text); break;
      case 'assistant': out.push('## Assistant\n\n' + item.text); break;
      case 'plan': out.push(quoted('**Plan:** ' + item.text)); break;
      case 'tool': {
        const state = item.done ? (item.is_error ? 'failed' : 'done') : 'no result';
        let text = '**Tool `' + item.name + '`** (' + state + ')\n\n' + fenced(JSON.stringify(item.arguments, null, 2), 'json');
        if (item.done) text += '\n\n' + fenced(item.content || '');
        out.push(text);
        break;
      }
      case 'hook': out.push('_hook ' + item.skill + '/' + item.name + ' (' + item.timing + ')_'); break;
      case 'session_hook': out.push('_session hook registered on ' + item.event + '_'); break;
      case 'compact':
        out.push('---\n\n' + quoted('**' + item.count + ' earlier messages summarised:** ' + item.text) + '\n\n---');
        break;
      case 'approval': {
        const rows = list(item.calls).map((call) => {
          const d = item.decisions && item.decisions[call.call_id];
          const outcome = d ? (d.decision === 'allow' ? 'approved' : 'denied') + (d.reason ? ' (' + d.reason + ')' : '') : 'not decided';
          return '- `' + call.name + '` ' + JSON.stringify(call.arguments) + ': ' + outcome;
        });
        out.push('**Waiting for approval:**\n\n' + rows.join('\n'));
        break;
      }
      case 'turn': {
        const line = turnLine(item);
        if (line) out.push('_' + line + '_');
        const runs = list(item.trace);
        if (runs.length) {
          out.push('| event | hook | level | outcome | ms | changed |\n|---|---|---|---|---|---|\n' +
            runs.map((r) => '| ' + [r.event, r.hook, r.level, r.outcome, formatMs(r.ms), r.changed.join(', ')]
              .map((c) => String(c).replace(/\|/g, '\\|')).join(' | ') + ' |').join('\n'));
        }
        break;
      }
      case 'error': {
        const failure = errorOf(item);
        const shown = explainError(failure.code, failure.message, failure.retryAfter);
        out.push('**Error:** ' + shown.title + (shown.detail ? ' (`' + shown.detail + '`)' : ''));
        break;
      }
      case 'dropped':
      case 'note': out.push('_' + item.text + '_'); break;
      default: break;
    }
  }
  return out.join('\n\n') + '\n';
}

// A file name for an export of the conversation titled `title`.
export function fileName(title, extension) {
  const slug = String(title || '').toLowerCase().normalize('NFKD').replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '').slice(0, 60).replace(/-+$/, '');
  return (slug || 'conversation') + '.' + extension;
}
