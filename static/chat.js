// The running chat on screen: sending it, its streamed bubbles, tool cards, hooks, the working
// indicator, and the one way it ends (`finish`). What the other views show of it (the chat
// state, the list of conversations, the hooks) is announced through state.js's `changed`.

import { compactable } from './compaction.js';
import { $, el, toast } from './dom.js';
import { explainError } from './errors.js';
import { changed, library, saveTranscript, view } from './state.js';
import { finalText, traceRow, usageOf } from './trace.js';
import { draw, drawHook, easeFailure, nodes, placeDivider, push, render, renderAssistant, scroll, transcriptEl } from './transcript.js';
import { spoken } from './voice.js';
import { voice } from './voice-controls.js';

export function setState(value) {
  document.body.dataset.state = value;
  const running = value === 'running';
  $('input').disabled = running;
  // Send becomes Stop while a reply runs.
  $('send').hidden = running;
  $('send').disabled = running || value === 'offline';
  $('stop').hidden = !running;
  $('stop').disabled = !running;
  updateCompact(value);
  explainWhileRunning(running);
  updateExports();
  updateWorking();
  changed('state', value);
}

// Compact is offered when there is an older part to summarise; its title says why not.
export function updateCompact(value) {
  const state = value || document.body.dataset.state;
  const can = compactable(view.conversation.history);
  const button = $('compact');
  button.disabled = !can.ok || state !== 'idle';
  button.title = state === 'offline' ? 'Not connected: Compact works once the page is back online'
    : state === 'running' ? 'Wait for the reply to finish' : can.reason;
}

// Compact: the server summarises the older part of the history (a `compact` frame comes back
// when there was something to summarise).
export function startCompaction() {
  if (view.conversation.running || !view.ws || view.ws.readyState !== WebSocket.OPEN) return;
  const frame = view.conversation.startCompaction();
  view.chat = newChat();
  view.ws.send(JSON.stringify(frame));
  setState('running');
}

export function newChat() {
  return { bubble: null, bubbles: [], tools: {}, trace: [] };
}

export function startChat(text) {
  const speak = voice.tts && spoken(library.current);
  const frame = view.conversation.startChat(text, undefined, { voice: speak });
  const empty = transcriptEl.querySelector('.empty');
  if (empty) empty.remove();
  library.touch(library.current, text);
  changed('conversations');
  view.chat = newChat();
  view.chat.voice = speak;
  voice.queue.stop();
  // `at`: where its message starts in the history: a compaction cuts there, and Retry,
  // Regenerate and Edit go on from there.
  push({ kind: 'user', text, at: frame.messages.length });
  view.ws.send(JSON.stringify(frame));
  setState('running');
}

// The Stop button: the server ends the chat with `done` (`cancelled`), whose partial turn the
// conversation keeps (docs/protocol.md §3).
export function stop() {
  const cancel = view.conversation.cancelFrame();
  if (cancel && view.ws && view.ws.readyState === WebSocket.OPEN) view.ws.send(JSON.stringify(cancel));
  voice.queue.stop();
}

// New, another conversation and Delete while a reply streams: one chat runs per connection
// (docs/protocol.md §3), so the reply is stopped first, as Stop does (what it wrote so far stays
// in its own conversation), and `action` runs once the chat has ended. Without a running chat,
// at once. Rename needs no wait.
export function stopThen(action) {
  if (!view.conversation.running) {
    action();
    return;
  }
  view.afterStop = action;
  stop();
}

// While a reply streams, the controls that stop it first say so in their tooltip (and the Chats
// tab, in a line).
const STOPS_FIRST = ' (stops the streaming reply first; what it wrote so far is kept)';
export function explainWhileRunning(running) {
  for (const button of document.querySelectorAll('#new-chat, #delete-conversation')) {
    if (running) {
      if (button.dataset.title === undefined) button.dataset.title = button.title || '';
      button.title = (button.dataset.title || button.textContent) + STOPS_FIRST;
    } else if (button.dataset.title !== undefined) {
      button.title = button.dataset.title;
      delete button.dataset.title;
    }
  }
  const note = $('busy-note');
  if (note) note.hidden = !running;
}

// Export is offered once the conversation has something to export.
export function updateExports() {
  const empty = !view.transcript.length && !view.conversation.history.length;
  for (const id of ['export-json', 'export-md']) $(id).hidden = empty;
}

// From Send until the answer streams (and between a tool call and the next text), a working
// indicator stands at the end of the transcript; while text streams, its bubble has a cursor.
export function updateWorking() {
  const chat = view.chat;
  let node = transcriptEl.querySelector('.working');
  if (!chat || chat.bubble) {
    if (node) node.remove();
    return;
  }
  if (!node) {
    node = el('div', 'working');
    node.setAttribute('role', 'status');
    node.append(el('span', 'working-dots'), el('span', 'working-text', 'Working…'));
  }
  if (transcriptEl.lastChild !== node) {
    transcriptEl.appendChild(node);
    scroll();
  }
}

// Streamed text goes into the open answer bubble (opened by the first delta); its Markdown is
// re-rendered at most once per animation frame.
export function appendText(chat, delta) {
  chat.texted = true;
  if (!chat.bubble) {
    const item = { kind: 'assistant', text: '' };
    view.transcript.push(item);
    chat.bubble = { item, node: draw(item), frame: 0 };
    chat.bubbles.push(chat.bubble);
    chat.bubble.node.classList.add('streaming');
    updateWorking();
  }
  const bubble = chat.bubble;
  bubble.item.text += delta;
  if (bubble.frame) return;
  bubble.frame = requestAnimationFrame(() => {
    bubble.frame = 0;
    renderAssistant(bubble.node, bubble.item.text);
    scroll();
  });
}

