// static/protocol.js without a browser: the history rules of docs/protocol.md §3, session
// hooks, the frames the page sends. Run: `node --test tests/js/` (tests/it/frontend.rs runs it
// under `cargo test`).
import { test } from 'node:test';
import assert from 'node:assert/strict';

// The modules without a DOM, imported as the page imports them (here in node, with no DOM, so
// any use of `window`, `document` or `localStorage` at load time throws).
const DOM_FREE = ['protocol', 'library', 'exports', 'trace', 'hook-levels', 'server', 'compaction'];
const before = new Set(Object.getOwnPropertyNames(globalThis));
const modules = {};
for (const name of DOM_FREE) modules[name] = await import('../../static/' + name + '.js');
const added = Object.getOwnPropertyNames(globalThis).filter((name) => !before.has(name));
const { createConversation, KEYS, answerOpenCalls, itemsOf } = modules.protocol;
const { takeToken, socketUrl, socketProtocols, authHeaders } = modules.server;
const { summaryText, placeCompaction } = modules.compaction;

// Like localStorage: values are stored as JSON text, so a change that was not saved stays unseen.
function memoryStore(initial = {}) {
  const data = new Map(Object.entries(initial).map(([key, value]) => [key, JSON.stringify(value)]));
  return {
    data,
    load(key, fallback) { return data.has(key) ? JSON.parse(data.get(key)) : fallback; },
    save(key, value) { data.set(key, JSON.stringify(value)); },
    get(key) { return data.has(key) ? JSON.parse(data.get(key)) : undefined; },
  };
}

const OLD = [
  { role: 'user', content: 'hi' },
  { role: 'assistant', content: 'hello' },
];
const BREVITY = {
  role: 'system',
  content: 'Be brief.',
  _hook: { name: 'brevity', skill: 'concise', timing: 'after_user_input', sig: 'ab'.repeat(32) },
};
const CAREFUL = {
  role: 'user',
  content: 'Check the tool output.',
  _hook: { name: 'careful', skill: 'code-reader', timing: 'after_tool_call', sig: 'cd'.repeat(32) },
};
const hookFrame = (id, message) => ({
  type: 'hook',
  id,
  hook: { name: message._hook.name, skill: message._hook.skill, timing: message._hook.timing },
  message,
});
const done = (id, content, reason = 'completed') => ({
  type: 'done',
  id,
  reason,
  message: { role: 'assistant', content },
  usage: { prompt_tokens: 3, completion_tokens: 4 },
});

test('the modules define no global and touch no DOM', () => {
  assert.deepEqual(added, []);
  assert.equal(typeof createConversation, 'function');
  assert.equal(typeof globalThis.window, 'undefined');
});

test('a plain chat: old messages, the input, then done.message', () => {
  const store = memoryStore({ [KEYS.history]: OLD });
  const chat = createConversation(store);
  const frame = chat.startChat('how are you?', 'c1');
  assert.deepEqual(frame.messages, OLD);
  assert.equal(chat.running, 'c1');

  assert.equal(chat.receive({ type: 'start', id: 'c1' }).kind, 'start');
  for (const delta of ['Fine, ', 'thanks.']) {
    const update = chat.receive({ type: 'text', id: 'c1', delta });
    assert.deepEqual([update.kind, update.ended], ['text', false]);
  }
  assert.deepEqual(chat.history, OLD, 'streamed text does not touch the history');

  const update = chat.receive(done('c1', 'Fine, thanks.'));
  assert.deepEqual([update.kind, update.ended], ['done', true]);
  const expected = [
    ...OLD,
    { role: 'user', content: 'how are you?' },
    { role: 'assistant', content: 'Fine, thanks.' },
  ];
  assert.deepEqual(update.added, expected.slice(2));
  assert.deepEqual(chat.history, expected);
  assert.deepEqual(store.get(KEYS.history), expected, 'saved');
  assert.equal(chat.running, null);
  assert.deepEqual(chat.startChat('next', 'c2').messages, expected, 'sent back with the next chat');
});

