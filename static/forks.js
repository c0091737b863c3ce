// Retry, Regenerate, Edit. Each goes on from an earlier user message: the history is cut to where
// that message started (`at`, kept on its transcript item), what the page showed from there on
// is dropped, and the message (or its edit) is sent again. A compaction changes where messages
// start, so only the messages after the last summary can be redone.

import { startChat } from './chat.js';
import { el, toast } from './dom.js';
import { saveTranscript, view } from './state.js';
import { redrawAll } from './transcript.js';

export function forkable(index) {
  const item = view.transcript[index];
  if (!item || item.kind !== 'user' || !Number.isInteger(item.at)) return false;
  // A cut (a summary, dropped turns) after it moved where messages start.
  return !view.transcript.slice(index + 1).some((i) => i.kind === 'compact' || i.kind === 'dropped');
}

export function lastUserIndex() {
  for (let i = view.transcript.length - 1; i >= 0; i--) if (view.transcript[i].kind === 'user') return i;
  return -1;
}

export function canSend() {
  return !view.conversation.running && view.ws && view.ws.readyState === WebSocket.OPEN;
}

export function redoFrom(index, text) {
  if (!canSend() || !forkable(index)) return;
  const item = view.transcript[index];
  view.conversation.truncate(item.at);
  view.transcript = view.transcript.slice(0, index);
  saveTranscript();
  redrawAll();
  startChat(text);
}

// A user message with an Edit button (for the messages that can be redone); Edit turns it into
// a small form whose Send forks the conversation from there.
export function drawUser(item) {
  const node = el('div', 'msg user');
  const text = el('div', 'user-text', item.text);
  node.appendChild(text);
  if (Number.isInteger(item.at)) {
    // Its word comes from CSS, so the message's text (innerText, a copy) is only the message.
    const edit = el('button', 'edit-message');
    edit.type = 'button';
    edit.setAttribute('aria-label', 'Edit this message and send it again');
    edit.onclick = () => startEdit(node, item);
    node.insertBefore(edit, text); // floats at the first line's end
  }
  return node;
}

export function startEdit(node, item) {
  const index = view.transcript.indexOf(item);
  if (!forkable(index)) {
    toast('warn', 'this message was summarised by a compaction: it can no longer be edited');
    return;
  }
  if (view.conversation.running) {
    toast('warn', 'wait for the reply to finish, or Stop it, to edit a message');
    return;
  }
  const form = el('form', 'edit-form');
  const area = el('textarea');
  area.value = item.text;
  area.rows = Math.min(8, item.text.split('\n').length + 1);
  area.setAttribute('aria-label', 'Edited message');
  const send = el('button', 'send-edit', 'Send');
  send.type = 'submit';
  const cancel = el('button', 'cancel-edit', 'Cancel');
  cancel.type = 'button';
  const buttons = el('div', 'edit-buttons');
  buttons.append(send, cancel);
  form.append(area, buttons);
  const restore = () => form.replaceWith(drawUser(item));
  cancel.onclick = restore;
  area.onkeydown = (event) => {
    if (event.key === 'Escape') restore();
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  };
  form.onsubmit = (event) => {
    event.preventDefault();
    const text = area.value.trim();
    if (!text || !canSend()) return;
    redoFrom(view.transcript.indexOf(item), text);
  };
  node.replaceWith(form);
  area.focus();
}