// The open bubble gets its final rendering and is kept; the next text opens a new one (text
// before a plan or a tool call is its own bubble).
export function closeBubble(chat) {
  const bubble = chat && chat.bubble;
  if (!bubble) return;
  chat.bubble = null;
  if (bubble.frame) cancelAnimationFrame(bubble.frame);
  bubble.node.classList.remove('streaming');
  renderAssistant(bubble.node, bubble.item.text);
  saveTranscript();
}

// A hook rewrote the answer: the last bubble shows `done.message` instead of what streamed.
export function showFinal(chat, frame) {
  if (!chat) return;
  const text = finalText(chat.bubbles.map((b) => b.item.text), frame);
  if (text === null) return;
  let bubble = chat.bubbles[chat.bubbles.length - 1];
  if (!bubble) {
    appendText(chat, text);
    return;
  }
  bubble.item.text = text;
  renderAssistant(bubble.node, text);
  saveTranscript();
}

// The one way a chat ends on screen (done, error, connection lost): close the bubble, show how
// it ended (`ending`, a transcript item, when there is something to say), then the turn's foot
// (usage from `done`, the traced hook runs), free the composer.
export function finish(ending, usage) {
  const chat = view.chat;
  closeBubble(chat);
  if (ending) push(ending);
  const trace = chat ? chat.trace : [];
  const traceId = chat && chat.traceId ? chat.traceId : null;
  // A failed chat has no usage, but its trace id is the one worth looking up.
  if (usage || trace.length || traceId) push({ kind: 'turn', model: view.model, usage: usage || null, trace, trace_id: traceId });
  view.chat = null;
  setState(view.ws && view.ws.readyState === WebSocket.OPEN ? 'idle' : 'offline');
  $('input').focus();
  changed('ended');
  // New, a switch or Delete waited for this chat to end.
  const next = view.afterStop;
  view.afterStop = null;
  if (next) next();
}

// `done.usage`, unless it counts nothing (a chat cancelled before the model answered).
export function countedUsage(frame) {
  const usage = usageOf(frame);
  return usage && (usage.prompt || usage.completion) ? usage : null;
}

export function onFrame(frame) {
  showFrame(frame);
  updateWorking();
}

export function showFrame(frame) {
  const update = view.conversation.receive(frame);
  const chat = view.chat;
  switch (update.kind) {
    case 'stray_error': toast('error', explainError(frame.code, frame.message).title); break;
    case 'start':
      // The chat's OpenTelemetry trace (when the server exports traces), for the turn's details.
      if (chat && typeof frame.trace_id === 'string') chat.traceId = frame.trace_id;
      break;
    case 'text': appendText(chat, frame.delta); break;
    case 'plan':
      closeBubble(chat);
      push({ kind: 'plan', text: frame.content });
      break;
    case 'tool_call': {
      closeBubble(chat);
      const item = { kind: 'tool', call_id: frame.call_id, name: frame.name, arguments: frame.arguments, done: false };
      chat.tools[frame.call_id] = { item, node: push(item) };
      break;
    }
    case 'tool_result': {
      const entry = chat.tools[frame.call_id];
      if (!entry) break;
      Object.assign(entry.item, { done: true, content: frame.content, is_error: frame.is_error });
      const fresh = render(entry.item);
      nodes.set(entry.item, fresh);
      entry.node.replaceWith(fresh);
      entry.node = fresh;
      saveTranscript();
      break;
    }
    case 'hook':
      // A spoken answer shows its hook when playback reaches it.
      if (chat && chat.voice) voice.queue.push({ type: 'hook', frame });
      else drawHook(frame);
      break;
    case 'audio':
      if (chat && chat.voice) voice.queue.push({ type: 'audio', seq: frame.seq, format: frame.format, text: frame.text, data: frame.data });
      break;
    case 'session_hook':
      push({ kind: 'session_hook', event: frame.hook.event });
      changed('sessionHooks');
      break;
    case 'hook_trace':
      if (chat) chat.trace.push(traceRow(frame));
      break;
    case 'compact':
      closeBubble(chat);
      placeDivider(update.count, frame);
      easeFailure();
      break;
    case 'approval':
      closeBubble(chat);
      push({ kind: 'approval', state: frame.state, calls: frame.calls, decisions: {} });
      break;
    case 'notice': toast(frame.level, frame.message); break;
    case 'done':
      // An answer that never streamed (a plan cut at the output limit) is shown from the end;
      // one a hook rewrote replaces what streamed.
      if (chat && !chat.texted && frame.message && frame.message.content) push({ kind: 'assistant', text: frame.message.content });
      else showFinal(chat, frame);
      finish(frame.reason !== 'completed' && frame.reason !== 'approval_required' ? { kind: 'note', text: 'ended: ' + frame.reason } : null, countedUsage(frame));
      break;
    case 'error':
      finish({
        kind: 'error',
        code: String(frame.code),
        message: typeof frame.message === 'string' ? frame.message : '',
        retryAfter: Number.isFinite(frame.retry_after_seconds) ? frame.retry_after_seconds : undefined,
      });
      break;
  }
}