test('persistent hook messages go in as received, in arrival order, between input and answer', () => {
  const store = memoryStore();
  const chat = createConversation(store);
  chat.startChat('read README.md', 'c1');
  const frames = [
    { type: 'start', id: 'c1' },
    hookFrame('c1', BREVITY),
    { type: 'plan', id: 'c1', content: 'read the readme' },
    { type: 'tool_call', id: 'c1', call_id: 't1', name: 'read_file', arguments: { path: 'README.md' } },
    { type: 'tool_result', id: 'c1', call_id: 't1', name: 'read_file', content: 'hello', is_error: false },
    hookFrame('c1', CAREFUL),
    { type: 'notice', id: 'c1', level: 'info', message: 'hi', source: 'greeter' },
    { type: 'text', id: 'c1', delta: 'It says hello.' },
  ];
  assert.deepEqual(
    frames.map((frame) => chat.receive(frame).kind),
    ['start', 'hook', 'plan', 'tool_call', 'tool_result', 'hook', 'notice', 'text'],
  );
  assert.deepEqual(chat.history, [], 'nothing is added before done');
  chat.receive(done('c1', 'It says hello.'));
  assert.deepEqual(store.get(KEYS.history), [
    { role: 'user', content: 'read README.md' },
    BREVITY,
    CAREFUL,
    { role: 'assistant', content: 'It says hello.' },
  ]);
  assert.equal(chat.history[1], BREVITY, 'the very object received, _hook and sig untouched');
});

test('a cancelled chat keeps its partial answer from done.message', () => {
  const store = memoryStore({ [KEYS.history]: OLD });
  const chat = createConversation(store);
  assert.equal(chat.cancelFrame(), null, 'nothing to cancel');
  chat.startChat('go on forever', 'c7');
  chat.receive(hookFrame('c7', BREVITY));
  chat.receive({ type: 'text', id: 'c7', delta: 'tick tick' });
  assert.deepEqual(chat.cancelFrame(), { type: 'cancel', id: 'c7' });
  assert.equal(chat.running, 'c7', 'the chat runs until the server says done');

  const update = chat.receive(done('c7', 'tick tick', 'cancelled'));
  assert.deepEqual([update.kind, update.ended, update.frame.reason], ['done', true, 'cancelled']);
  assert.deepEqual(store.get(KEYS.history), [
    ...OLD,
    { role: 'user', content: 'go on forever' },
    BREVITY,
    { role: 'assistant', content: 'tick tick' },
  ]);
  assert.equal(chat.cancelFrame(), null);
});

test('a failed chat adds nothing to the history, but keeps its session hooks', () => {
  const store = memoryStore({ [KEYS.history]: OLD });
  const chat = createConversation(store);
  chat.startChat('hello', 'c1');
  chat.receive(hookFrame('c1', BREVITY));
  const hook = { event: 'stop', type: 'prompt', prompt: 'JUDGE', sig: '' };
  chat.receive({ type: 'session_hook', id: 'c1', hook });
  chat.receive({ type: 'text', id: 'c1', delta: 'partial' });
  const update = chat.receive({ type: 'error', id: 'c1', code: 'upstream', message: 'model overloaded' });
  assert.deepEqual([update.kind, update.ended], ['error', true]);
  assert.equal(chat.running, null);
  assert.deepEqual(chat.history, OLD);
  assert.deepEqual(store.get(KEYS.history), OLD, 'nothing was saved over the old history');
  assert.deepEqual(store.get(KEYS.sessionHooks), [hook]);

  // The hook messages of the failed chat do not leak into the next one.
  chat.startChat('again', 'c2');
  chat.receive(done('c2', 'ok'));
  assert.deepEqual(chat.history, [...OLD, { role: 'user', content: 'again' }, { role: 'assistant', content: 'ok' }]);
});

test('a lost connection ends the chat with nothing added', () => {
  const store = memoryStore({ [KEYS.history]: OLD });
  const chat = createConversation(store);
  assert.equal(chat.abort(), false, 'nothing ran');
  chat.startChat('hello', 'c1');
  chat.receive(hookFrame('c1', BREVITY));
  assert.equal(chat.abort(), true);
  assert.equal(chat.running, null);
  assert.deepEqual(store.get(KEYS.history), OLD);
  assert.equal(chat.receive(done('c1', 'late')).kind, 'ignored', 'a late done of that chat is ignored');
  assert.deepEqual(chat.history, OLD);
});

