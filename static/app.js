// The hookwire browser page: the view. `protocol.js` (the global `HookwireProtocol`) keeps the
// conversation and decides what each frame means (history, session hooks, the frames to send);
// this file draws the transcript, the skills panel and the controls, and keeps what is on the
// screen in localStorage so a reload shows it again.
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const TRANSCRIPT = 'hookwire.transcript';

  // localStorage, one JSON value per key; the conversation saves its own keys through it too.
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
  };

  const conversation = window.HookwireProtocol.createConversation(store);
  // sessionStorage, for the access token: it lasts as long as the tab.
  const session = {
    load(key, fallback) {
      try { const raw = sessionStorage.getItem(key); return raw === null ? fallback : JSON.parse(raw); } catch (_) { return fallback; }
    },
    save(key, value) {
      try { sessionStorage.setItem(key, JSON.stringify(value)); } catch (_) { /* storage off */ }
    },
  };
  const access = window.HookwireProtocol.takeToken(location.href, session);
  if (access.cleanUrl) history.replaceState(history.state, '', access.cleanUrl);
  const loaded = store.load(TRANSCRIPT, []);
  const view = {
    transcript: Array.isArray(loaded) ? loaded : [], // what is drawn, as items (see draw)
    defaultSkills: [],
    ws: null,
    retry: 0,
    chat: null, // the running chat on screen: {bubble: the streaming answer or null, tools: {call_id: {item, node}}}
  };

  // ─── transcript rendering ───

  const transcriptEl = $('transcript');
  function scroll() { transcriptEl.scrollTop = transcriptEl.scrollHeight; }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function renderAssistant(node, markdown) {
    node.innerHTML = window.HookwireMarkdown.render(markdown);
  }

  // Draws one transcript item; returns the element (assistant items are updated while streaming).
  function draw(item) {
    let node;
    switch (item.kind) {
      case 'user': node = el('div', 'msg user', item.text); break;
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
        node.appendChild(el('summary', null, item.count + ' earlier message' + (item.count === 1 ? '' : 's') + ' summarised'));
        node.appendChild(el('div', 'summary-text', item.text));
        break;
      }
      case 'approval': node = drawApproval(item); break;
      case 'error': node = el('div', 'chat-error', item.text); break;
      case 'note': node = el('div', 'note', item.text); break;
      default: return null;
    }
    transcriptEl.appendChild(node);
    scroll();
    return node;
  }

  // The calls of an `approval` frame, each with Approve / Deny (and an optional reason); once
  // every call has a decision, the resume is sent. Only the approval the conversation still
  // keeps has live buttons (an older card, or one after a new message, is a record).
  function drawApproval(item) {
    const card = el('div', 'approval-card');
    card.setAttribute('role', 'group');
    card.setAttribute('aria-label', 'Tool calls waiting for your approval');
    card.appendChild(el('div', 'approval-title', 'Waiting for your approval'));
    const pending = conversation.approval;
    const live = !!pending && pending.state === item.state;
    item.decisions = item.decisions || {};
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
        row.appendChild(el('div', 'approval-outcome', decided ? (decided.decision === 'allow' ? 'approved' : 'denied') : 'not decided'));
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

  function decide(item, call, decision, reason) {
    if (conversation.running || !view.ws || view.ws.readyState !== WebSocket.OPEN) {
      toast('warn', 'not connected: decide again once the page is back online');
      return;
    }
    item.decisions[call.call_id] = reason ? { decision, reason } : { decision };
    const fresh = drawApproval(item);
    transcriptEl.replaceChild(fresh, transcriptEl.querySelector('.approval-card[data-state="' + CSS.escape(item.state) + '"]') || fresh);
    store.save(TRANSCRIPT, view.transcript);
    if (item.calls.some((c) => !item.decisions[c.call_id])) return;
    const decisions = item.calls.map((c) => Object.assign({ call_id: c.call_id }, item.decisions[c.call_id]));
    const frame = conversation.resumeChat(decisions);
    view.chat = { bubble: null, tools: {} };
    view.ws.send(JSON.stringify(frame));
    setState('running');
  }

  function push(item) {
    view.transcript.push(item);
    store.save(TRANSCRIPT, view.transcript);
    return draw(item);
  }

  function redrawAll() {
    transcriptEl.textContent = '';
    view.transcript.forEach(draw);
    renderSessionHooks();
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
  }

  function startChat(text) {
    const frame = conversation.startChat(text);
    view.chat = { bubble: null, tools: {} };
    push({ kind: 'user', text });
    view.ws.send(JSON.stringify(frame));
    setState('running');
  }

  // Streamed text goes into the open answer bubble (opened by the first delta); its Markdown is
  // re-rendered at most once per animation frame.
  function appendText(chat, delta) {
    if (!chat.bubble) {
      const item = { kind: 'assistant', text: '' };
      view.transcript.push(item);
      chat.bubble = { item, node: draw(item), frame: 0 };
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
    renderAssistant(bubble.node, bubble.item.text);
    store.save(TRANSCRIPT, view.transcript);
  }

  // The one way a chat ends on screen (done, error, connection lost): close the bubble, show how
  // it ended (`ending`, a transcript item, when there is something to say), free the composer.
  function finish(ending) {
    closeBubble(view.chat);
    if (ending) push(ending);
    view.chat = null;
    setState(view.ws && view.ws.readyState === WebSocket.OPEN ? 'idle' : 'offline');
    $('input').focus();
  }

  function onFrame(frame) {
    const update = conversation.receive(frame);
    const chat = view.chat;
    switch (update.kind) {
      case 'stray_error': toast('error', frame.code + ': ' + frame.message); break;
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
        store.save(TRANSCRIPT, view.transcript);
        break;
      }
      case 'hook':
        push({ kind: 'hook', name: frame.hook.name, skill: frame.hook.skill, timing: frame.hook.timing, content: frame.message.content });
        break;
      case 'session_hook':
        push({ kind: 'session_hook', event: frame.hook.event });
        renderSessionHooks();
        break;
      case 'compact':
        closeBubble(chat);
        push({ kind: 'compact', count: update.count, text: frame.message.content });
        break;
      case 'approval':
        closeBubble(chat);
        push({ kind: 'approval', state: frame.state, calls: frame.calls, decisions: {} });
        break;
      case 'notice': toast(frame.level, frame.message); break;
      case 'done':
        finish(frame.reason !== 'completed' && frame.reason !== 'approval_required' ? { kind: 'note', text: 'ended: ' + frame.reason } : null);
        break;
      case 'error':
        finish({ kind: 'error', text: frame.code + ': ' + frame.message });
        break;
    }
  }

  // ─── connection ───

  function setStatus(kind, text) {
    const status = $('status');
    status.className = 'status ' + kind;
    $('status-text').textContent = text;
  }

  function connect() {
    setStatus('connecting', 'connecting…');
    const ws = new WebSocket(window.HookwireProtocol.socketUrl(location, access.token));
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

  // ─── skills panel ───

  function renderSkills(skills) {
    const box = $('skills');
    box.textContent = '';
    if (!skills.length) box.appendChild(el('p', 'muted', 'No skills loaded.'));
    for (const skill of skills) {
      const card = el('div', 'skill');
      const label = el('label');
      const box2 = el('input');
      box2.type = 'checkbox';
      box2.dataset.skill = skill.name;
      box2.checked = conversation.enabledSkills(view.defaultSkills).includes(skill.name);
      box2.onchange = () => {
        const names = Array.from(document.querySelectorAll('#skills input[data-skill]')).filter((c) => c.checked).map((c) => c.dataset.skill);
        conversation.setSkills(names);
      };
      label.appendChild(box2);
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
  }

  function renderSessionHooks() {
    const list = $('session-hooks');
    list.textContent = '';
    const hooks = conversation.sessionHooks;
    if (!hooks.length) list.appendChild(el('li', null, 'none'));
    for (const hook of hooks) list.appendChild(el('li', null, hook.event + ': ' + (hook.prompt || hook.command || '')));
  }

  // GET an API route with the access token; a refusal says what to do about it.
  async function api(path) {
    const response = await fetch(path, { headers: window.HookwireProtocol.authHeaders(access.token) });
    if (response.status === 401) {
      throw new Error('this server needs an access token: open the page as ' + location.origin + '/?token=YOUR_TOKEN');
    }
    if (!response.ok) throw new Error(path + ' answered ' + response.status);
    return response.json();
  }

  async function loadServerInfo() {
    try {
      const info = await api('/api/info');
      $('banner').hidden = !info.demo;
      view.defaultSkills = info.default_skills || [];
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
  });
  $('compact').addEventListener('click', () => {
    if (conversation.running || !view.ws || view.ws.readyState !== WebSocket.OPEN) return;
    const frame = conversation.startCompaction();
    view.chat = { bubble: null, tools: {} };
    view.ws.send(JSON.stringify(frame));
    setState('running');
  });
  $('new-chat').addEventListener('click', () => {
    if (conversation.running) return;
    conversation.clear();
    view.transcript = [];
    store.save(TRANSCRIPT, view.transcript);
    redrawAll();
  });
  $('toggle-panel').addEventListener('click', () => {
    const panel = $('panel');
    panel.hidden = !panel.hidden;
    $('toggle-panel').setAttribute('aria-expanded', String(!panel.hidden));
  });
  $('tools-switch').checked = conversation.tools;
  $('tools-switch').addEventListener('change', (event) => conversation.setTools(event.target.checked));
  if (window.matchMedia('(min-width: 701px)').matches) {
    $('panel').hidden = false;
    $('toggle-panel').setAttribute('aria-expanded', 'true');
  }

  redrawAll();
  loadServerInfo();
  connect();
})();
