// The transcript: draws its items (messages, plans, tool cards, hook chips, dividers, approvals,
// turn lines) and keeps it scrolled to the bottom. The items other modules own (a user message
// with its Edit button, an approval card with its buttons) are drawn by the renderers the entry
// module gives (`useRenderers`); a redraw is announced (`changed('transcript')`), not passed on.

import { placeCompaction, summaryText } from './compaction.js';
import { $, el } from './dom.js';
import { errorOf, explainError } from './errors.js';
import { renderInto } from './markdown.js';
import { changed, saveTranscript, view } from './state.js';
import { formatMs, traceSummary, turnLine } from './trace.js';

// The renderers of the items whose elements act (given by app.js): `user` (forks.js) and
// `approval` (approval.js), each `item` → element.
const renderers = {};
export function useRenderers(given) {
  Object.assign(renderers, given);
}

export const transcriptEl = $('transcript');
export function scroll() { transcriptEl.scrollTop = transcriptEl.scrollHeight; }
// Kept at the bottom when its box changes (the banner, the panel, the composer's height), as
// long as the person had not scrolled up.
export let atBottom = true;
transcriptEl.addEventListener('scroll', () => {
  atBottom = transcriptEl.scrollHeight - transcriptEl.scrollTop - transcriptEl.clientHeight < 40;
});
if (window.ResizeObserver) new ResizeObserver(() => { if (atBottom) scroll(); }).observe(transcriptEl);

export function renderAssistant(node, markdown) {
  renderInto(node, markdown);
}

// The element of each drawn item (a compaction marks earlier ones as folded, and its divider
// goes before a later one).
export const nodes = new WeakMap();

// The items that are steps of a turn: a turn's plan and tool calls stand in one list of steps
// (`ol.steps`, labelled for screen readers), which its answer follows.
const STEPS = ['plan', 'tool'];

// Draws one transcript item (at the end, or before the element `before`); returns the element
// (assistant items are updated while streaming).
export function draw(item, before) {
  const node = render(item);
  if (!node) return null;
  nodes.set(item, node);
  if (STEPS.includes(item.kind)) {
    const step = el('li', 'step step-' + item.kind);
    step.appendChild(node);
    stepsBefore(before).appendChild(step);
  } else if (before) {
    transcriptEl.insertBefore(node, before);
  } else {
    transcriptEl.appendChild(node);
  }
  if (!before) scroll();
  return node;
}

// The list of steps a step drawn before `before` (or at the end) joins: the one right there, or
// a new one.
function stepsBefore(before) {
  let last = before ? before.previousElementSibling : transcriptEl.lastElementChild;
  while (last && (last.classList.contains('working') || last.classList.contains('fork-actions'))) last = last.previousElementSibling;
  if (last && last.classList.contains('steps')) return last;
  const list = el('ol', 'steps');
  list.setAttribute('aria-label', 'Steps of this turn');
  transcriptEl.insertBefore(list, before || (last ? last.nextSibling : transcriptEl.firstChild));
  return list;
}

// The element of one transcript item, not yet on the page.
export function render(item) {
  let node;
  switch (item.kind) {
    case 'user': node = renderers.user(item); break;
    case 'assistant': node = el('div', 'msg assistant'); renderAssistant(node, item.text); break;
    case 'plan': node = el('div', 'plan', 'Plan: ' + item.text); break;
    case 'hook': {
      node = el('span', 'hook-chip', 'hook ' + item.skill + '/' + item.name);
      node.title = item.timing + ': ' + item.content;
      break;
    }
    case 'session_hook': node = el('span', 'hook-chip', 'session hook on ' + item.event); break;
    case 'tool': {
      node = el('details', 'tool-card' + (item.is_error ? ' error' : ''));
      const summary = el('summary');
      summary.appendChild(el('span', 'tag', 'tool'));
      summary.appendChild(document.createTextNode(' ' + item.name + (item.done ? (item.is_error ? ' — failed' : ' — done') : ' — running…')));
      node.appendChild(summary);
      node.appendChild(el('pre', 'args', JSON.stringify(item.arguments, null, 2)));
      if (item.done) node.appendChild(el('pre', 'result', item.content));
      break;
    }
    case 'compact': {
      node = el('details', 'compact-divider');
      node.setAttribute('aria-label', 'Earlier messages summarised here');
      node.appendChild(el('summary', null, item.count + ' earlier message' + (item.count === 1 ? '' : 's') + ' summarised'));
      node.appendChild(el('div', 'summary-text', item.text));
      break;
    }
    case 'approval': node = renderers.approval(item); break;
    case 'turn': node = drawTurn(item); break;
    case 'error': node = drawError(item); break;
    case 'dropped': node = el('div', 'cut-divider', item.text); node.setAttribute('role', 'note'); break;
    case 'note': node = el('div', 'note', item.text); break;
    default: return null;
  }
  if (item.folded) {
    node.classList.add('folded');
    node.dataset.folded = 'true';
  }
  return node;
}