test('session hooks are stored and sent back with every later chat', () => {
  const store = memoryStore();
  const chat = createConversation(store);
  assert.equal('session_hooks' in chat.startChat('register one', 'c1'), false, 'none yet: field absent');
  const first = { event: 'stop', type: 'prompt', prompt: 'JUDGE {{assistant_output}}', expires_at: 1700000000, sig: 'ef'.repeat(32) };
  const second = { event: 'pre_tool_execution', type: 'prompt', prompt: 'careful', sig: '01'.repeat(32) };
  assert.equal(chat.receive({ type: 'session_hook', id: 'c1', hook: first }).kind, 'session_hook');
  chat.receive({ type: 'session_hook', id: 'c1', hook: second });
  chat.receive(done('c1', 'registered'));
  assert.deepEqual(chat.sessionHooks, [first, second]);
  assert.deepEqual(store.get(KEYS.sessionHooks), [first, second]);
  assert.deepEqual(chat.startChat('next', 'c2').session_hooks, [first, second]);
  chat.receive(done('c2', 'fine'));

  // A reload: the page builds a new conversation on the same storage.
  const reloaded = createConversation(store);
  assert.deepEqual(reloaded.startChat('after reload', 'c3').session_hooks, [first, second]);
  reloaded.receive(done('c3', 'ok'));

  // "New conversation" forgets the history and the session hooks.
  reloaded.clear();
  assert.deepEqual([store.get(KEYS.history), store.get(KEYS.sessionHooks)], [[], []]);
  const fresh = reloaded.startChat('fresh', 'c4');
  assert.deepEqual(fresh.messages, []);
  assert.equal('session_hooks' in fresh, false);
  assert.throws(() => reloaded.clear(), /running/, 'not while a chat runs');
});

test('the outgoing chat frame: id, messages, input, skills, enable_tools', () => {
  const store = memoryStore({ [KEYS.history]: OLD });
  const chat = createConversation(store);
  const frame = chat.startChat('what does the readme say?', 'c1');
  assert.deepEqual(frame, { type: 'chat', id: 'c1', messages: OLD, input: 'what does the readme say?', enable_tools: true });
  assert.equal('skills' in frame, false, 'no choice made: the server picks its default skills');
  assert.deepEqual(JSON.parse(JSON.stringify(frame)), frame, 'plain JSON');
  frame.messages.push({ role: 'user', content: 'tampered' });
  assert.deepEqual(chat.history, OLD, 'the frame holds a copy of the history');
  assert.throws(() => chat.startChat('second', 'c2'), /already running/, 'one chat at a time');
  chat.receive(done('c1', 'it says hello'));

  assert.deepEqual(chat.enabledSkills(['concise', 'code-reader']), ['concise', 'code-reader']);
  chat.setSkills(['code-reader']);
  chat.setTools(false);
  assert.deepEqual(chat.enabledSkills(['concise', 'code-reader']), ['code-reader']);
  assert.deepEqual([store.get(KEYS.skills), store.get(KEYS.tools)], [['code-reader'], false]);
  const next = chat.startChat('again', 'c2');
  assert.deepEqual([next.skills, next.enable_tools], [['code-reader'], false]);
  chat.receive(done('c2', 'ok'));

  // Kept across a reload; an empty choice is sent as [] (no skills), not left out.
  const reloaded = createConversation(store);
  reloaded.setSkills([]);
  const third = reloaded.startChat('no skills', 'c3');
  assert.deepEqual([third.skills, third.enable_tools, third.messages.length], [[], false, 6]);

  // Without an id, one is made up, different for every chat.
  const other = createConversation(memoryStore());
  const ids = new Set();
  for (let i = 0; i < 3; i++) {
    const made = other.startChat('hi').id;
    assert.match(made, /^c[0-9a-z]+$/);
    ids.add(made);
    other.abort();
  }
  assert.equal(ids.size, 3);
  assert.throws(() => other.startChat(''), /non-empty/);
});

