// The hookwire browser client: a reference for anyone writing their own front end.
//
// Protocol duties (PROTOCOL section 3): keep the conversation history, send it back with every
// chat, and after a chat append {role:"user", content: input}, then every `hook` frame's
// `message` as received (in arrival order), then `done.message`. `session_hook` frames' `hook`
// objects are kept and sent back in `session_hooks`. Everything lives in localStorage.
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const KEYS = { history: 'hookwire.history', transcript: 'hookwire.transcript', sessionHooks: 'hookwire.sessionHooks', skills: 'hookwire.skills', tools: 'hookwire.tools' };

  function load(key, fallback) {
    try {
      const raw = localStorage.getItem(key);
      return raw === null ? fallback : JSON.parse(raw);
    } catch (_) {
      return fallback;
    }
  }
  function save(key, value) {
    try { localStorage.setItem(key, JSON.stringify(value)); } catch (_) { /* storage full or off */ }
  }

  const state = {
    history: load(KEYS.history, []),
    transcript: load(KEYS.transcript, []),
    sessionHooks: load(KEYS.sessionHooks, []),
    skills: load(KEYS.skills, null), // null = the server's defaults
    tools: load(KEYS.tools, true),
    defaultSkills: [],
    ws: null,
    retry: 0,
    current: null, // the running chat
    counter: 0,
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
      case 'error': node = el('div', 'chat-error', item.text); break;
      case 'note': node = el('div', 'note', item.text); break;
      default: return null;
    }
    transcriptEl.appendChild(node);
    scroll();
    return node;
  }

  function push(item) {
    state.transcript.push(item);
    save(KEYS.transcript, state.transcript);
    return draw(item);
  }

  function redrawAll() {
    transcriptEl.textContent = '';
    state.transcript.forEach(draw);
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
  }

  function startChat(text) {
    const id = 'c' + Date.now().toString(36) + (++state.counter);
    const chat = { id, input: text, hooks: [], text: '', node: null, item: null, tools: {}, frame: 0 };
    state.current = chat;
    push({ kind: 'user', text });
    const frame = { type: 'chat', id, messages: state.history, input: text, enable_tools: state.tools };
    if (state.skills !== null) frame.skills = state.skills;
    if (state.sessionHooks.length) frame.session_hooks = state.sessionHooks;
    state.ws.send(JSON.stringify(frame));
    setState('running');
  }

  // Re-renders streamed Markdown at most once per animation frame.
  function scheduleRender(chat) {
    if (chat.frame) return;
    chat.frame = requestAnimationFrame(() => {
      chat.frame = 0;
      if (chat.node) renderAssistant(chat.node, chat.text);
      scroll();
    });
  }

  function assistantNode(chat) {
    if (!chat.node) {
      chat.item = { kind: 'assistant', text: '' };
      state.transcript.push(chat.item);
      chat.node = draw(chat.item);
    }
    return chat.node;
  }

  function finish(chat) {
    if (chat.frame) cancelAnimationFrame(chat.frame);
    if (chat.node) renderAssistant(chat.node, chat.text);
    if (chat.item) chat.item.text = chat.text;
    save(KEYS.transcript, state.transcript);
    state.current = null;
    setState(state.ws && state.ws.readyState === WebSocket.OPEN ? 'idle' : 'offline');
    $('input').focus();
  }

  function onFrame(frame) {
    const chat = state.current;
    if (frame.type === 'pong') return;
    if (!chat || frame.id !== chat.id) {
      if (frame.type === 'error') toast('error', frame.code + ': ' + frame.message);
      return;
    }
    switch (frame.type) {
      case 'start': break;
      case 'text':
        assistantNode(chat);
        chat.text += frame.delta;
        scheduleRender(chat);
        break;
      case 'plan': push({ kind: 'plan', text: frame.content }); chat.node = null; chat.text = ''; break;
      case 'tool_call': {
        // Text before a tool call is its own bubble; text after it starts a new one.
        if (chat.node) { finishBubble(chat); }
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
        save(KEYS.transcript, state.transcript);
        break;
      }
      case 'hook':
        chat.hooks.push(frame.message);
        push({ kind: 'hook', name: frame.hook.name, skill: frame.hook.skill, timing: frame.hook.timing, content: frame.message.content });
        break;
      case 'session_hook':
        state.sessionHooks.push(frame.hook);
        save(KEYS.sessionHooks, state.sessionHooks);
        push({ kind: 'session_hook', event: frame.hook.event });
        renderSessionHooks();
        break;
      case 'notice': toast(frame.level, frame.message); break;
      case 'done':
        finishBubble(chat);
        state.history.push({ role: 'user', content: chat.input }, ...chat.hooks, frame.message);
        save(KEYS.history, state.history);
        if (frame.reason !== 'completed') push({ kind: 'note', text: 'ended: ' + frame.reason });
        finish(chat);
        break;
      case 'error':
        finishBubble(chat);
        push({ kind: 'error', text: frame.code + ': ' + frame.message });
        finish(chat);
        break;
    }
  }

  function finishBubble(chat) {
    if (chat.frame) { cancelAnimationFrame(chat.frame); chat.frame = 0; }
    if (chat.node) renderAssistant(chat.node, chat.text);
    if (chat.item) chat.item.text = chat.text;
    save(KEYS.transcript, state.transcript);
    chat.node = null;
    chat.item = null;
    chat.text = '';
  }

  // ─── connection ───

  function setStatus(kind, text) {
    const status = $('status');
    status.className = 'status ' + kind;
    $('status-text').textContent = text;
  }

  function connect() {
    setStatus('connecting', 'connecting…');
    const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws');
    state.ws = ws;
    ws.onopen = () => {
      state.retry = 0;
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
      if (state.current) {
        const chat = state.current;
        finishBubble(chat);
        push({ kind: 'error', text: 'connection lost; the reply was cut off' });
        finish(chat);
      }
      setState('offline');
      const delay = Math.min(10000, 500 * 2 ** state.retry++);
      setStatus('offline', 'offline, retrying in ' + Math.round(delay / 1000) + ' s');
      setTimeout(connect, delay);
    };
  }

  // ─── skills panel ───

  function enabledSkills() {
    return state.skills !== null ? state.skills : state.defaultSkills;
  }

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
      box2.checked = enabledSkills().includes(skill.name);
      box2.onchange = () => {
        const names = Array.from(document.querySelectorAll('#skills input[data-skill]')).filter((c) => c.checked).map((c) => c.dataset.skill);
        state.skills = names;
        save(KEYS.skills, names);
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
    if (!state.sessionHooks.length) list.appendChild(el('li', null, 'none'));
    for (const hook of state.sessionHooks) list.appendChild(el('li', null, hook.event + ': ' + (hook.prompt || hook.command || '')));
  }

  async function loadServerInfo() {
    try {
      const info = await (await fetch('/api/info')).json();
      $('banner').hidden = !info.demo;
      state.defaultSkills = info.default_skills || [];
      const skills = await (await fetch('/api/skills')).json();
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
    if (!text || state.current || !state.ws || state.ws.readyState !== WebSocket.OPEN) return;
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
    if (state.current && state.ws) state.ws.send(JSON.stringify({ type: 'cancel', id: state.current.id }));
  });
  $('new-chat').addEventListener('click', () => {
    if (state.current) return;
    state.history = [];
    state.transcript = [];
    state.sessionHooks = [];
    save(KEYS.history, []);
    save(KEYS.transcript, []);
    save(KEYS.sessionHooks, []);
    redrawAll();
  });
  $('toggle-panel').addEventListener('click', () => {
    const panel = $('panel');
    panel.hidden = !panel.hidden;
    $('toggle-panel').setAttribute('aria-expanded', String(!panel.hidden));
  });
  $('tools-switch').checked = state.tools;
  $('tools-switch').addEventListener('change', (event) => {
    state.tools = event.target.checked;
    save(KEYS.tools, state.tools);
  });
  if (window.matchMedia('(min-width: 701px)').matches) {
    $('panel').hidden = false;
    $('toggle-panel').setAttribute('aria-expanded', 'true');
  }

  redrawAll();
  loadServerInfo();
  connect();
})();
