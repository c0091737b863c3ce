// The hookwire chat protocol for a client, with no DOM: one conversation's state, the frames the
// client sends, and what each server frame changes. The view (`app.js` and the modules it
// imports) draws; this module decides. It is the reference for anyone writing their own front
// end (docs/protocol.md §3):
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
//   persistent hook messages that were among them, verbatim), then `context` when present (what
//   hooks such as Claude Code's SessionStart added at the compaction). It may come in the middle of a
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
// Storage is passed in (`{load(key, fallback), save(key, value)}`), so node's test runner drives
// it without a browser (tests/js/). Beside it, also without a DOM: `library.js` (several
// conversations), `exports.js`, `trace.js` (hook traces, usage), `hook-levels.js` (the Hooks tab),
// `server.js` (token, socket), `compaction.js`.

export const KEYS = {
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

// The title of a conversation that has none yet.
export const UNTITLED = 'New conversation';

// The keys each conversation has for itself; the others (skills, tools, trace) are the
// person's settings, shared by every conversation.
export const PER_CONVERSATION = ['history', 'sessionHooks', 'approval', 'transcript'];

export const NO_STORE = { load: (_key, fallback) => fallback, save: () => {} };

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

export function list(value) {
  return Array.isArray(value) ? value : [];
}

const NOT_DECIDED = 'the tool call did not run: the person sent a new message instead of deciding';

/**
 * `messages` with every tool call that has no `tool` message answering it before the next
 * user message (or the end) answered by a note, right after the answers it has.
 */
export function answerOpenCalls(messages) {
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

/**
 * The groups of a history, as the server counts them for compaction: a user message and
 * everything up to the next user message (so a tool call stays with its results and a hook
 * message with its turn); what comes before the first user message, and a summary (a user
 * message with `_compact`) with its pinned hooks, belong to the first group. `[start, end)` pairs.
 */
export function groupsOf(messages) {
  const all = list(messages);
  const starts = [];
  all.forEach((m, at) => {
    if (m && m.role === 'user' && !m._compact && !m._hook) starts.push(at);
  });
  if (!all.length) return [];
  if (!starts.length) starts.push(0);
  starts[0] = 0;
  return starts.map((start, i) => [start, i + 1 < starts.length ? starts[i + 1] : all.length]);
}

/**
 * The oldest half of `messages`' groups (at least one) cut away, its persistent hook messages
 * (`_hook`) kept in front, in order: `{history, count, kept, turns, dropped}` (`count`: the
 * messages cut at the start, `kept`: the hook messages put back in front, `turns`: the groups
 * dropped, `dropped`: the person's messages among them), or null when there is nothing to drop.
 */
export function dropOldestTurns(messages) {
  const all = list(messages);
  const groups = groupsOf(all);
  if (!groups.length) return null;
  const turns = Math.ceil(groups.length / 2);
  const count = groups[turns - 1][1];
  const cut = all.slice(0, count);
  const hooks = cut.filter((m) => m && m._hook);
  const dropped = cut.filter((m) => m && m.role === 'user' && !m._hook && !m._compact && typeof m.content === 'string').map((m) => m.content);
  return { history: hooks.concat(all.slice(count)), count, kept: hooks.length, turns, dropped };
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
export function itemsOf(messages) {
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
export function createConversation(store) {
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
          // `context` (when present): what hooks added at the compaction, kept after the pinned.
          history = [frame.message].concat(list(frame.pinned), list(frame.context), history.slice(count));
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

    /**
     * Drops the oldest turns (`dropOldestTurns`), the last way out of a history too long for the
     * model; a waiting approval goes with them. Returns what was dropped, or null.
     */
    dropOldest() {
      if (current) throw new Error('a chat is running: ' + current.id);
      const result = dropOldestTurns(history);
      if (!result) return null;
      history = result.history;
      store.save(KEYS.history, history);
      if (approval) setApproval(null);
      return result;
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
