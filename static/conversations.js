// The Chats tab: the list of conversations, switching, New, Rename, Delete, and the exports. A
// switch is announced (`changed('switched')`): the speaker and the skills follow it.

import { setState, stopThen } from './chat.js';
import { $, el } from './dom.js';
import { fileName } from './exports.js';
import { dateGroups } from './library.js';
import { isPhone, showPanel } from './panel.js';
import { changed, library, loadTranscript, view } from './state.js';
import { redrawAll } from './transcript.js';

export function when(ms) {
  const date = new Date(ms);
  const today = new Date();
  return date.toDateString() === today.toDateString()
    ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleDateString([], { month: 'short', day: 'numeric' });
}

// One row of the Chats list: a click opens it (a reply streaming in another one stops first).
function conversationRow(meta) {
  const current = meta.id === library.current;
  const li = el('li', 'conversation' + (current ? ' current' : ''));
  li.dataset.id = meta.id;
  const open = el('button', 'open');
  open.type = 'button';
  if (current) open.setAttribute('aria-current', 'true');
  open.append(el('span', 'title', meta.title), el('span', 'when', when(meta.updated)));
  open.onclick = () => {
    if (current && view.conversation.running) return;
    stopThen(() => switchTo(meta.id));
  };
  li.appendChild(open);
  return li;
}

export function renderConversations() {
  const box = $('conversations');
  box.textContent = '';
  const query = $('chat-search').value.trim();
  const found = query ? library.search(query) : library.list();
  // Grouped by when each was last used, as chat lists do (Today, Yesterday, …).
  for (const group of dateGroups(found, Date.now())) {
    const section = el('section', 'date-group');
    const label = el('h3', 'date-label', group.label);
    label.id = 'chats-' + group.label.toLowerCase().replace(/\W+/g, '-');
    section.setAttribute('aria-labelledby', label.id);
    const list = el('ul', 'conversation-list');
    for (const meta of group.items) list.appendChild(conversationRow(meta));
    section.append(label, list);
    box.appendChild(section);
  }
  const none = $('no-match');
  none.hidden = !query || found.length > 0;
  none.textContent = query ? 'No chat matches “' + query + '”.' : '';
  const meta = library.meta();
  $('conversation-title').textContent = meta.title;
  document.title = meta.title + ' · hookwire';
  const del = $('delete-conversation');
  del.textContent = 'Delete';
  del.classList.remove('armed');
}

// Shows conversation `id` (or the current one, after a change to the list).
export function switchTo(id) {
  if (view.conversation.running) return;
  if (id && id !== library.current) library.switchTo(id);
  view.conversation = library.open();
  view.own = library.storeFor();
  changed('switched');
  view.transcript = loadTranscript();
  view.chat = null;
  redrawAll();
  setState(view.ws && view.ws.readyState === WebSocket.OPEN ? 'idle' : 'offline');
  if (isPhone()) showPanel(false);
  $('input').focus();
}

export function newConversation() {
  stopThen(() => {
    // An empty conversation is already a new one.
    if (view.transcript.length || view.conversation.history.length) library.create();
    switchTo(library.current);
  });
}

// Rename in place: the current row becomes a small form (a streaming reply goes on).
export function startRename() {
  const row = document.querySelector('#conversations li.current');
  if (!row || row.querySelector('form')) return;
  const form = el('form', 'rename-form');
  const input = el('input', 'rename-input');
  input.value = library.meta().title;
  input.setAttribute('aria-label', 'Conversation title');
  const save = el('button', null, 'Save');
  save.type = 'submit';
  form.append(input, save);
  form.onsubmit = (event) => {
    event.preventDefault();
    library.rename(library.current, input.value);
    renderConversations();
  };
  input.onkeydown = (event) => {
    if (event.key === 'Escape') renderConversations();
    if (event.key === 'Enter' && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  };
  row.textContent = '';
  row.appendChild(form);
  input.focus();
  input.select();
}

// Delete asks once more (the button says so) before it forgets the conversation; a reply that
// streams in it is stopped first.
export function deleteConversation() {
  const button = $('delete-conversation');
  if (!button.classList.contains('armed')) {
    button.classList.add('armed');
    button.textContent = 'Delete for good?';
    setTimeout(() => { if (button.classList.contains('armed')) renderConversations(); }, 4000);
    // Focus going anywhere else disarms it too (a click elsewhere, Tab, Escape's blur).
    const away = (event) => {
      if (event.target === button) return;
      document.removeEventListener('focusin', away);
      button.removeEventListener('blur', away);
      if (button.classList.contains('armed')) renderConversations();
    };
    document.addEventListener('focusin', away);
    button.addEventListener('blur', away);
    return;
  }
  const id = library.current;
  button.classList.remove('armed');
  stopThen(() => {
    library.remove(id);
    switchTo(library.current);
  });
}

// An export is a download of a file made here (a blob URL; nothing leaves the page). The link
// keeps the URL of its last export, freed at the next one.
export function exportAs(link, kind) {
  const meta = library.meta();
  const extra = { model: view.model };
  const text = kind === 'json'
    ? JSON.stringify(library.exportJson(meta.id, extra), null, 2) + '\n'
    : library.exportMarkdown(meta.id, extra);
  const type = kind === 'json' ? 'application/json' : 'text/markdown';
  if (link.dataset.url) URL.revokeObjectURL(link.dataset.url);
  const url = URL.createObjectURL(new Blob([text], { type: type + ';charset=utf-8' }));
  link.dataset.url = url;
  link.href = url;
  link.download = fileName(meta.title, kind === 'json' ? 'json' : 'md');
}
