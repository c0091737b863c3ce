// The hookwire chat protocol for a client, with no DOM: the conversation state, the frames the
// client sends, and what each server frame changes. `app.js` draws; this file decides. It is the
// reference for anyone writing their own front end (docs/protocol.md §3):
//
// - Every `chat` sends the whole history back as `messages`, plus `skills` (absent = the server's
//   defaults), `enable_tools`, and the stored `session_hooks`.
// - After a chat that ends with `done` (whatever its reason), the history gains `done.turn`
//   (docs/protocol.md §13): every message the chat added, exactly as received — the user input,
//   persistent hook messages, assistant messages with their `tool_calls`, `tool` results, the
//   final answer — so a later chat can use an earlier tool result. (From a server without
//   `turn`: {role: "user", content: input}, then every `hook` frame's `message`, then
//   `done.message`.)
// - A chat that ends with `error` adds its `error.turn` when it has one (what happened before
//   the failure); otherwise, or when the connection is lost, nothing.
// - A tool call left without an answer at the end of the history (calls that waited for an
//   approval nobody gave) is answered with a note before the next chat: the server refuses a
//   history with an unanswered call.
// - `session_hook` frames' `hook` objects are kept (even if that chat later fails) and sent back.
// - A `compact` frame (docs/protocol.md §10, §13) changes the history at once: its first `count`
//   messages give way to `message` (the summary, a user message) followed by `pinned` (the
//   persistent hook messages that were among them, verbatim). It may come in the middle of a
//   chat (after text or tool frames): `count` is still about the history as sent.
//   `startCompaction` sends the manual `compact` frame; its `done` adds nothing.
//   `placeCompaction` puts its divider in the transcript where the summarised messages were and
//   marks their items `folded` (a `user` item keeps `at`, its message's place in the history).
// - An `approval` frame (docs/protocol.md §11) leaves calls waiting: the chat's `done`
//   (`approval_required`) is added as usual, and the approval is kept until the person decides;
//   `resumeChat` sends the decisions (a `chat` with `resume` and no `input`), and that chat's
//   `done` adds its `turn` (the results of the decided calls and what followed). A new chat
//   instead of deciding drops the approval.
// - With tracing on (`setTrace`), chats and resumes carry `trace: true`; the `hook_trace` frames
//   (docs/protocol.md §12) are shown, never added to the history.
//
// Beside the conversation: `createLibrary` keeps several conversations in one store (each with
// its own history, session hooks, waiting approval and transcript, under its own key prefix) and
// exports them as JSON or Markdown; `hookLevels` arranges `GET /api/hooks` and the stored
// session hooks for the Hooks tab; `traceRow` / `traceSummary` read `hook_trace` frames.
//
// A plain script, no build step: it defines one global, `HookwireProtocol`. Storage is passed in
// (`{load(key, fallback), save(key, value)}`), so node's test runner can drive it without a
// browser (tests/js/).
(function (global) {
  'use strict';

  const KEYS = {
    history: 'hookwire.history',
    sessionHooks: 'hookwire.sessionHooks',
    skills: 'hookwire.skills', // null = the server's default skills
    tools: 'hookwire.tools',
    approval: 'hookwire.approval', // {id, calls, state} of calls waiting for a decision, or null
    trace: 'hookwire.trace', // whether chats ask for hook_trace frames
    transcript: 'hookwire.transcript', // what the page shows, as items (app.js draws them)
    conversations: 'hookwire.conversations', // [{id, title, named, created, updated}]
    current: 'hookwire.current', // the id of the conversation on screen
  };

  // The keys each conversation has for itself; the others (skills, tools, trace) are the
  // person's settings, shared by every conversation.
  const PER_CONVERSATION = ['history', 'sessionHooks', 'approval', 'transcript'];

  const NO_STORE = { load: (_key, fallback) => fallback, save: () => {} };

  // What `receive` returns for a frame that changes nothing (pong, another chat's frame, …).
  const IGNORED = Object.freeze({ kind: 'ignored', ended: false });

  // Frames of the running chat that the client shows but that change no state here.
  const SHOWN = ['start', 'text', 'plan', 'tool_call', 'tool_result', 'notice', 'hook_trace', 'audio'];

  // A spoken chat's history, as its audio queue plays it (docs/protocol.md §18): `done.message`
  // (every round's text) is cut where the sentences spoken before each persistent hook end, and
  // the hook stored there; the rest of the answer follows it. Null when no hook came after some
  // speech, or the spoken sentences are not found in the answer (then the usual order).
  function spokenHistory(spoken, answer) {
    const lastHook = spoken.map((item) => !!item.hook).lastIndexOf(true);
    if (lastHook < 0 || !spoken.slice(0, lastHook).some((item) => item.text)) return null;
    const content = typeof answer.content === 'string' ? answer.content : '';
    const out = [];
    let cursor = 0;
    let start = 0;
    for (const item of spoken.slice(0, lastHook + 1)) {
      if (item.text) {
        const at = content.indexOf(item.text, cursor);
        if (at < 0) return null;
        cursor = at + item.text.length;
        continue;
      }
      const said = content.slice(start, cursor).trim();
      if (said) out.push({ role: 'assistant', content: said });
      start = cursor;
      out.push(item.hook);
    }
    const rest = content.slice(start).trim();
    if (rest) out.push(Object.assign({}, answer, { content: rest }));
    return out;
  }

  function list(value) {
    return Array.isArray(value) ? value : [];
  }

  const NOT_DECIDED = 'the tool call did not run: the person sent a new message instead of deciding';

  /**
   * `messages` with every tool call that has no `tool` message answering it before the next
   * user message (or the end) answered by a note, right after the answers it has.
   */
  function answerOpenCalls(messages) {
    const out = [];
    let open = []; // [{id, name}] of the calls not answered yet
    const close = () => {
      for (const call of open) out.push({ role: 'tool', tool_call_id: call.id, name: call.name, content: NOT_DECIDED });
      open = [];
    };
    for (const message of list(messages)) {
      if (!message || typeof message !== 'object') continue;
      if (message.role === 'tool') {
        open = open.filter((call) => call.id !== message.tool_call_id);
      } else if (open.length) {
        close();
      }
      out.push(message);
      if (message.role === 'assistant') {
        for (const call of list(message.tool_calls)) {
          if (call && typeof call.id === 'string') {
            open.push({ id: call.id, name: call.function && typeof call.function.name === 'string' ? call.function.name : '' });
          }
        }
      }
    }
    close();
    return out;
  }

  /** A call's `arguments` (a JSON string, as OpenAI writes them) as a value for the card. */
  function argumentsOf(call) {
    const raw = call && call.function ? call.function.arguments : undefined;
    if (typeof raw !== 'string') return raw && typeof raw === 'object' ? raw : {};
    try { return JSON.parse(raw); } catch (_) { return raw; }
  }

  /**
   * What the page draws for history messages (`transcript` items): the person's messages,
   * answers, hook chips, and a tool card for each call with its result. Used to rebuild the
   * view from the history (a reload without a stored transcript, an import).
   */
  function itemsOf(messages) {
    const text = (v, fallback) => (typeof v === 'string' && v ? v : (fallback || ''));
    const items = [];
    const cards = {};
    const all = list(messages);
    all.forEach((m, index) => {
      if (!m || typeof m !== 'object') return;
      const content = typeof m.content === 'string' ? m.content : '';
      if (m._hook && typeof m._hook === 'object') {
        items.push({ kind: 'hook', name: text(m._hook.name, '?'), skill: text(m._hook.skill), timing: text(m._hook.timing), content });
        return;
      }
      if (m._compact && typeof m._compact === 'object') {
        items.push({ kind: 'compact', count: Number.isInteger(m._compact.count) ? m._compact.count : 0, text: content });
        return;
      }
      switch (m.role) {
        case 'user': items.push({ kind: 'user', text: content, at: index }); break;
        case 'assistant': {
          // Text without calls right before a message with calls is the planning round's plan.
          const next = all[index + 1];
          const plan = !list(m.tool_calls).length && next && next.role === 'assistant' && list(next.tool_calls).length > 0;
          if (content) items.push(plan ? { kind: 'plan', text: content } : { kind: 'assistant', text: content });
          for (const call of list(m.tool_calls)) {
            if (!call || typeof call.id !== 'string') continue;
            const item = { kind: 'tool', call_id: call.id, name: text(call.function && call.function.name, '?'), arguments: argumentsOf(call), done: false };
            cards[call.id] = item;
            items.push(item);
          }
          break;
        }
        case 'tool': {
          const item = cards[m.tool_call_id];
          if (item) Object.assign(item, { done: true, content, is_error: false });
          break;
        }
        default: break;
      }
    });
    return items;
  }

  // A conversation, restored from `store` (which it also keeps up to date).
  function createConversation(store) {
    store = store || NO_STORE;
    let history = list(store.load(KEYS.history, []));
    let sessionHooks = list(store.load(KEYS.sessionHooks, []));
    let skills = store.load(KEYS.skills, null);
    if (!Array.isArray(skills)) skills = null;
    let tools = store.load(KEYS.tools, true) !== false;
    let trace = store.load(KEYS.trace, false) === true;
    let approval = store.load(KEYS.approval, null);
    if (!approval || typeof approval.state !== 'string' || !Array.isArray(approval.calls)) approval = null;
    function setApproval(value) {
      approval = value;
      store.save(KEYS.approval, approval);
    }
    // Calls that no answer will come for are answered by a note (see the head of this file).
    function settleOpenCalls() {
      const settled = answerOpenCalls(history);
      if (settled.length !== history.length) {
        history = settled;
        store.save(KEYS.history, history);
      }
    }
    let current = null; // the running chat: {id, input, hooks: [hook frames' messages]}
    let counter = 0;

    return {
      /** The history to send with the next chat (a copy). */
      get history() { return history.slice(); },
      /** The stored session hooks (a copy). */
      get sessionHooks() { return sessionHooks.slice(); },
      /** The skills chosen by the person, or null for the server's defaults. */
      get skills() { return skills === null ? null : skills.slice(); },
      /** Whether chats run with tools (`enable_tools`). */
      get tools() { return tools; },
      /** Whether chats ask for `hook_trace` frames (`trace: true`). */
      get trace() { return trace; },
      /** The calls waiting for the person's decision (`{id, calls, state}`), or null. */
      get approval() { return approval; },
      /** The running chat's id, or null. */
      get running() { return current ? current.id : null; },

      /** The skills that are on: the chosen ones, else `defaults` (the server's). */
      enabledSkills(defaults) {
        return skills !== null ? skills.slice() : list(defaults).slice();
      },
      setSkills(names) {
        skills = list(names).slice();
        store.save(KEYS.skills, skills);
      },
      setTools(on) {
        tools = on !== false;
        store.save(KEYS.tools, tools);
      },
      setTrace(on) {
        trace = on === true;
        store.save(KEYS.trace, trace);
      },

      /** Starts a chat: returns the `chat` frame to send. One chat runs at a time. */
      startChat(input, id, options) {
        if (current) throw new Error('a chat is already running: ' + current.id);
        if (typeof input !== 'string' || input === '') throw new Error('the input must be a non-empty string');
        id = id || 'c' + Date.now().toString(36) + (++counter);
        const voice = !!(options && options.voice);
        current = { id, input, hooks: [], voice, spoken: [] };
        if (approval) setApproval(null); // a new message instead of a decision
        settleOpenCalls();
        const frame = { type: 'chat', id, messages: history.slice(), input, enable_tools: tools };
        if (skills !== null) frame.skills = skills.slice();
        if (sessionHooks.length) frame.session_hooks = sessionHooks.slice();
        if (trace) frame.trace = true;
        if (voice) frame.voice = true; // docs/protocol.md §18: `audio` frames too
        return frame;
      },

      /**
       * Starts a manual compaction: returns the `compact` frame to send (the server answers
       * `start`, `compact` (when there was something to summarise), `done`).
       */
      startCompaction(id) {
        if (current) throw new Error('a chat is already running: ' + current.id);
        id = id || 'k' + Date.now().toString(36) + (++counter);
        current = { id, input: null, hooks: [] };
        if (approval) setApproval(null);
        settleOpenCalls();
        return { type: 'compact', id, messages: history.slice() };
      },

      /**
       * Sends the person's decisions on the waiting calls: `decisions` is
       * `[{call_id, decision: 'allow'|'deny', reason?}]`. Returns the `chat` frame with `resume`.
       */
      resumeChat(decisions, id) {
        if (current) throw new Error('a chat is already running: ' + current.id);
        if (!approval) throw new Error('no tool call waits for a decision');
        id = id || 'r' + Date.now().toString(36) + (++counter);
        current = { id, input: null, resume: true, hooks: [] };
        const frame = {
          type: 'chat', id, messages: history.slice(), enable_tools: tools,
          resume: { state: approval.state, decisions: list(decisions).slice() },
        };
        if (skills !== null) frame.skills = skills.slice();
        if (sessionHooks.length) frame.session_hooks = sessionHooks.slice();
        if (trace) frame.trace = true;
        return frame;
      },

      /** The `cancel` frame for the running chat, or null when none runs. */
      cancelFrame() {
        return current ? { type: 'cancel', id: current.id } : null;
      },

      /**
       * Takes one server frame and says what it changed:
       * - `{kind: 'ignored'}`: a pong, an unknown type, or a frame of a chat that is not running;
       * - `{kind: 'stray_error', frame}`: an `error` about no running chat (e.g. `busy`): show it;
       * - `{kind: frame.type, frame, ended}` for the running chat's frames; `ended` is true for
       *   `done` and `error`, after which no chat runs. `done` also has `added`: the messages
       *   appended to the history.
       */
      receive(frame) {
        if (!frame || typeof frame !== 'object' || frame.type === 'pong') return IGNORED;
        if (!current || frame.id !== current.id) {
          return frame.type === 'error' ? { kind: 'stray_error', frame, ended: false } : IGNORED;
        }
        switch (frame.type) {
          case 'hook':
            current.hooks.push(frame.message);
            if (current.voice) current.spoken.push({ hook: frame.message });
            break;
          case 'audio':
            // What was spoken before each hook: the hook is stored where playback reaches it.
            if (current.voice && typeof frame.text === 'string') current.spoken.push({ text: frame.text });
            break;
          case 'session_hook':
            sessionHooks.push(frame.hook);
            store.save(KEYS.sessionHooks, sessionHooks);
            break;
          case 'compact': {
            const count = Number.isInteger(frame.count) && frame.count >= 0 ? frame.count : 0;
            if (!frame.message || typeof frame.message.content !== 'string') return IGNORED;
            history = [frame.message].concat(list(frame.pinned), history.slice(count));
            store.save(KEYS.history, history);
            return { kind: 'compact', frame, ended: false, count };
          }
          case 'approval':
            if (typeof frame.state !== 'string' || !Array.isArray(frame.calls)) return IGNORED;
            setApproval({ id: frame.id, calls: frame.calls, state: frame.state });
            return { kind: 'approval', frame, ended: false };
          case 'done': {
            if (Array.isArray(frame.turn)) {
              if (current.resume) setApproval(null);
              const added = frame.turn.slice();
              if (added.length) {
                history = history.concat(added);
                store.save(KEYS.history, history);
              }
              current = null;
              return { kind: 'done', frame, ended: true, added };
            }
            if (current.resume) {
              setApproval(null);
              const added = current.hooks.concat([frame.message]);
              history = history.concat(added);
              store.save(KEYS.history, history);
              current = null;
              return { kind: 'done', frame, ended: true, added };
            }
            if (current.input === null) {
              current = null;
              return { kind: 'done', frame, ended: true, added: [] };
            }
            const said = current.voice ? spokenHistory(current.spoken, frame.message) : null;
            const added = [{ role: 'user', content: current.input }].concat(said || current.hooks, said ? [] : [frame.message]);
            history = history.concat(added);
            store.save(KEYS.history, history);
            current = null;
            return { kind: 'done', frame, ended: true, added };
          }
          case 'error': {
            // A refused resume (expired, changed, …) cannot be tried again.
            if (current.resume) setApproval(null);
            // What the chat did before it failed is kept (docs/protocol.md §13).
            const added = list(frame.turn).slice();
            if (added.length) {
              history = history.concat(added);
              store.save(KEYS.history, history);
            }
            current = null;
            return { kind: 'error', frame, ended: true, added };
          }
          default:
            if (!SHOWN.includes(frame.type)) return IGNORED;
        }
        return { kind: frame.type, frame, ended: false };
      },

      /** The connection was lost: the running chat ends with nothing added. True if one ran. */
      abort() {
        const was = current !== null;
        current = null;
        return was;
      },

      /**
       * Keeps only the first `length` messages of the history (for Retry, Regenerate and Edit:
       * the conversation goes on from an earlier point). A waiting approval is dropped with the
       * messages it belonged to. Nothing else changes (session hooks stay).
       */
      truncate(length) {
        if (current) throw new Error('a chat is running: ' + current.id);
        if (!Number.isInteger(length) || length < 0) throw new Error('the length must be a whole number');
        if (length >= history.length) return;
        history = history.slice(0, length);
        store.save(KEYS.history, history);
        if (approval) setApproval(null);
      },

      /** A new conversation: no history, no session hooks (skills and tools stay). */
      clear() {
        if (current) throw new Error('a chat is running: ' + current.id);
        history = [];
        sessionHooks = [];
        setApproval(null);
        store.save(KEYS.history, history);
        store.save(KEYS.sessionHooks, sessionHooks);
      },
    };
  }

  // ─── several conversations ───

  const UNTITLED = 'New conversation';

  // A store that keeps conversation `id`'s own keys under `hookwire.conversation.<id>.` and
  // passes the shared settings through: `createConversation` needs no change to be one of many.
  function conversationStore(store, id) {
    const own = (key) => {
      const name = PER_CONVERSATION.find((n) => KEYS[n] === key);
      return name ? 'hookwire.conversation.' + id + '.' + name : key;
    };
    return {
      load: (key, fallback) => store.load(own(key), fallback),
      save: (key, value) => store.save(own(key), value),
    };
  }

  // A title from the first message: its first line, at most 48 characters.
  function titleFrom(input) {
    const line = String(input || '').split('\n').map((l) => l.trim()).find((l) => l) || '';
    const flat = line.replace(/\s+/g, ' ');
    return flat.length > 48 ? flat.slice(0, 47) + '…' : flat || UNTITLED;
  }

  function validMeta(meta) {
    return meta && typeof meta === 'object' && typeof meta.id === 'string' && meta.id !== '' &&
      typeof meta.title === 'string';
  }

  /**
   * The person's conversations in `store` (`{load, save, remove?}`): a list of
   * `{id, title, named, created, updated}` (times in ms) under `KEYS.conversations`, the one on
   * screen under `KEYS.current`, and each one's history, session hooks, waiting approval and
   * transcript under its own prefix (`conversationStore`). There is always at least one. The
   * keys of the single conversation the page kept before (`hookwire.history`, …) become the
   * first conversation. `options.now` and `options.newId` are for tests.
   */
  function createLibrary(store, options) {
    store = store || NO_STORE;
    options = options || {};
    const now = options.now || (() => Date.now());
    let counter = 0;
    const newId = options.newId || (() => now().toString(36) + Math.random().toString(36).slice(2, 6) + (++counter));
    const forget = (key) => (typeof store.remove === 'function' ? store.remove(key) : store.save(key, null));

    let metas = store.load(KEYS.conversations, null);
    if (!Array.isArray(metas)) metas = null;
    else metas = metas.filter(validMeta);
    if (metas === null) metas = migrate();
    let current = store.load(KEYS.current, null);
    if (!metas.length) metas.push(fresh());
    if (!metas.some((m) => m.id === current)) current = mostRecent().id;
    saveList();

    function fresh(title) {
      const t = now();
      return { id: newId(), title: title || UNTITLED, named: !!title, created: t, updated: t };
    }
    function saveList() {
      store.save(KEYS.conversations, metas);
      store.save(KEYS.current, current);
    }
    function mostRecent() {
      return metas.slice().sort((a, b) => b.updated - a.updated)[0];
    }
    function find(id) {
      const meta = metas.find((m) => m.id === id);
      if (!meta) throw new Error('no conversation ' + id);
      return meta;
    }
    // Another page of the same origin may have changed the list since: read it again before
    // each change, so that one page does not write back a list without the other's changes.
    function reread() {
      const stored = store.load(KEYS.conversations, null);
      if (!Array.isArray(stored)) return;
      const mine = metas.find((m) => m.id === current);
      metas = stored.filter(validMeta);
      // The conversation on screen here was deleted by another page: in use, so it stays.
      if (mine && !metas.some((m) => m.id === current)) metas.push(mine);
    }

    // The page before conversations: one set of keys, moved into the first conversation.
    function migrate() {
      const old = {};
      let any = false;
      for (const name of PER_CONVERSATION) {
        const value = store.load(KEYS[name], null);
        if (value === null) continue;
        old[name] = value;
        if (Array.isArray(value) ? value.length : typeof value === 'object') any = true;
      }
      if (!any) {
        for (const name of Object.keys(old)) forget(KEYS[name]);
        return [];
      }
      const history = list(old.history);
      const first = history.find((m) => m && m.role === 'user' && typeof m.content === 'string' && !m._hook);
      const meta = fresh(first ? titleFrom(first.content) : 'Earlier conversation');
      meta.named = false;
      const target = conversationStore(store, meta.id);
      for (const name of PER_CONVERSATION) {
        if (name in old) target.save(KEYS[name], old[name]);
        forget(KEYS[name]);
      }
      return [meta];
    }

    return {
      /** The conversations, most recently used first (copies). */
      list() {
        reread();
        return metas.slice().sort((a, b) => b.updated - a.updated).map((m) => Object.assign({}, m));
      },
      /** The id of the conversation on screen. */
      get current() { return current; },
      /** The meta data of conversation `id` (the current one by default), a copy. */
      meta(id) { return Object.assign({}, find(id || current)); },
      /** The store of conversation `id`'s own keys (and the shared settings). */
      storeFor(id) { return conversationStore(store, find(id || current).id); },
      /** Conversation `id` (the current one by default), restored from its keys. */
      open(id) { return createConversation(this.storeFor(id)); },
      /** A new, empty conversation, which becomes the current one. Returns its meta data. */
      create(title) {
        reread();
        const meta = fresh(typeof title === 'string' && title.trim() ? title.trim() : null);
        metas.push(meta);
        current = meta.id;
        saveList();
        return Object.assign({}, meta);
      },
      /** Makes `id` the current conversation. */
      switchTo(id) {
        reread();
        current = find(id).id;
        saveList();
      },
      /** Renames `id`; an empty title gives the automatic one back. */
      rename(id, title) {
        reread();
        const meta = find(id);
        const clean = String(title || '').replace(/\s+/g, ' ').trim().slice(0, 120);
        meta.title = clean || UNTITLED;
        meta.named = !!clean;
        saveList();
      },
      /**
       * Conversation `id` was used (a message `input` was sent): it moves to the top, and an
       * unnamed one takes its title from its first message.
       */
      touch(id, input) {
        reread();
        const meta = find(id);
        meta.updated = Math.max(now(), meta.updated + 1);
        if (!meta.named && meta.title === UNTITLED && input) meta.title = titleFrom(input);
        saveList();
      },
      /**
       * Deletes `id` and its keys. When it was the current one, the most recent other one takes
       * its place (a fresh one when none is left). Returns the current id.
       */
      remove(id) {
        reread();
        find(id);
        metas = metas.filter((m) => m.id !== id);
        for (const name of PER_CONVERSATION) forget('hookwire.conversation.' + id + '.' + name);
        if (!metas.length) metas.push(fresh());
        if (current === id) current = mostRecent().id;
        saveList();
        return current;
      },
      /** Conversation `id` as one JSON value (see `exportJson`). */
      exportJson(id, extra) {
        const meta = find(id || current);
        return exportJson(meta, this.storeFor(meta.id), Object.assign({ exported: now() }, extra));
      },
      /** Conversation `id` as Markdown (see `exportMarkdown`). */
      exportMarkdown(id, extra) {
        const meta = find(id || current);
        const own = this.storeFor(meta.id);
        return exportMarkdown(meta, list(own.load(KEYS.transcript, [])), Object.assign({ exported: now() }, extra));
      },
    };
  }

  // ─── export ───

  function iso(ms) {
    return typeof ms === 'number' && isFinite(ms) ? new Date(ms).toISOString() : null;
  }

  /**
   * A conversation as one JSON value: its `messages` (the protocol history, exactly what the next
   * chat would send), `session_hooks`, the waiting `approval`, and the `transcript` the page
   * shows, with its title, times and (from `extra`) the model.
   */
  function exportJson(meta, store, extra) {
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
  function exportMarkdown(meta, transcript, extra) {
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
        case 'error': out.push('**Error:** ' + item.text); break;
        case 'note': out.push('_' + item.text + '_'); break;
        default: break;
      }
    }
    return out.join('\n\n') + '\n';
  }

  // A file name for an export of the conversation titled `title`.
  function fileName(title, extension) {
    const slug = String(title || '').toLowerCase().normalize('NFKD').replace(/[\u0300-\u036f]/g, '')
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '').slice(0, 60).replace(/-+$/, '');
    return (slug || 'conversation') + '.' + extension;
  }

  // ─── hook traces and usage ───

  const OUTCOMES = ['success', 'skip', 'block', 'ask', 'timeout', 'failure'];

  /** A `hook_trace` frame as a timeline row: `{event, hook, level, ms, outcome, changed}`. */
  function traceRow(frame) {
    frame = frame || {};
    const text = (v, fallback) => (typeof v === 'string' && v ? v : fallback);
    return {
      event: text(frame.event, '?'),
      hook: text(frame.hook, '?'),
      level: text(frame.level, '?'),
      ms: typeof frame.ms === 'number' && isFinite(frame.ms) && frame.ms >= 0 ? frame.ms : null,
      outcome: OUTCOMES.includes(frame.outcome) ? frame.outcome : text(frame.outcome, 'unknown'),
      changed: list(frame.changed).filter((f) => typeof f === 'string'),
    };
  }

  /**
   * What a turn's hook runs add up to: `{runs, blocked, asked, failed (failures and timeouts),
   * changed (runs that changed something), ms}`.
   */
  function traceSummary(rows) {
    rows = list(rows);
    const count = (test) => rows.filter(test).length;
    return {
      runs: rows.length,
      blocked: count((r) => r.outcome === 'block'),
      asked: count((r) => r.outcome === 'ask'),
      failed: count((r) => r.outcome === 'failure' || r.outcome === 'timeout'),
      changed: count((r) => r.changed.length > 0),
      ms: Math.round(rows.reduce((sum, r) => sum + (r.ms || 0), 0) * 10) / 10,
    };
  }

  /** `ms` for people: `—` when unknown, one decimal under 10 ms, whole milliseconds above. */
  function formatMs(ms) {
    if (typeof ms !== 'number' || !isFinite(ms)) return '—';
    if (ms < 10) return (Math.round(ms * 10) / 10) + ' ms';
    return Math.round(ms).toLocaleString('en-US') + ' ms';
  }

  /**
   * What the chat's last answer bubble shows once `done` arrives. `done.message` is the final
   * answer (the bubbles' texts joined by a blank line) as the hooks left it: a hook that rewrote
   * the answer makes it differ from what streamed, and then it replaces the last bubble's text
   * (what the earlier bubbles already show is left out). `streamed`: the chat's bubble texts, in
   * order. Returns null when the bubbles already show it.
   */
  function finalText(streamed, done) {
    const message = done && done.message && typeof done.message.content === 'string' ? done.message.content : '';
    if (!message || message === streamed.join('\n\n')) return null;
    const earlier = streamed.slice(0, -1).join('\n\n');
    if (earlier && message.startsWith(earlier + '\n\n')) return message.slice(earlier.length + 2);
    return message;
  }

  /** `done.usage` as `{prompt, completion}` token counts, or null when it has none. */
  function usageOf(done) {
    const usage = done && done.usage;
    if (!usage || typeof usage !== 'object') return null;
    const n = (v) => (Number.isInteger(v) && v >= 0 ? v : null);
    const prompt = n(usage.prompt_tokens);
    const completion = n(usage.completion_tokens);
    return prompt === null && completion === null ? null : { prompt: prompt || 0, completion: completion || 0 };
  }

  /**
   * The one-line summary of a turn item (`{model, usage, trace}`), e.g.
   * `gpt-4o · 1,200 in · 80 out tokens · 4 hook runs · 1 blocked · 12 ms`.
   */
  function turnLine(item) {
    const parts = [];
    if (item.model) parts.push(item.model);
    if (item.usage) {
      parts.push(item.usage.prompt.toLocaleString('en-US') + ' in · ' + item.usage.completion.toLocaleString('en-US') + ' out tokens');
    }
    const runs = list(item.trace);
    if (runs.length) {
      const s = traceSummary(runs);
      parts.push(s.runs + ' hook run' + (s.runs === 1 ? '' : 's'));
      if (s.blocked) parts.push(s.blocked + ' blocked');
      if (s.asked) parts.push(s.asked + ' asked');
      if (s.failed) parts.push(s.failed + ' failed');
      parts.push(formatMs(s.ms));
    }
    return parts.join(' · ');
  }

  // ─── the Hooks tab ───

  const LEVELS = ['server', 'workspace', 'skill', 'session'];

  // The end of a long path (`…/.hookwire/hooks.yaml`); the whole one goes in a tooltip.
  function shortPath(file) {
    const parts = String(file || '').split('/');
    return parts.length > 4 ? '…/' + parts.slice(-3).join('/') : String(file || '');
  }

  function metricsOf(m) {
    if (!m || typeof m !== 'object') return null;
    const n = (v) => (Number.isInteger(v) && v >= 0 ? v : 0);
    const ms = (v) => (typeof v === 'number' && isFinite(v) ? v : null);
    return {
      runs: n(m.runs), successes: n(m.successes), failures: n(m.failures), timeouts: n(m.timeouts), blocked: n(m.blocked),
      skipped: n(m.skipped), total_ms: ms(m.total_ms), p50_ms: ms(m.p50_ms), p95_ms: ms(m.p95_ms),
    };
  }

  /**
   * The Hooks tab's content: `GET /api/hooks` (`api`) and the conversation's stored session
   * hooks, as `[{level, hooks: [row], untrusted: [{file, shown, reason, trust_command}]}]` for
   * server, workspace, skill and session, in that order. A row: `{id, name (what traces call it),
   * level, where (file:line), file,
   * event, event_name, dialect, type, matcher, what (command, URL or prompt), trusted, async,
   * metrics (null where the server keeps none)}`; session rows also have `expires_at`.
   */
  function hookLevels(api, sessionHooks) {
    api = api && typeof api === 'object' ? api : {};
    const text = (v) => (typeof v === 'string' && v !== '' ? v : null);
    const byLevel = { server: [], workspace: [], skill: [], session: [] };
    for (const hook of list(api.hooks)) {
      if (!hook || typeof hook !== 'object') continue;
      const level = LEVELS.includes(hook.level) ? hook.level : 'server';
      const line = Number.isInteger(hook.line) ? hook.line : null;
      byLevel[level].push({
        id: text(hook.id) || '?',
        name: text(hook.name) || text(hook.id) || '?',
        level,
        file: text(hook.file),
        where: text(hook.file) ? shortPath(hook.file) + (line ? ':' + line : '') : null,
        event: text(hook.event) || '?',
        event_name: text(hook.event_name) || text(hook.event) || '?',
        dialect: text(hook.dialect),
        type: text(hook.type) || '?',
        matcher: text(hook.matcher),
        what: text(hook.command) || text(hook.url) || text(hook.prompt),
        trusted: hook.trusted !== false,
        async: hook.async === true,
        metrics: metricsOf(hook.metrics),
      });
    }
    for (const hook of list(api.skill_hooks)) {
      if (!hook || typeof hook !== 'object') continue;
      const id = (text(hook.skill) || '?') + '/' + (text(hook.name) || '?');
      byLevel.skill.push({
        id,
        name: id,
        level: 'skill',
        file: text(hook.file),
        where: text(hook.file) ? shortPath(hook.file) : null,
        event: text(hook.timing) || '?',
        event_name: text(hook.timing) || '?',
        dialect: null,
        type: 'prompt',
        matcher: null,
        what: (text(hook.role) || 'system') + ' message' + (hook.persistent ? ', persistent' : ''),
        trusted: true,
        async: false,
        metrics: null,
      });
    }
    list(sessionHooks).forEach((hook, index) => {
      if (!hook || typeof hook !== 'object') return;
      const id = text(hook.name) || 'session-' + (index + 1);
      byLevel.session.push({
        id,
        name: id,
        level: 'session',
        file: null,
        where: 'this conversation',
        event: text(hook.event) || '?',
        event_name: text(hook.event) || '?',
        dialect: 'hookwire',
        type: text(hook.type) || 'llm',
        matcher: text(hook.matcher),
        what: text(hook.prompt) || text(hook.command),
        trusted: true,
        async: false,
        metrics: null,
        expires_at: Number.isInteger(hook.expires_at) ? hook.expires_at : null,
      });
    });
    const untrusted = list(api.untrusted)
      .filter((u) => u && typeof u.file === 'string')
      .map((u) => ({
        file: u.file,
        shown: text(u.shown) || u.file,
        // `why` ends with what to do (the command, shown on its own); the reason comes first.
        reason: text(u.why) ? u.why.replace(/;[^;]*$/, '') : 'not trusted',
        trust_command: text(u.trust_command),
      }));
    return LEVELS.map((level) => ({ level, hooks: byLevel[level], untrusted: level === 'workspace' ? untrusted : [] }));
  }

  // The access token of a server that has `auth_token` set (README "Security model"): taken from
  // the page's own URL once, from its fragment (`/#token=…`: a fragment never leaves the browser,
  // so no proxy or server log holds it; a `?token=` query is not read), kept in `session`
  // (sessionStorage: gone with the tab), and removed from the address bar. Returns
  // `{token, cleanUrl}`: `cleanUrl` is the address to show instead (null when the URL had no
  // token).
  function takeToken(href, session) {
    const url = new URL(href);
    const fragment = new URLSearchParams(url.hash.replace(/^#/, ''));
    const fromUrl = fragment.get('token');
    if (fromUrl !== null) {
      fragment.delete('token');
      const rest = fragment.toString();
      url.hash = rest ? '#' + rest : '';
      session.save(TOKEN_KEY, fromUrl);
      return { token: fromUrl || null, cleanUrl: url.toString() };
    }
    const kept = session.load(TOKEN_KEY, null);
    return { token: typeof kept === 'string' && kept ? kept : null, cleanUrl: null };
  }

  // Where the page opens its WebSocket: the same host, never with the token in the URL.
  function socketUrl(location) {
    const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
    return scheme + location.host + '/ws';
  }

  // The subprotocols the page offers (a browser cannot set headers on a WebSocket, but it sends
  // these in `Sec-WebSocket-Protocol`): `hookwire`, which the server answers, and the token as
  // `hookwire.token.<token>`, percent-encoded down to the characters a protocol name may hold.
  function socketProtocols(token) {
    if (!token) return ['hookwire'];
    const encoded = encodeURIComponent(token).replace(/[()]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
    return ['hookwire', 'hookwire.token.' + encoded];
  }

  // The headers of the page's API requests.
  function authHeaders(token) {
    return token ? { Authorization: 'Bearer ' + token } : {};
  }

  const TOKEN_KEY = 'hookwire.token';

  // The tools of `/api/info`, grouped for the page: the built-in ones first, then each MCP
  // server with its state (`running`, `starting`, `down` …, and why) and its tools.
  function toolGroups(info) {
    info = info || {};
    const servers = list(info.mcp_servers);
    const fromServers = new Set(list(info.mcp_tools).map((tool) => tool && tool.name));
    const groups = [{ title: 'built-in', state: null, reason: null,
      tools: list(info.tools).filter((name) => !fromServers.has(name)) }];
    for (const server of servers) {
      if (!server || typeof server.name !== 'string') continue;
      groups.push({
        title: 'MCP: ' + server.name,
        state: typeof server.state === 'string' ? server.state : null,
        reason: typeof server.reason === 'string' && server.reason ? server.reason : null,
        tools: list(info.mcp_tools).filter((tool) => tool && tool.server === server.name).map((tool) => tool.name),
      });
    }
    return groups;
  }

  // ─── compaction in the transcript ───

  const SUMMARY_OPEN = '<summary of the earlier conversation>';
  const SUMMARY_CLOSE = '</summary of the earlier conversation>';

  /** A summary's text without the tags it reaches the model in. */
  function summaryText(content) {
    let text = String(content || '');
    if (text.startsWith(SUMMARY_OPEN) && text.endsWith(SUMMARY_CLOSE)) {
      text = text.slice(SUMMARY_OPEN.length, text.length - SUMMARY_CLOSE.length).trim();
    }
    return text;
  }

  /**
   * Places a compaction's `divider` item in `transcript` (changed in place) where the summarised
   * messages were: before the first `user` item whose history place `at` is at or past `count`
   * (the first kept one, or the running chat's own input), else at the end. Every item before
   * it that is not folded yet (an older divider too: its summary was summarised again) becomes
   * `folded`; the kept user items' places move as the history did (`count` messages gave way to
   * the summary and `pinned` hook messages). A user item without `at` (stored before places
   * were kept) counts as summarised. Returns the divider's index.
   */
  function placeCompaction(transcript, divider, count, pinned) {
    const items = list(transcript);
    const kept = (item) => item && item.kind === 'user' && Number.isInteger(item.at) && item.at >= count;
    let cut = items.findIndex(kept);
    if (cut < 0) cut = items.length;
    for (let i = 0; i < cut; i++) {
      if (items[i] && typeof items[i] === 'object') items[i].folded = true;
    }
    const shift = 1 + (Number.isInteger(pinned) && pinned > 0 ? pinned : 0) - count;
    for (let i = cut; i < items.length; i++) {
      if (kept(items[i])) items[i].at += shift;
    }
    items.splice(cut, 0, divider);
    return cut;
  }

  global.HookwireProtocol = {
    placeCompaction, summaryText,
    KEYS, createConversation, takeToken, socketUrl, socketProtocols, authHeaders,
    createLibrary, conversationStore, titleFrom, exportJson, exportMarkdown, fileName,
    traceRow, traceSummary, turnLine, usageOf, finalText, formatMs, hookLevels, shortPath, toolGroups,
    answerOpenCalls, itemsOf,
  };
})(globalThis);
