// The hookwire browser page: the view. `protocol.js` (the global `HookwireProtocol`) keeps the
// conversations and decides what each frame means (history, session hooks, the frames to send,
// exports, the Hooks tab's levels); this file draws the transcript, the side panel (conversations,
// skills, hooks) and the controls, and keeps what is on the screen in localStorage so a reload
// shows it again.
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const P = window.HookwireProtocol;
  const KEYS = P.KEYS;
  const TAB = 'hookwire.tab';
  const HOOKS_REFRESH_MS = 2000;
  const BANNER = 'hookwire.demoBannerDismissed';

  // localStorage, one JSON value per key; the conversations save their own keys through it too.
  const store = {
    load(key, fallback) {
      try {
        const raw = localStorage.getItem(key);
        return raw === null ? fallback : JSON.parse(raw);
      } catch (_) {
        return fallback;
      }
    },
    save(key, value) {
      try { localStorage.setItem(key, JSON.stringify(value)); } catch (_) { /* storage full or off */ }
    },
    remove(key) {
      try { localStorage.removeItem(key); } catch (_) { /* storage off */ }
    },
  };

  const library = P.createLibrary(store);
  let conversation = library.open();
  let own = library.storeFor(); // the current conversation's keys
  // sessionStorage, for the access token: it lasts as long as the tab.
  const session = {
    load(key, fallback) {
      try { const raw = sessionStorage.getItem(key); return raw === null ? fallback : JSON.parse(raw); } catch (_) { return fallback; }
    },
    save(key, value) {
      try { sessionStorage.setItem(key, JSON.stringify(value)); } catch (_) { /* storage off */ }
    },
  };
  const access = P.takeToken(location.href, session);
  if (access.cleanUrl) history.replaceState(history.state, '', access.cleanUrl);
  const view = {
    transcript: loadTranscript(), // what is drawn, as items (see draw)
    defaultSkills: [],
    model: null, // from /api/info
    ws: null,
    retry: 0,
    chat: null, // the running chat on screen: {bubble, tools: {call_id: {item, node}}, trace: [rows]}
    tab: store.load(TAB, 'conversations'),
    hooks: null, // the last answer of /api/hooks
    hooksError: null,
    poll: null, // the Hooks tab's refresh timer while it is on screen
    polling: false, // a refresh is on its way
    refreshes: 0,
  };

  // What was on the screen; without it (an imported or older conversation), what the history
  // holds: the messages, hook chips and tool cards with their results.
  function loadTranscript() {
    const loaded = own.load(KEYS.transcript, []);
    if (Array.isArray(loaded) && loaded.length) return loaded;
    return P.itemsOf(conversation.history);
  }
  function saveTranscript() {
    own.save(KEYS.transcript, view.transcript);
  }

  // ─── transcript rendering ───

  const transcriptEl = $('transcript');
  function scroll() { transcriptEl.scrollTop = transcriptEl.scrollHeight; }
  // Kept at the bottom when its box changes (the banner, the panel, the composer's height), as
  // long as the person had not scrolled up.
  let atBottom = true;
  transcriptEl.addEventListener('scroll', () => {
    atBottom = transcriptEl.scrollHeight - transcriptEl.scrollTop - transcriptEl.clientHeight < 40;
  });
  if (window.ResizeObserver) new ResizeObserver(() => { if (atBottom) scroll(); }).observe(transcriptEl);

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function renderAssistant(node, markdown) {
    window.HookwireMarkdown.renderInto(node, markdown);
  }

  // The element of each drawn item (a compaction marks earlier ones as folded, and its divider
  // goes before a later one).
  const nodes = new WeakMap();

  // Draws one transcript item (at the end, or before the element `before`); returns the element
  // (assistant items are updated while streaming).
  function draw(item, before) {
    let node;
    switch (item.kind) {
      case 'user': node = drawUser(item); break;
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
      case 'approval': node = drawApproval(item); break;
      case 'turn': node = drawTurn(item); break;
      case 'error': node = el('div', 'chat-error', item.text); break;
      case 'note': node = el('div', 'note', item.text); break;
      default: return null;
    }
    if (item.folded) {
      node.classList.add('folded');
      node.dataset.folded = 'true';
    }
    nodes.set(item, node);
    if (before) {
      transcriptEl.insertBefore(node, before);
    } else {
      transcriptEl.appendChild(node);
      scroll();
    }
    return node;
  }

  // A `compact` frame, at the start of a chat or in its middle: the divider goes where the
  // summarised messages were, and their items are marked folded.
  function placeDivider(count, frame) {
    const item = { kind: 'compact', count, text: P.summaryText(frame.message.content) };
    const pinned = Array.isArray(frame.pinned) ? frame.pinned.length : 0;
    const at = P.placeCompaction(view.transcript, item, count, pinned);
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
  function drawTurn(item) {
    const rows = Array.isArray(item.trace) ? item.trace : [];
    const summary = P.traceSummary(rows);
    const line = P.turnLine(item);
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
        el('span', 'ms', row.level === 'skill' ? 'no wait' : P.formatMs(row.ms)), ' → ',
        el('span', 'changed', row.changed.length ? 'changed ' + row.changed.join(', ') : 'no change'),
      );
      list.appendChild(li);
    }
    node.appendChild(list);
    return node;
  }

  // The calls of an `approval` frame, each with Approve / Deny (and an optional reason); once
  // every call has a decision, the resume is sent. Only the approval the conversation still
  // keeps has live buttons (an older card, or one after a new message, is a record).
  function drawApproval(item) {
    const card = el('div', 'approval-card');
    card.setAttribute('role', 'group');
    const pending = conversation.approval;
    const live = !!pending && pending.state === item.state;
    item.decisions = item.decisions || {};
    const title = approvalTitle(item, live);
    card.setAttribute('aria-label', title);
    card.appendChild(el('div', 'approval-title', title));
    for (const call of item.calls) {
      const row = el('div', 'approval-call');
      row.dataset.callId = call.call_id;
      const head = el('div');
      head.appendChild(el('strong', null, call.name));
      if (call.reason) head.appendChild(el('span', 'muted', ' · ' + call.reason));
      row.appendChild(head);
      row.appendChild(el('pre', 'args', JSON.stringify(call.arguments, null, 2)));
      const decided = item.decisions[call.call_id];
      if (decided || !live) {
        row.appendChild(el('div', 'approval-outcome' + (decided ? ' ' + decided.decision : ''), decisionText(decided)));
      } else {
        const reason = el('input', 'approval-reason');
        reason.type = 'text';
        reason.placeholder = 'reason (optional)';
        reason.setAttribute('aria-label', 'Reason for ' + call.name);
        const approve = el('button', 'approve', 'Approve');
        const deny = el('button', 'deny', 'Deny');
        approve.type = deny.type = 'button';
        approve.onclick = () => decide(item, call, 'allow', reason.value);
        deny.onclick = () => decide(item, call, 'deny', reason.value);
        const buttons = el('div', 'approval-buttons');
        buttons.append(reason, approve, deny);
        row.appendChild(buttons);
      }
      card.appendChild(row);
    }
    card.dataset.state = item.state;
    return card;
  }

  // The card's title says where it stands: waiting, or what the person decided.
  function approvalTitle(item, live) {
    const decided = item.calls.map((c) => item.decisions[c.call_id]).filter(Boolean);
    if (decided.length < item.calls.length) {
      return live ? 'Waiting for your approval' : 'Not decided: the conversation went on without it';
    }
    const allowed = decided.filter((d) => d.decision === 'allow').length;
    if (allowed === decided.length) return decided.length === 1 ? 'You approved this call' : 'You approved these calls';
    if (allowed === 0) return decided.length === 1 ? 'You denied this call' : 'You denied these calls';
    return 'You approved ' + allowed + ' and denied ' + (decided.length - allowed) + ' calls';
  }

  function decisionText(decided) {
    if (!decided) return 'Not decided';
    const word = decided.decision === 'allow' ? 'Approved' : 'Denied';
    return decided.reason ? word + ', because: ' + decided.reason : word;
  }

  function decide(item, call, decision, reason) {
    if (conversation.running || !view.ws || view.ws.readyState !== WebSocket.OPEN) {
      toast('warn', 'not connected: decide again once the page is back online');
      return;
    }
    item.decisions[call.call_id] = reason ? { decision, reason } : { decision };
    const fresh = drawApproval(item);
    transcriptEl.replaceChild(fresh, transcriptEl.querySelector('.approval-card[data-state="' + CSS.escape(item.state) + '"]') || fresh);
    nodes.set(item, fresh);
    saveTranscript();
    if (item.calls.some((c) => !item.decisions[c.call_id])) return;
    const decisions = item.calls.map((c) => Object.assign({ call_id: c.call_id }, item.decisions[c.call_id]));
    const frame = conversation.resumeChat(decisions);
    view.chat = newChat();
    view.ws.send(JSON.stringify(frame));
    setState('running');
  }

  function push(item) {
    view.transcript.push(item);
    saveTranscript();
    return draw(item);
  }

  function redrawAll() {
    transcriptEl.textContent = '';
    if (!view.transcript.length) transcriptEl.appendChild(drawEmpty());
    view.transcript.forEach((item) => draw(item));
    requestAnimationFrame(scroll);
    renderConversations();
    renderHooks();
  }

  // The empty state: a line, and prompts to start with (a click sends one).
  const STARTERS = ['list the files', 'read README.md', 'search for TODO'];
  function drawEmpty() {
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

  function toast(level, message) {
    const node = el('div', 'toast ' + level, message);
    $('toasts').appendChild(node);
    setTimeout(() => node.remove(), 6000);
  }

  // ─── the running chat ───

  function setState(value) {
    document.body.dataset.state = value;
    const running = value === 'running';
    $('input').disabled = running;
    $('send').disabled = running || value === 'offline';
    $('stop').disabled = !running;
    $('compact').disabled = running || value === 'offline' || conversation.history.length === 0;
    $('new-chat').disabled = running;
    for (const button of document.querySelectorAll('#conversations button, #conversation-actions button')) {
      button.disabled = running;
    }
    explainWhileRunning(running);
    updateExports();
    updateWorking();
    updateForkActions(value === 'idle');
  }

  function newChat() {
    return { bubble: null, bubbles: [], tools: {}, trace: [] };
  }

  function startChat(text) {
    const spoken = voice.tts && V.spoken(library.current);
    const frame = conversation.startChat(text, undefined, { voice: spoken });
    const empty = transcriptEl.querySelector('.empty');
    if (empty) empty.remove();
    library.touch(library.current, text);
    renderConversations();
    view.chat = newChat();
    view.chat.voice = spoken;
    voice.queue.stop();
    // `at`: where its message starts in the history: a compaction cuts there, and Retry,
    // Regenerate and Edit go on from there.
    push({ kind: 'user', text, at: frame.messages.length });
    view.ws.send(JSON.stringify(frame));
    setState('running');
  }

  // While a reply streams, the conversation cannot change under it: the controls that would say
  // so, in their tooltip (and the Chats tab, in a line).
  const BUSY = 'Wait for the reply to finish, or Stop it, to switch, rename or delete conversations';
  function explainWhileRunning(running) {
    for (const button of document.querySelectorAll('#new-chat, #conversations button, #conversation-actions button')) {
      if (running) {
        if (!button.dataset.title) button.dataset.title = button.title || '';
        button.title = BUSY;
      } else if (button.dataset.title !== undefined) {
        button.title = button.dataset.title;
        delete button.dataset.title;
      }
    }
    const note = $('busy-note');
    if (note) note.hidden = !running;
  }

  // Export is offered once the conversation has something to export.
  function updateExports() {
    const empty = !view.transcript.length && !conversation.history.length;
    for (const id of ['export-json', 'export-md']) $(id).hidden = empty;
  }

  // From Send until the answer streams (and between a tool call and the next text), a working
  // indicator stands at the end of the transcript; while text streams, its bubble has a cursor.
  function updateWorking() {
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
  function appendText(chat, delta) {
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
  function closeBubble(chat) {
    const bubble = chat && chat.bubble;
    if (!bubble) return;
    chat.bubble = null;
    if (bubble.frame) cancelAnimationFrame(bubble.frame);
    bubble.node.classList.remove('streaming');
    renderAssistant(bubble.node, bubble.item.text);
    saveTranscript();
  }

  // A hook rewrote the answer: the last bubble shows `done.message` instead of what streamed.
  function showFinal(chat, frame) {
    if (!chat) return;
    const text = P.finalText(chat.bubbles.map((b) => b.item.text), frame);
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
  function finish(ending, usage) {
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
    if (hooksOnScreen()) refreshHooks();
  }

  // `done.usage`, unless it counts nothing (a chat cancelled before the model answered).
  function countedUsage(frame) {
    const usage = P.usageOf(frame);
    return usage && (usage.prompt || usage.completion) ? usage : null;
  }

  function drawHook(frame) {
    push({ kind: 'hook', name: frame.hook.name, skill: frame.hook.skill, timing: frame.hook.timing, content: frame.message.content });
  }

  // ─── voice (voice.js): the speaker toggle, the audio queue, the microphone ───

  const V = window.HookwireVoice;
  const voice = { tts: false, stt: false, recording: null, queue: V.createAudioQueue({ onHook: drawHook }) };
  window.hookwireAudio = voice.queue; // what played, in order (the browser tests read it)

  function renderSpeaker() {
    const on = voice.tts && V.spoken(library.current);
    $('speaker').hidden = !voice.tts;
    $('speaker').setAttribute('aria-pressed', on ? 'true' : 'false');
    $('speaker').textContent = on ? 'Voice on' : 'Voice off';
  }

  $('speaker').addEventListener('click', () => {
    V.setSpoken(library.current, !V.spoken(library.current));
    if (!V.spoken(library.current)) voice.queue.stop();
    renderSpeaker();
  });

  $('mic').addEventListener('click', async () => {
    const button = $('mic');
    if (voice.recording) {
      const recording = voice.recording;
      voice.recording = null;
      button.setAttribute('aria-pressed', 'false');
      button.textContent = 'Mic';
      try {
        const text = await V.transcribe(await recording.stop(), P.authHeaders(access.token));
        if (text) $('input').value = ($('input').value ? $('input').value + ' ' : '') + text;
        $('input').focus();
      } catch (error) {
        toast('error', 'transcription failed: ' + error.message);
      }
      return;
    }
    try {
      voice.recording = await V.record();
      button.setAttribute('aria-pressed', 'true');
      button.textContent = 'Stop mic';
    } catch (error) {
      toast('error', 'the microphone is not available: ' + error.message);
    }
  });

  function onFrame(frame) {
    showFrame(frame);
    updateWorking();
  }

  function showFrame(frame) {
    const update = conversation.receive(frame);
    const chat = view.chat;
    switch (update.kind) {
      case 'stray_error': toast('error', frame.code + ': ' + frame.message); break;
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
        const fresh = draw(entry.item);
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
        renderHooks();
        break;
      case 'hook_trace':
        if (chat) chat.trace.push(P.traceRow(frame));
        break;
      case 'compact':
        closeBubble(chat);
        placeDivider(update.count, frame);
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
        finish({ kind: 'error', text: frame.code + ': ' + frame.message });
        break;
    }
  }

  // ─── Retry, Regenerate, Edit ───
  //
  // Each goes on from an earlier user message: the history is cut to where that message started
  // (`at`, kept on its transcript item), what the page showed from there on is dropped,
  // and the message (or its edit) is sent again. A compaction changes where messages start, so
  // only the messages after the last summary can be redone.

  function forkable(index) {
    const item = view.transcript[index];
    if (!item || item.kind !== 'user' || !Number.isInteger(item.at)) return false;
    return !view.transcript.slice(index + 1).some((i) => i.kind === 'compact');
  }

  function lastUserIndex() {
    for (let i = view.transcript.length - 1; i >= 0; i--) if (view.transcript[i].kind === 'user') return i;
    return -1;
  }

  function canSend() {
    return !conversation.running && view.ws && view.ws.readyState === WebSocket.OPEN;
  }

  function redoFrom(index, text) {
    if (!canSend() || !forkable(index)) return;
    const item = view.transcript[index];
    conversation.truncate(item.at);
    view.transcript = view.transcript.slice(0, index);
    saveTranscript();
    redrawAll();
    startChat(text);
  }

  // A user message with an Edit button (for the messages that can be redone); Edit turns it into
  // a small form whose Send forks the conversation from there.
  function drawUser(item) {
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

  function startEdit(node, item) {
    const index = view.transcript.indexOf(item);
    if (!forkable(index)) {
      toast('warn', 'this message was summarised by a compaction: it can no longer be edited');
      return;
    }
    if (conversation.running) {
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

  // Under the last exchange, when idle: Retry if it failed (the history has nothing of it),
  // Regenerate if it has an answer.
  function updateForkActions(idle) {
    const old = transcriptEl.querySelector('.fork-actions');
    if (old) old.remove();
    const index = lastUserIndex();
    // A waiting approval is decided on its card first (Regenerate would drop it).
    if (!idle || index < 0 || !forkable(index) || conversation.approval) return;
    const item = view.transcript[index];
    const failed = conversation.history.length <= item.at;
    const bar = el('div', 'fork-actions');
    const button = el('button', failed ? 'retry' : 'regenerate', failed ? 'Retry' : 'Regenerate');
    button.type = 'button';
    button.title = failed ? 'Send the same message again' : 'Ask again for another answer to the last message';
    button.onclick = () => redoFrom(index, item.text);
    bar.appendChild(button);
    const wasAtBottom = transcriptEl.scrollHeight - transcriptEl.scrollTop - transcriptEl.clientHeight < 40;
    transcriptEl.appendChild(bar);
    if (wasAtBottom) scroll();
  }

  // ─── connection ───

  function setStatus(kind, text) {
    const status = $('status');
    status.className = 'status ' + kind;
    $('status-text').textContent = text;
  }

  function connect() {
    setStatus('connecting', 'connecting…');
    const ws = new WebSocket(P.socketUrl(location), P.socketProtocols(access.token));
    view.ws = ws;
    ws.onopen = () => {
      view.retry = 0;
      setStatus('online', 'connected');
      setState('idle');
      // A page opened while the server was down has no skills yet: fetch them now.
      if (document.body.dataset.info === 'failed') loadServerInfo();
    };
    ws.onmessage = (event) => {
      let frame;
      try { frame = JSON.parse(event.data); } catch (_) { return; }
      onFrame(frame);
    };
    ws.onclose = () => {
      if (conversation.abort()) finish({ kind: 'error', text: 'connection lost; the reply was cut off' });
      setState('offline');
      const delay = Math.min(10000, 500 * 2 ** view.retry++);
      setStatus('offline', 'offline, retrying in ' + Math.round(delay / 1000) + ' s');
      setTimeout(connect, delay);
    };
  }

  // ─── conversations ───

  function when(ms) {
    const date = new Date(ms);
    const today = new Date();
    return date.toDateString() === today.toDateString()
      ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
      : date.toLocaleDateString([], { month: 'short', day: 'numeric' });
  }

  function renderConversations() {
    const list = $('conversations');
    list.textContent = '';
    const running = !!conversation.running;
    for (const meta of library.list()) {
      const current = meta.id === library.current;
      const li = el('li', 'conversation' + (current ? ' current' : ''));
      li.dataset.id = meta.id;
      const open = el('button', 'open');
      open.type = 'button';
      open.disabled = running;
      if (current) open.setAttribute('aria-current', 'true');
      open.append(el('span', 'title', meta.title), el('span', 'when', when(meta.updated)));
      open.onclick = () => switchTo(meta.id);
      li.appendChild(open);
      list.appendChild(li);
    }
    const meta = library.meta();
    $('conversation-title').textContent = meta.title;
    document.title = meta.title + ' · hookwire';
    const del = $('delete-conversation');
    del.textContent = 'Delete';
    del.classList.remove('armed');
  }

  // Shows conversation `id` (or the current one, after a change to the list).
  function switchTo(id) {
    if (conversation.running) return;
    if (id && id !== library.current) library.switchTo(id);
    conversation = library.open();
    own = library.storeFor();
    voice.queue.stop();
    renderSpeaker();
    view.transcript = loadTranscript();
    view.chat = null;
    redrawAll();
    setState(view.ws && view.ws.readyState === WebSocket.OPEN ? 'idle' : 'offline');
    renderSkillChecks();
    if (isPhone()) showPanel(false);
    $('input').focus();
  }

  function newConversation() {
    if (conversation.running) return;
    // An empty conversation is already a new one.
    if (view.transcript.length || conversation.history.length) library.create();
    switchTo(library.current);
  }

  // Rename in place: the current row becomes a small form.
  function startRename() {
    if (conversation.running) return;
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

  // Delete asks once more (the button says so) before it forgets the conversation.
  function deleteConversation() {
    if (conversation.running) return;
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
    library.remove(library.current);
    switchTo(library.current);
  }

  // An export is a download of a file made here (a blob URL; nothing leaves the page). The link
  // keeps the URL of its last export, freed at the next one.
  function exportAs(link, kind) {
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
    link.download = P.fileName(meta.title, kind === 'json' ? 'json' : 'md');
  }

  // ─── side panel: tabs ───

  const TABS = ['conversations', 'skills', 'hooks'];

  function isPhone() { return window.matchMedia('(max-width: 700px)').matches; }

  function showPanel(on) {
    $('panel').hidden = !on;
    $('toggle-panel').setAttribute('aria-expanded', String(on));
    updatePolling();
  }

  function selectTab(name, focus) {
    if (!TABS.includes(name)) name = 'conversations';
    view.tab = name;
    store.save(TAB, name);
    for (const tab of TABS) {
      const button = $('tab-' + tab);
      const on = tab === name;
      button.setAttribute('aria-selected', String(on));
      button.tabIndex = on ? 0 : -1;
      $('pane-' + tab).hidden = !on;
    }
    if (focus) $('tab-' + name).focus();
    updatePolling();
  }

  // ─── skills ───

  function renderSkills(skills) {
    const box = $('skills');
    box.textContent = '';
    if (!skills.length) box.appendChild(el('p', 'muted', 'No skills loaded.'));
    for (const skill of skills) {
      const card = el('div', 'skill');
      const label = el('label');
      const check = el('input');
      check.type = 'checkbox';
      check.dataset.skill = skill.name;
      check.onchange = () => {
        const names = Array.from(document.querySelectorAll('#skills input[data-skill]')).filter((c) => c.checked).map((c) => c.dataset.skill);
        conversation.setSkills(names);
      };
      label.appendChild(check);
      label.appendChild(document.createTextNode(' ' + skill.name));
      card.appendChild(label);
      if (skill.description) card.appendChild(el('div', 'desc', skill.description));
      if (skill.hooks.length) {
        const list = el('ul');
        for (const hook of skill.hooks) {
          list.appendChild(el('li', null, hook.name + ' · ' + hook.timing + ' · ' + hook.role + (hook.persistent ? ' · persistent' : '') + (hook.tool_filter ? ' · ' + hook.tool_filter.join('|') : '')));
        }
        card.appendChild(list);
      }
      for (const error of skill.errors || []) card.appendChild(el('div', 'problem', error));
      for (const warning of skill.warnings || []) card.appendChild(el('div', 'warning', warning));
      box.appendChild(card);
    }
    renderSkillChecks();
  }

  function renderSkillChecks() {
    const on = conversation.enabledSkills(view.defaultSkills);
    for (const check of document.querySelectorAll('#skills input[data-skill]')) check.checked = on.includes(check.dataset.skill);
  }

  // ─── the Hooks tab ───

  const LEVEL_TITLES = { server: 'Server', workspace: 'Workspace', skill: 'Skill', session: 'Session' };
  const METRICS = [['runs', 'runs'], ['successes', 'ok'], ['failures', 'failures'], ['timeouts', 'timeouts'], ['blocked', 'blocked'], ['skipped', 'skipped'], ['total_ms', 'total'], ['p50_ms', 'p50'], ['p95_ms', 'p95']];

  function hookCard(hook) {
    const card = el('div', 'hook-card' + (hook.trusted ? '' : ' untrusted'));
    card.dataset.hookId = hook.id;
    card.dataset.level = hook.level;
    const head = el('div', 'hook-head');
    const event = el('strong', 'hook-event', hook.event_name);
    if (hook.event_name !== hook.event) event.title = hook.event;
    head.appendChild(event);
    if (hook.matcher) head.appendChild(el('code', 'hook-matcher', hook.matcher));
    head.appendChild(el('span', 'tag', hook.type));
    if (hook.dialect) head.appendChild(el('span', 'tag', hook.dialect));
    if (hook.async) head.appendChild(el('span', 'tag', 'async'));
    // Trust is a question only for workspace files: the tag shows there (and on anything not trusted).
    if (hook.level === 'workspace' || !hook.trusted) head.appendChild(el('span', 'tag ' + (hook.trusted ? 'trusted' : 'not-trusted'), hook.trusted ? 'trusted' : 'not trusted'));
    card.appendChild(head);
    const name = el('div', 'hook-name', hook.name);
    if (hook.id !== hook.name) name.title = hook.id;
    card.appendChild(name);
    if (hook.what) card.appendChild(el('code', 'hook-what', hook.what));
    if (hook.where) {
      const where = el('div', 'hook-where', hook.where);
      if (hook.file) where.title = hook.file;
      card.appendChild(where);
    }
    if (hook.expires_at) card.appendChild(el('div', 'hook-where', 'expires ' + new Date(hook.expires_at * 1000).toLocaleString()));
    if (hook.metrics) {
      const metrics = el('div', 'metrics');
      for (const [key, label] of METRICS) {
        const cell = el('span', 'metric');
        const value = el('span', 'value');
        value.dataset.metric = key;
        cell.append(label + ' ', value);
        metrics.appendChild(cell);
      }
      card.appendChild(metrics);
      fillMetrics(card, hook.metrics);
    }
    return card;
  }

  function fillMetrics(card, metrics) {
    for (const value of card.querySelectorAll('[data-metric]')) {
      const v = metrics[value.dataset.metric];
      value.textContent = value.dataset.metric.endsWith('_ms') ? P.formatMs(v) : String(v);
      const alarming = (value.dataset.metric === 'blocked' || value.dataset.metric === 'failures' || value.dataset.metric === 'timeouts') && v > 0;
      value.parentNode.classList.toggle('alarm', alarming);
    }
  }

  // Draws the tab; when only the metrics changed, it updates them in place (so a selection, e.g.
  // of a trust command, survives the refresh).
  function renderHooks() {
    const box = $('hooks');
    const levels = P.hookLevels(view.hooks, conversation.sessionHooks);
    const shape = JSON.stringify(levels.map((l) => [l.hooks.map((h) => Object.assign({}, h, { metrics: !!h.metrics })), l.untrusted]));
    if (box.dataset.shape === shape) {
      for (const level of levels) {
        for (const hook of level.hooks) {
          const card = box.querySelector('.hook-card[data-level="' + level.level + '"][data-hook-id="' + CSS.escape(hook.id) + '"]');
          if (card && hook.metrics) fillMetrics(card, hook.metrics);
        }
      }
    } else {
      box.dataset.shape = shape;
      box.textContent = '';
      for (const level of levels) {
        const section = el('section', 'hook-level');
        section.dataset.level = level.level;
        const title = el('h3', null, LEVEL_TITLES[level.level] + ' ');
        title.appendChild(el('span', 'count', String(level.hooks.length)));
        section.appendChild(title);
        if (!level.hooks.length && !level.untrusted.length) section.appendChild(el('p', 'muted none', 'none'));
        for (const hook of level.hooks) section.appendChild(hookCard(hook));
        for (const file of level.untrusted) {
          const row = el('div', 'untrusted-file');
          const head = el('div', null, 'Not loaded: ');
          const shown = el('code', null, file.shown);
          shown.title = file.file;
          head.append(shown, ' (' + file.reason + ')');
          row.appendChild(head);
          if (file.trust_command) {
            row.appendChild(el('div', 'muted', 'To trust it, run:'));
            row.appendChild(el('code', 'trust-command', file.trust_command));
          }
          section.appendChild(row);
        }
        box.appendChild(section);
      }
    }
    const status = $('hooks-status');
    if (view.hooksError) status.textContent = 'could not load the hooks: ' + view.hooksError;
    else if (view.hooks) status.textContent = 'Live: refreshed ' + new Date().toLocaleTimeString() + ', every 2 s while this tab is open.';
    else status.textContent = 'loading…';
  }

  function hooksOnScreen() {
    return !$('panel').hidden && view.tab === 'hooks' && document.visibilityState === 'visible';
  }

  async function refreshHooks() {
    if (view.polling) return;
    view.polling = true;
    try {
      view.hooks = await api('/api/hooks');
      view.hooksError = null;
    } catch (error) {
      view.hooksError = String(error.message || error);
    } finally {
      view.polling = false;
    }
    view.refreshes += 1;
    $('hooks').dataset.refreshes = String(view.refreshes);
    renderHooks();
  }

  // The metrics refresh while the tab is on screen, and only then.
  function updatePolling() {
    if (hooksOnScreen()) {
      if (view.poll) return;
      refreshHooks();
      view.poll = setInterval(refreshHooks, HOOKS_REFRESH_MS);
    } else if (view.poll) {
      clearInterval(view.poll);
      view.poll = null;
    }
    $('hooks').dataset.polling = String(!!view.poll);
  }

  // ─── server info ───

  // GET an API route with the access token; a refusal says what to do about it.
  async function api(path) {
    const response = await fetch(path, { headers: P.authHeaders(access.token) });
    if (response.status === 401) {
      throw new Error('this server needs an access token: open the page as ' + location.origin + '/#token=YOUR_TOKEN');
    }
    if (!response.ok) throw new Error(path + ' answered ' + response.status);
    return response.json();
  }

  // The tools the model may be offered, the MCP servers' grouped by server with their state.
  function renderTools(info) {
    const box = $('tools-list');
    box.textContent = '';
    for (const group of window.HookwireProtocol.toolGroups(info)) {
      if (!group.tools.length && group.state === null) continue;
      const card = el('div', 'tool-group');
      const head = el('div', 'tool-group-title', group.title);
      if (group.state) head.appendChild(el('span', 'tag' + (group.state === 'running' ? '' : ' warn'), group.state));
      card.appendChild(head);
      if (group.reason) card.appendChild(el('div', 'warning', group.reason));
      const names = el('ul');
      for (const name of group.tools) names.appendChild(el('li', null, name));
      card.appendChild(names);
      box.appendChild(card);
    }
  }

  async function loadServerInfo() {
    try {
      const info = await api('/api/info');
      $('banner').hidden = !info.demo || store.load(BANNER, false) === true;
      view.defaultSkills = info.default_skills || [];
      view.model = typeof info.model === 'string' ? info.model : null;
      $('model').textContent = view.model || '';
      $('model').hidden = !view.model;
      renderTools(info);
      voice.tts = !!(info.voice && info.voice.tts);
      voice.stt = !!(info.voice && info.voice.stt);
      $('mic').hidden = !voice.stt || !(navigator.mediaDevices && window.MediaRecorder);
      renderSpeaker();
      const skills = await api('/api/skills');
      renderSkills(skills);
      document.body.dataset.info = 'loaded';
    } catch (error) {
      $('skills').textContent = 'could not load the skills: ' + error;
      document.body.dataset.info = 'failed';
    }
  }

  // ─── controls ───

  $('composer').addEventListener('submit', (event) => {
    event.preventDefault();
    const text = $('input').value.trim();
    if (!text || conversation.running || !view.ws || view.ws.readyState !== WebSocket.OPEN) return;
    $('input').value = '';
    startChat(text);
  });
  $('input').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => {
    const cancel = conversation.cancelFrame();
    if (cancel && view.ws) view.ws.send(JSON.stringify(cancel));
    voice.queue.stop();
  });
  $('compact').addEventListener('click', () => {
    if (conversation.running || !view.ws || view.ws.readyState !== WebSocket.OPEN) return;
    const frame = conversation.startCompaction();
    view.chat = newChat();
    view.ws.send(JSON.stringify(frame));
    setState('running');
  });
  $('dismiss-banner').addEventListener('click', () => {
    store.save(BANNER, true);
    $('banner').hidden = true;
    $('input').focus();
  });
  $('new-chat').addEventListener('click', newConversation);
  $('rename-conversation').addEventListener('click', startRename);
  $('delete-conversation').addEventListener('click', deleteConversation);
  $('export-json').addEventListener('click', (event) => exportAs(event.currentTarget, 'json'));
  $('export-md').addEventListener('click', (event) => exportAs(event.currentTarget, 'md'));
  $('toggle-panel').addEventListener('click', () => showPanel($('panel').hidden));
  for (const tab of TABS) $('tab-' + tab).addEventListener('click', () => selectTab(tab));
  // Arrow keys move between tabs (the tab list is one stop for Tab).
  $('tabs').addEventListener('keydown', (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    event.preventDefault();
    selectTab(TABS[(TABS.indexOf(view.tab) + step + TABS.length) % TABS.length], true);
  });
  document.addEventListener('visibilitychange', updatePolling);
  // Another tab of the page changed the list of conversations: show it.
  window.addEventListener('storage', (event) => {
    if (event.key === KEYS.conversations && !conversation.running) renderConversations();
  });
  // The theme switch: kept per browser (theme.js applies it before the page is drawn).
  const THEME = 'hookwire.theme';
  $('theme').value = ['light', 'dark'].includes(store.load(THEME, 'system')) ? store.load(THEME, 'system') : 'system';
  $('theme').addEventListener('change', (event) => {
    const theme = event.target.value;
    store.save(THEME, theme);
    if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
    else delete document.documentElement.dataset.theme;
  });
  $('tools-switch').checked = conversation.tools;
  $('tools-switch').addEventListener('change', (event) => conversation.setTools(event.target.checked));
  $('trace-switch').checked = conversation.trace;
  $('trace-switch').addEventListener('change', (event) => conversation.setTrace(event.target.checked));

  selectTab(view.tab);
  showPanel(!isPhone());
  redrawAll();
  loadServerInfo();
  connect();
})();