test('frames that are not about the running chat change nothing', () => {
  const store = memoryStore({ [KEYS.history]: OLD });
  const chat = createConversation(store);
  assert.equal(chat.receive({ type: 'text', id: 'c1', delta: 'x' }).kind, 'ignored', 'no chat runs');
  const stray = chat.receive({ type: 'error', code: 'bad_frame', message: 'not JSON' });
  assert.deepEqual([stray.kind, stray.frame.code], ['stray_error', 'bad_frame']);

  chat.startChat('hello', 'c1');
  assert.equal(chat.receive({ type: 'pong' }).kind, 'ignored');
  assert.equal(chat.receive({ type: 'hook', id: 'old', hook: {}, message: BREVITY }).kind, 'ignored');
  assert.equal(chat.receive({ type: 'session_hook', id: 'old', hook: { event: 'stop' } }).kind, 'ignored');
  assert.equal(chat.receive({ type: 'done', id: 'old', reason: 'completed', message: { role: 'assistant', content: 'no' } }).kind, 'ignored');
  assert.equal(chat.receive({ type: 'mystery', id: 'c1' }).kind, 'ignored', 'an unknown type');
  const busy = chat.receive({ type: 'error', id: 'c9', code: 'busy', message: 'a chat is running' });
  assert.deepEqual([busy.kind, busy.ended], ['stray_error', false]);
  assert.equal(chat.running, 'c1', 'another chat\'s error does not end this one');
  chat.receive(done('c1', 'hi'));
  assert.deepEqual(store.get(KEYS.history), [...OLD, { role: 'user', content: 'hello' }, { role: 'assistant', content: 'hi' }]);
  assert.deepEqual(store.get(KEYS.sessionHooks), undefined, 'no session hook was stored');
});

test('storage that holds something odd falls back to the defaults', () => {
  const chat = createConversation(memoryStore({
    [KEYS.history]: { not: 'a list' },
    [KEYS.sessionHooks]: 'nope',
    [KEYS.skills]: 'concise',
    [KEYS.tools]: 'yes',
  }));
  assert.deepEqual([chat.history, chat.sessionHooks, chat.skills, chat.tools], [[], [], null, true]);
  assert.deepEqual(chat.startChat('hi', 'c1'), { type: 'chat', id: 'c1', messages: [], input: 'hi', enable_tools: true });
  // And with no storage at all, it works in memory.
  const bare = createConversation();
  bare.startChat('hi', 'c1');
  bare.receive(done('c1', 'yo'));
  assert.deepEqual(bare.history, [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'yo' }]);
});

test('the access token comes from the URL fragment once, then from the tab, and leaves the address bar', () => {
  const session = memoryStore();
  const first = takeToken('http://127.0.0.1:8080/?x=1#token=a%20b%2Fc&view=top', session);
  assert.deepEqual(first, { token: 'a b/c', cleanUrl: 'http://127.0.0.1:8080/?x=1#view=top' });
  assert.equal(session.get('hookwire.token'), 'a b/c');
  assert.deepEqual(takeToken('http://127.0.0.1:8080/', session), { token: 'a b/c', cleanUrl: null });
  assert.deepEqual(takeToken('http://127.0.0.1:8080/#token=t', memoryStore()), { token: 't', cleanUrl: 'http://127.0.0.1:8080/' });
  // The query is never read: a token there would already be in every log on the way.
  assert.deepEqual(takeToken('http://127.0.0.1:8080/?token=q', memoryStore()), { token: null, cleanUrl: null });
  const location = { protocol: 'http:', host: '127.0.0.1:8080' };
  assert.equal(socketUrl(location), 'ws://127.0.0.1:8080/ws');
  assert.equal(socketUrl({ protocol: 'https:', host: 'h' }), 'wss://h/ws');
  assert.deepEqual(socketProtocols('a b/c(1)+'), ['hookwire', 'hookwire.token.a%20b%2Fc%281%29%2B']);
  assert.deepEqual(socketProtocols(null), ['hookwire']);
  assert.deepEqual(authHeaders('t'), { Authorization: 'Bearer t' });
  assert.deepEqual(authHeaders(null), {});
});