// A `compact` frame, at the start of a chat or in its middle: the divider goes where the
// summarised messages were, and their items are marked folded.
export function placeDivider(count, frame) {
  const item = { kind: 'compact', count, text: summaryText(frame.message.content) };
  const pinned = Array.isArray(frame.pinned) ? frame.pinned.length : 0;
  const at = placeCompaction(view.transcript, item, count, pinned);
  saveTranscript();
  for (const done of view.transcript.slice(0, at)) {
    const node = done && nodes.get(done);
    if (node && done.folded) {
      node.classList.add('folded');
      node.dataset.folded = 'true';
    }
  }
  const next = view.transcript[at + 1];
  const before = next ? nodes.get(next) : null;
  draw(item, before && before.parentNode === transcriptEl ? before : null);
}

// The foot of a turn: model and token usage, and with tracing its hook runs (event → hook →
// outcome → ms → what changed), collapsed; a blocked run shows in the line and in red.
export function drawTurn(item) {
  const rows = Array.isArray(item.trace) ? item.trace : [];
  const summary = traceSummary(rows);
  const line = turnLine(item);
  if (!rows.length && !item.trace_id) return el('div', 'turn', line);
  const node = el('details', 'turn traced' + (summary.blocked ? ' has-block' : ''));
  const head = el('summary');
  head.appendChild(el('span', 'turn-line', line));
  node.appendChild(head);
  if (item.trace_id) {
    const id = el('p', 'trace-id', 'trace ');
    id.appendChild(el('code', null, item.trace_id));
    node.appendChild(id);
  }
  const list = el('ol', 'trace');
  list.setAttribute('aria-label', 'Hook runs of this turn');
  for (const row of rows) {
    const li = el('li', 'run outcome-' + row.outcome);
    li.dataset.outcome = row.outcome;
    li.append(
      el('span', 'event', row.event), ' → ',
      el('span', 'hook', row.hook), ' ', el('span', 'level', '(' + row.level + ')'), ' → ',
      el('span', 'outcome', row.outcome), ' → ',
      el('span', 'ms', row.level === 'skill' ? 'no wait' : formatMs(row.ms)), ' → ',
      el('span', 'changed', row.changed.length ? 'changed ' + row.changed.join(', ') : 'no change'),
    );
    list.appendChild(li);
  }
  node.appendChild(list);
  return node;
}
// A failed chat: what happened in plain words, what can be done, and the technical line
// (code and the server's message) folded away. Its ways out are under it (recovery.js).
export function drawError(item) {
  const failure = errorOf(item);
  const shown = explainError(failure.code, failure.message, failure.retryAfter);
  const node = el('div', 'chat-error');
  node.appendChild(el('p', 'error-title', shown.title));
  if (shown.body) node.appendChild(el('p', 'error-body', shown.body));
  if (shown.detail) {
    const detail = el('details', 'error-detail');
    detail.append(el('summary', null, 'Technical details'), el('code', null, shown.detail));
    node.appendChild(detail);
  }
  return node;
}

// The history was made shorter (a compaction, dropped turns) after the last chat failed: the
// failure that said it was too long may pass now (recovery.js offers to send it again).
export function easeFailure() {
  const last = view.transcript[view.transcript.length - 1];
  if (!last || last.kind !== 'error') return;
  last.eased = true;
  saveTranscript();
}

export function push(item) {
  view.transcript.push(item);
  saveTranscript();
  return draw(item);
}

// A hook's chip (a skill hook that added a message).
export function drawHook(frame) {
  push({ kind: 'hook', name: frame.hook.name, skill: frame.hook.skill, timing: frame.hook.timing, content: frame.message.content });
}

export function redrawAll() {
  transcriptEl.textContent = '';
  if (!view.transcript.length) transcriptEl.appendChild(drawEmpty());
  view.transcript.forEach((item) => draw(item));
  requestAnimationFrame(scroll);
  changed('transcript');
}

// The empty state: a line, and prompts to start with (a click sends one).
export const STARTERS = ['list the files', 'read README.md', 'search for HOOKWIRE_AUTH_TOKEN'];
export function drawEmpty() {
  const box = el('div', 'empty');
  box.appendChild(el('p', 'muted', 'Nothing here yet: say something below, or start with one of these.'));
  const list = el('div', 'starters');
  for (const text of STARTERS) {
    const button = el('button', 'starter', text);
    button.type = 'button';
    button.onclick = () => {
      $('input').value = text;
      $('composer').requestSubmit();
    };
    list.appendChild(button);
  }
  box.appendChild(list);
  return box;
}
