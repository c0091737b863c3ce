// The hookwire chat protocol for a client, with no DOM: the conversation state, the frames the
// client sends, and what each server frame changes. `app.js` draws; this file decides. It is the
// reference for anyone writing their own front end (docs/protocol.md §3):
//
// - Every `chat` sends the whole history back as `messages`, plus `skills` (absent = the server's
//   defaults), `enable_tools`, and the stored `session_hooks`.
// - After a chat that ends with `done` (whatever its reason: a cancelled chat's `done.message`
//   holds the partial answer), the history gains {role: "user", content: input}, then every
//   `hook` frame's `message` exactly as received, in arrival order, then `done.message`.
// - A chat that ends with `error`, or whose connection is lost, adds nothing to the history.
// - `session_hook` frames' `hook` objects are kept (even if that chat later fails) and sent back.
// - A `compact` frame (docs/protocol.md §10) changes the history at once: its first `count`
//   messages give way to `message` (the signed summary) followed by `pinned` (the persistent hook
//   messages that were among them, verbatim). `startCompaction` sends the manual `compact` frame;
//   its `done` adds nothing.
// - An `approval` frame (docs/protocol.md §11) leaves calls waiting: the chat's `done`
//   (`approval_required`) is added as usual, and the approval is kept until the person decides;
//   `resumeChat` sends the decisions (a `chat` with `resume` and no `input`), and that chat's
//   `done` adds its hook messages and `done.message` (no user message: there was no input). A new
//   chat instead of deciding drops the approval.
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
  };

  const NO_STORE = { load: (_key, fallback) => fallback, save: () => {} };

  // What `receive` returns for a frame that changes nothing (pong, another chat's frame, …).
  const IGNORED = Object.freeze({ kind: 'ignored', ended: false });

  // Frames of the running chat that the client shows but that change no state here.
  const SHOWN = ['start', 'text', 'plan', 'tool_call', 'tool_result', 'notice'];

  function list(value) {
    return Array.isArray(value) ? value : [];
  }

  // A conversation, restored from `store` (which it also keeps up to date).
  function createConversation(store) {
    store = store || NO_STORE;
    let history = list(store.load(KEYS.history, []));
    let sessionHooks = list(store.load(KEYS.sessionHooks, []));
    let skills = store.load(KEYS.skills, null);
    if (!Array.isArray(skills)) skills = null;
    let tools = store.load(KEYS.tools, true) !== false;
    let approval = store.load(KEYS.approval, null);
    if (!approval || typeof approval.state !== 'string' || !Array.isArray(approval.calls)) approval = null;
    function setApproval(value) {
      approval = value;
      store.save(KEYS.approval, approval);
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

      /** Starts a chat: returns the `chat` frame to send. One chat runs at a time. */
      startChat(input, id) {
        if (current) throw new Error('a chat is already running: ' + current.id);
        if (typeof input !== 'string' || input === '') throw new Error('the input must be a non-empty string');
        id = id || 'c' + Date.now().toString(36) + (++counter);
        current = { id, input, hooks: [] };
        if (approval) setApproval(null); // a new message instead of a decision
        const frame = { type: 'chat', id, messages: history.slice(), input, enable_tools: tools };
        if (skills !== null) frame.skills = skills.slice();
        if (sessionHooks.length) frame.session_hooks = sessionHooks.slice();
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
            const added = [{ role: 'user', content: current.input }].concat(current.hooks, [frame.message]);
            history = history.concat(added);
            store.save(KEYS.history, history);
            current = null;
            return { kind: 'done', frame, ended: true, added };
          }
          case 'error':
            // A refused resume (expired, changed, …) cannot be tried again.
            if (current.resume) setApproval(null);
            current = null;
            return { kind: 'error', frame, ended: true };
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

  // The access token of a server that has `auth_token` set (README "Security model"): taken from
  // the page's own URL once (`?token=…`), kept in `session` (sessionStorage: gone with the tab),
  // and removed from the address bar. Returns `{token, cleanUrl}`: `cleanUrl` is the address to
  // show instead (null when the URL had no token).
  function takeToken(href, session) {
    const url = new URL(href);
    const fromUrl = url.searchParams.get('token');
    if (fromUrl !== null) {
      url.searchParams.delete('token');
      session.save(TOKEN_KEY, fromUrl);
      return { token: fromUrl || null, cleanUrl: url.toString() };
    }
    const kept = session.load(TOKEN_KEY, null);
    return { token: typeof kept === 'string' && kept ? kept : null, cleanUrl: null };
  }

  // Where the page opens its WebSocket: the same host, `?token=` when there is one (a browser
  // cannot set headers on a WebSocket).
  function socketUrl(location, token) {
    const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
    return scheme + location.host + '/ws' + (token ? '?token=' + encodeURIComponent(token) : '');
  }

  // The headers of the page's API requests.
  function authHeaders(token) {
    return token ? { Authorization: 'Bearer ' + token } : {};
  }

  const TOKEN_KEY = 'hookwire.token';

  global.HookwireProtocol = { KEYS, createConversation, takeToken, socketUrl, authHeaders };
})(globalThis);