test('a compact frame replaces the first N messages by the summary and the pinned hooks, at once', () => {
  const store = memoryStore();
  const history = [
    { role: 'user', content: 'q1' }, BREVITY, { role: 'assistant', content: 'a1' },
    { role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' },
  ];
  store.save(KEYS.history, history);
  const chat = createConversation(store);
  const frame = chat.startChat('q3', 'c1');
  assert.deepEqual(frame.messages, history);
  const summary = { role: 'user', content: '<summary of the earlier conversation>\nthey said hi\n</summary of the earlier conversation>', _compact: { count: 3 } };
  chat.receive({ type: 'text', id: 'c1', delta: 'reading' });
  chat.receive({ type: 'tool_call', id: 'c1', call_id: 't1', name: 'list_dir', arguments: {} });
  chat.receive({ type: 'tool_result', id: 'c1', call_id: 't1', content: 'a.txt', is_error: false });
  // In the middle of the chat (after text and tool frames): the history changes at once.
  const update = chat.receive({ type: 'compact', id: 'c1', count: 3, message: summary, pinned: [BREVITY] });
  assert.deepEqual([update.kind, update.ended, update.count], ['compact', false, 3]);
  const compacted = [summary, BREVITY, { role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' }];
  assert.deepEqual(store.get(KEYS.history), compacted, 'saved before the chat ends');
  chat.receive({ type: 'done', id: 'c1', reason: 'completed', message: { role: 'assistant', content: 'a3' } });
  assert.deepEqual(chat.history, compacted.concat([{ role: 'user', content: 'q3' }, { role: 'assistant', content: 'a3' }]));
  // A frame of another chat, or one without a summary, changes nothing.
  chat.startChat('q4', 'c2');
  assert.equal(chat.receive({ type: 'compact', id: 'other', count: 9, message: summary, pinned: [] }).kind, 'ignored');
  assert.equal(chat.receive({ type: 'compact', id: 'c2', count: 9, pinned: [] }).kind, 'ignored');
  assert.equal(chat.history.length, 6);
});

test("a compact frame's context (what hooks added at the compaction) follows the pinned hooks", () => {
  const store = memoryStore();
  store.save(KEYS.history, [
    { role: 'user', content: 'q1' }, BREVITY, { role: 'assistant', content: 'a1' },
    { role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' },
  ]);
  const chat = createConversation(store);
  const frame = chat.startCompaction();
  const summary = { role: 'user', content: 'SUMMARY', _compact: { count: 3 } };
  const memory = { role: 'user', content: 'restored memory' };
  chat.receive({ type: 'compact', id: frame.id, count: 3, message: summary, pinned: [BREVITY], context: [memory] });
  assert.deepEqual(store.get(KEYS.history), [
    summary, BREVITY, memory, { role: 'user', content: 'q2' }, { role: 'assistant', content: 'a2' },
  ]);
});

test('a summary is shown without its tags', () => {
  assert.equal(summaryText('<summary of the earlier conversation>\nthey said hi\n</summary of the earlier conversation>'), 'they said hi');
  assert.equal(summaryText('an old summary'), 'an old summary');
  assert.equal(summaryText(undefined), '');
});

test('a compaction divider goes where the summarised messages were, and they are folded', () => {
  // Three chats (history places 0, 2, 4), the third running: a tool card and text so far.
  const transcript = [
    { kind: 'user', text: 'q1', at: 0 }, { kind: 'assistant', text: 'a1' }, { kind: 'turn' },
    { kind: 'user', text: 'q2', at: 2 }, { kind: 'assistant', text: 'a2' },
    { kind: 'user', text: 'q3', at: 4 }, { kind: 'tool', name: 'read_file' }, { kind: 'assistant', text: 'reading' },
  ];
  const divider = { kind: 'compact', count: 2, text: 's' };
  // Mid-chat: the first group (2 messages, a pinned hook among them) is summarised.
  assert.equal(placeCompaction(transcript, divider, 2, 1), 3);
  assert.deepEqual(transcript.map((i) => i.kind + (i.folded ? ':folded' : '')), [
    'user:folded', 'assistant:folded', 'turn:folded', 'compact',
    'user', 'assistant', 'user', 'tool', 'assistant',
  ]);
  // The kept user items moved with the history: summary + pinned hook, then q2 at 2, q3 at 4.
  assert.deepEqual(transcript.filter((i) => i.kind === 'user').map((i) => i.at), [0, 2, 4]);
  // A later compaction of everything before the running chat (its input is at 4): the older
  // divider is folded too, the new one goes right before the running chat's input.
  const again = { kind: 'compact', count: 4, text: 't' };
  assert.equal(placeCompaction(transcript, again, 4, 0), 6);
  assert.deepEqual(transcript.map((i) => i.kind + (i.folded ? ':folded' : '')), [
    'user:folded', 'assistant:folded', 'turn:folded', 'compact:folded',
    'user:folded', 'assistant:folded', 'compact',
    'user', 'tool', 'assistant',
  ]);
  assert.equal(transcript[7].at, 1, 'after the summary');
  // A manual compaction of the whole history: the divider goes at the end; items stored
  // without places count as summarised.
  const old = [{ kind: 'user', text: 'hi' }, { kind: 'assistant', text: 'hello' }];
  assert.equal(placeCompaction(old, { kind: 'compact', count: 2 }, 2, 0), 2);
  assert.deepEqual(old.map((i) => !!i.folded), [true, true, false]);
});

test('a manual compaction sends the history and its done adds nothing', () => {
  const store = memoryStore({ [KEYS.history]: OLD });
  const chat = createConversation(store);
  const frame = chat.startCompaction('k1');
  assert.deepEqual(frame, { type: 'compact', id: 'k1', messages: OLD });
  assert.equal(chat.running, 'k1');
  assert.throws(() => chat.startChat('x'), /already running/);
  const summary = { role: 'user', content: '<summary of the earlier conversation>\ngreetings\n</summary of the earlier conversation>', _compact: { count: 2 } };
  chat.receive({ type: 'compact', id: 'k1', count: 2, message: summary, pinned: [] });
  const update = chat.receive({ type: 'done', id: 'k1', reason: 'completed', message: { role: 'assistant', content: '' } });
  assert.deepEqual([update.kind, update.ended, update.added], ['done', true, []]);
  assert.deepEqual(chat.history, [summary]);
  assert.equal(chat.running, null);
});

test('an approval is kept across a reload, resumed with decisions, and its done adds no user message', () => {
  const store = memoryStore({ [KEYS.history]: OLD });
  let chat = createConversation(store);
  chat.startChat('read a.txt', 'c1');
  const calls = [{ call_id: 'r1', name: 'read_file', arguments: { path: 'a.txt' }, reason: 'this server asks you before it runs read_file' }];
  const update = chat.receive({ type: 'approval', id: 'c1', calls, state: 'v1.j.xyz.sig' });
  assert.deepEqual([update.kind, update.ended], ['approval', false]);
  chat.receive({ type: 'done', id: 'c1', reason: 'approval_required', message: { role: 'assistant', content: '' } });
  const waiting = OLD.concat([{ role: 'user', content: 'read a.txt' }, { role: 'assistant', content: '' }]);
  assert.deepEqual(chat.history, waiting);

  chat = createConversation(store); // a reload
  assert.deepEqual(chat.approval, { id: 'c1', calls, state: 'v1.j.xyz.sig' });
  const frame = chat.resumeChat([{ call_id: 'r1', decision: 'allow' }], 'c2');
  assert.deepEqual(frame, {
    type: 'chat', id: 'c2', messages: waiting, enable_tools: true,
    resume: { state: 'v1.j.xyz.sig', decisions: [{ call_id: 'r1', decision: 'allow' }] },
  });
  assert.equal(frame.input, undefined, 'a resume has no input');
  chat.receive({ type: 'hook', id: 'c2', hook: {}, message: BREVITY });
  const done = chat.receive({ type: 'done', id: 'c2', reason: 'completed', message: { role: 'assistant', content: 'ALPHA' } });
  assert.deepEqual(done.added, [BREVITY, { role: 'assistant', content: 'ALPHA' }]);
  assert.equal(chat.approval, null);
  assert.equal(store.get(KEYS.approval), null);
  assert.throws(() => chat.resumeChat([]), /no tool call waits/);
});

test('a refused resume or a new message drops the approval; a lost connection keeps it', () => {
  const store = memoryStore();
  const chat = createConversation(store);
  const approve = (id) => {
    chat.startChat('go', id);
    chat.receive({ type: 'approval', id, calls: [], state: 's-' + id });
    chat.receive({ type: 'done', id, reason: 'approval_required', message: { role: 'assistant', content: '' } });
  };
  approve('a');
  chat.resumeChat([]);
  assert.equal(chat.abort(), true);
  assert.equal(chat.approval.state, 's-a', 'the connection was lost: try again later');
  chat.resumeChat([], 'r');
  chat.receive({ type: 'error', id: 'r', code: 'bad_frame', message: 'the approval state expired' });
  assert.equal(chat.approval, null);
  approve('b');
  chat.startChat('something else', 'c');
  assert.equal(chat.approval, null, 'a new message instead of a decision');
});

// ─── the conversation carries the agent's work (docs/protocol.md §13) ───

const CALL = { id: 'call_ls', type: 'function', function: { name: 'list_dir', arguments: '{"path":"."}' } };
const TURN = [
  { role: 'user', content: 'list the files' },
  BREVITY,
  { role: 'assistant', content: '', tool_calls: [CALL] },
  { role: 'tool', tool_call_id: 'call_ls', name: 'list_dir', content: 'a.txt\nb.txt' },
  { role: 'assistant', content: 'Two files.' },
];

test('done.turn is what the history gains, in place of the input, hooks and done.message', () => {
  const store = memoryStore({ [KEYS.history]: OLD });
  const c = createConversation(store);
  c.startChat('list the files', 'c1');
  c.receive(hookFrame('c1', BREVITY));
  const update = c.receive({ ...done('c1', 'Two files.'), turn: TURN });
  assert.deepEqual(update.added, TURN);
  assert.deepEqual(c.history, OLD.concat(TURN));
  assert.deepEqual(store.get(KEYS.history), OLD.concat(TURN));
  // The next chat sends the tool call and its result back.
  const frame = c.startChat('open the second one', 'c2');
  assert.deepEqual(frame.messages, OLD.concat(TURN));
});

test('an error with a turn keeps what happened before the failure', () => {
  const c = createConversation(memoryStore());
  c.startChat('look', 'c1');
  const turn = TURN.slice(0, 4);
  const update = c.receive({ type: 'error', id: 'c1', code: 'upstream', message: 'down', turn });
  assert.equal(update.kind, 'error');
  assert.deepEqual(c.history, turn);
  c.startChat('again', 'c2');
  c.receive({ type: 'error', id: 'c2', code: 'upstream', message: 'down' });
  assert.deepEqual(c.history, turn);
});

test('calls left waiting when the person sends a new message are answered by a note', () => {
  const waiting = [TURN[0], { role: 'assistant', content: '', tool_calls: [CALL, { ...CALL, id: 'call_2' }] },
    { role: 'tool', tool_call_id: 'call_ls', name: 'list_dir', content: 'a.txt' }];
  const c = createConversation(memoryStore({ [KEYS.history]: waiting }));
  const frame = c.startChat('never mind', 'c1');
  assert.equal(frame.messages.length, 4);
  assert.equal(frame.messages[3].role, 'tool');
  assert.equal(frame.messages[3].tool_call_id, 'call_2');
  assert.equal(frame.messages[3].name, 'list_dir');
  assert.match(frame.messages[3].content, /did not run/);
  // A history whose calls are all answered is left as it is.
  assert.deepEqual(answerOpenCalls(TURN), TURN);
  // An answer missing before a later user message goes right after the call's other answers.
  const middle = answerOpenCalls([waiting[1], { role: 'user', content: 'x' }]);
  assert.deepEqual(middle.map((m) => m.role), ['assistant', 'tool', 'tool', 'user']);
});

test('the view is rebuilt from the history: messages, hook chips, tool cards with results', () => {
  const items = itemsOf(TURN);
  assert.deepEqual(items.map((i) => i.kind), ['user', 'hook', 'tool', 'assistant']);
  assert.deepEqual(items[2], {
    kind: 'tool', call_id: 'call_ls', name: 'list_dir', arguments: { path: '.' },
    done: true, content: 'a.txt\nb.txt', is_error: false,
  });
  assert.equal(items[1].name, 'brevity');
  // A plan before the round's calls is drawn as a plan.
  const planned = itemsOf([TURN[0], { role: 'assistant', content: 'list them' }, ...TURN.slice(2)]);
  assert.deepEqual(planned.map((i) => i.kind), ['user', 'plan', 'tool', 'assistant']);
});
