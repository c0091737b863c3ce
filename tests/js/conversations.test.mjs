// static/library.js and static/exports.js without a browser: the library of conversations in one
// store (create, switch, rename, delete, the key of each), the move of the single conversation
// the page kept before, and the exports as JSON and Markdown.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KEYS, itemsOf } from '../../static/protocol.js';
import { createLibrary, titleFrom } from '../../static/library.js';
import { fileName, exportMarkdown } from '../../static/exports.js';

// Like localStorage: JSON text per key, with removeItem.
function memoryStore(initial = {}) {
  const data = new Map(Object.entries(initial).map(([key, value]) => [key, JSON.stringify(value)]));
  return {
    data,
    load(key, fallback) { return data.has(key) ? JSON.parse(data.get(key)) : fallback; },
    save(key, value) { data.set(key, JSON.stringify(value)); },
    remove(key) { data.delete(key); },
    get(key) { return data.has(key) ? JSON.parse(data.get(key)) : undefined; },
  };
}

// A clock that moves one second per reading, and ids a, b, c, …
function fixtures() {
  let t = Date.UTC(2025, 0, 2, 3, 4, 5);
  let n = 0;
  return { now: () => (t += 1000), newId: () => 'abcdefghij'[n++] };
}

const done = (id, content) => ({
  type: 'done', id, reason: 'completed', message: { role: 'assistant', content },
  usage: { prompt_tokens: 5, completion_tokens: 2 },
});

// One chat in `conversation`: input, answer.
function chat(conversation, input, answer, id) {
  conversation.startChat(input, id);
  conversation.receive(done(id, answer));
}

test('a fresh store has one empty conversation, which is the current one', () => {
  const store = memoryStore();
  const library = createLibrary(store, fixtures());
  assert.deepEqual(library.list().map((m) => [m.id, m.title, m.named]), [['a', 'New conversation', false]]);
  assert.equal(library.current, 'a');
  assert.equal(store.get(KEYS.current), 'a');
  assert.deepEqual(library.open().history, []);
  // Reopened from the same store: the same one, no second one made.
  const again = createLibrary(store, fixtures());
  assert.deepEqual(again.list().map((m) => m.id), ['a']);
});

test('each conversation keeps its own history, session hooks and approval; settings are shared', () => {
  const store = memoryStore();
  const library = createLibrary(store, fixtures());
  const first = library.open();
  first.setTools(false);
  chat(first, 'first question', 'first answer', 'c1');
  first.startChat('register', 'c2');
  first.receive({ type: 'session_hook', id: 'c2', hook: { event: 'stop', prompt: 'JUDGE' } });
  first.receive(done('c2', 'ok'));
  library.touch('a', 'first question');

  const second = library.create();
  assert.equal(library.current, second.id);
  const open = library.open();
  assert.deepEqual([open.history, open.sessionHooks, open.tools], [[], [], false], 'a new one is empty; tools stay off');
  chat(open, 'second question', 'second answer', 'c3');
  open.startChat('needs approval', 'c4');
  open.receive({ type: 'approval', id: 'c4', calls: [], state: 's4' });
  open.receive(done('c4', ''));

  // Each one's keys hold its own messages, under its own prefix.
  assert.equal(store.get('hookwire.conversation.a.history')[0].content, 'first question');
  assert.equal(store.get('hookwire.conversation.b.history')[0].content, 'second question');
  assert.equal(store.get('hookwire.conversation.a.sessionHooks').length, 1);
  assert.equal(store.get('hookwire.conversation.b.approval').state, 's4');
  assert.equal(store.get(KEYS.history), undefined, 'nothing under the old single keys');
  assert.equal(store.get(KEYS.tools), false, 'the tools switch is the person\'s, for every conversation');

  // Switch back (as after a reload): the first one, as it was.
  library.switchTo('a');
  const reloaded = createLibrary(store, fixtures());
  assert.equal(reloaded.current, 'a', 'the current one is remembered');
  const back = reloaded.open();
  assert.deepEqual(back.history.map((m) => m.content), ['first question', 'first answer', 'register', 'ok']);
  assert.equal(back.sessionHooks[0].prompt, 'JUDGE');
  assert.equal(back.approval, null);
  assert.equal(reloaded.open('b').approval.state, 's4');
  assert.throws(() => reloaded.switchTo('zzz'), /no conversation zzz/);
});

test('titles come from the first message until the person renames; the list is most recent first', () => {
  const library = createLibrary(memoryStore(), fixtures());
  library.touch('a', '  \n  What is   in the README?\nsecond line');
  assert.equal(library.meta('a').title, 'What is in the README?');
  library.touch('a', 'a later message');
  assert.equal(library.meta('a').title, 'What is in the README?', 'only the first message names it');
  library.create('Planning');
  assert.deepEqual(library.list().map((m) => m.title), ['Planning', 'What is in the README?']);
  library.touch('a', 'more');
  assert.deepEqual(library.list().map((m) => m.id), ['a', 'b'], 'used last: first');
  library.rename('a', '  Readme   notes ');
  assert.deepEqual([library.meta('a').title, library.meta('a').named], ['Readme notes', true]);
  library.rename('a', '   ');
  assert.deepEqual([library.meta('a').title, library.meta('a').named], ['New conversation', false]);
  assert.equal(titleFrom('x'.repeat(60)), 'x'.repeat(47) + '…');
  assert.equal(titleFrom(''), 'New conversation');
});

test('deleting removes its keys; the current one moves to the most recent; one always remains', () => {
  const store = memoryStore();
  const library = createLibrary(store, fixtures());
  chat(library.open('a'), 'keep me', 'kept', 'c1');
  library.create();
  chat(library.open('b'), 'delete me', 'gone', 'c2');
  library.storeFor('b').save(KEYS.transcript, [{ kind: 'user', text: 'delete me' }]);
  assert.equal(library.remove('b'), 'a');
  assert.equal(library.current, 'a');
  for (const name of ['history', 'transcript', 'sessionHooks', 'approval']) {
    assert.equal(store.get('hookwire.conversation.b.' + name), undefined, name);
  }
  assert.equal(store.get('hookwire.conversation.a.history').length, 2, 'the other one is untouched');
  assert.equal(library.remove('a'), 'c', 'the last one gives way to a fresh one');
  assert.deepEqual(library.list().map((m) => m.id), ['c']);
  assert.throws(() => library.remove('a'), /no conversation a/);
});

test('the single conversation of before becomes the first conversation', () => {
  const history = [
    { role: 'user', content: 'old question' },
    { role: 'system', content: 'Be brief.', _hook: { name: 'brevity', skill: 'concise', timing: 'after_user_input', sig: 'ab'.repeat(32) } },
    { role: 'assistant', content: 'old answer' },
  ];
  const approval = { id: 'c9', calls: [{ call_id: 'r1', name: 'read_file', arguments: {} }], state: 'v1.s' };
  const transcript = [{ kind: 'user', text: 'old question' }, { kind: 'assistant', text: 'old answer' }];
  const store = memoryStore({
    [KEYS.history]: history,
    [KEYS.sessionHooks]: [{ event: 'stop', prompt: 'JUDGE' }],
    [KEYS.approval]: approval,
    [KEYS.transcript]: transcript,
    [KEYS.skills]: ['concise'],
  });
  const library = createLibrary(store, fixtures());
  assert.deepEqual(library.list().map((m) => [m.id, m.title]), [['a', 'old question']]);
  const conversation = library.open();
  assert.deepEqual(conversation.history, history, 'signed hook messages moved verbatim');
  assert.deepEqual(conversation.sessionHooks, [{ event: 'stop', prompt: 'JUDGE' }]);
  assert.deepEqual(conversation.approval, approval);
  assert.deepEqual(library.storeFor('a').load(KEYS.transcript, null), transcript);
  assert.deepEqual(conversation.skills, ['concise'], 'settings stay where they were');
  for (const key of [KEYS.history, KEYS.sessionHooks, KEYS.approval, KEYS.transcript]) {
    assert.equal(store.get(key), undefined, key + ' moved away');
  }
  // Done once: a second start finds the list and does not move anything again.
  store.save(KEYS.history, [{ role: 'user', content: 'stray' }]);
  assert.equal(createLibrary(store, fixtures()).list().length, 1);
});

test('odd storage: a broken list or an unknown current id falls back', () => {
  const store = memoryStore({
    [KEYS.conversations]: [{ id: 'x', title: 'X', created: 1, updated: 5 }, { nope: true }, 'junk', { id: 'y', title: 'Y', created: 1, updated: 9 }],
    [KEYS.current]: 'gone',
  });
  const library = createLibrary(store, fixtures());
  assert.deepEqual(library.list().map((m) => m.id), ['y', 'x']);
  assert.equal(library.current, 'y', 'the most recent one');
  const empty = createLibrary(memoryStore({ [KEYS.conversations]: 'not a list', [KEYS.history]: [] }), fixtures());
  assert.equal(empty.list().length, 1);
});

test('the JSON export parses and holds the history, session hooks, approval and transcript', () => {
  const store = memoryStore();
  const library = createLibrary(store, fixtures());
  const conversation = library.open();
  chat(conversation, 'hello "there"', 'hi\nback', 'c1');
  conversation.startChat('register', 'c2');
  conversation.receive({ type: 'session_hook', id: 'c2', hook: { event: 'stop', prompt: 'JUDGE' } });
  conversation.receive(done('c2', 'ok'));
  library.touch('a', 'hello "there"');
  library.storeFor('a').save(KEYS.transcript, [{ kind: 'user', text: 'hello "there"' }]);
  const text = JSON.stringify(library.exportJson('a', { model: 'gpt-test' }), null, 2);
  const parsed = JSON.parse(text);
  assert.equal(parsed.format, 'hookwire.conversation');
  assert.equal(parsed.version, 1);
  assert.equal(parsed.title, 'hello "there"');
  assert.equal(parsed.model, 'gpt-test');
  assert.deepEqual(parsed.messages, conversation.history, 'exactly what the next chat sends');
  assert.deepEqual(parsed.session_hooks, [{ event: 'stop', prompt: 'JUDGE' }]);
  assert.equal(parsed.approval, null);
  assert.deepEqual(parsed.transcript, [{ kind: 'user', text: 'hello "there"' }]);
  assert.match(parsed.created_at, /^2025-01-02T03:04:\d\d\.000Z$/);
  assert.ok(Date.parse(parsed.exported_at) >= Date.parse(parsed.updated_at));
});

test('the Markdown export shows the messages, tools, hooks, summaries, approvals and turns', () => {
  const transcript = [
    { kind: 'user', text: 'read the `readme`' },
    { kind: 'hook', skill: 'concise', name: 'brevity', timing: 'after_user_input', content: 'Be brief.' },
    { kind: 'plan', text: 'read it\nthen answer' },
    { kind: 'tool', name: 'read_file', arguments: { path: 'README.md' }, done: true, content: 'has ``` fences', is_error: false },
    { kind: 'assistant', text: 'It says **hello**.' },
    { kind: 'turn', model: 'gpt-test', usage: { prompt: 1200, completion: 34 }, trace: [
      { event: 'pre_tool_execution', hook: 'guard|x', level: 'workspace', ms: 2.5, outcome: 'block', changed: [] },
      { event: 'post_tool_execution', hook: 'tidy', level: 'server', ms: 12.4, outcome: 'success', changed: ['tool_result'] },
    ] },
    { kind: 'compact', count: 4, text: 'they talked' },
    { kind: 'approval', calls: [{ call_id: 'r1', name: 'read_file', arguments: { path: 'a' } }], decisions: { r1: { decision: 'deny', reason: 'no' } } },
    { kind: 'error', text: 'upstream: down' },
    { kind: 'note', text: 'ended: cancelled' },
    { kind: 'something new' },
  ];
  const md = exportMarkdown({ title: 'Readme\nnotes' }, transcript, { model: 'gpt-test', exported: Date.UTC(2025, 0, 2) });
  const expected = [
    '# Readme notes',
    '_Exported from hookwire · model gpt-test · 2025-01-02T00:00:00.000Z_',
    '## You\n\nread the `readme`',
    '_hook concise/brevity (after_user_input)_',
    '> **Plan:** read it\n> then answer',
    '**Tool `read_file`** (done)\n\n```json\n{\n  "path": "README.md"\n}\n```\n\n````\nhas ``` fences\n````',
    '## Assistant\n\nIt says **hello**.',
    '_gpt-test · 1,200 in · 34 out tokens · 2 hook runs · 1 blocked · 15 ms_',
    '| event | hook | level | outcome | ms | changed |\n|---|---|---|---|---|---|\n' +
      '| pre_tool_execution | guard\\|x | workspace | block | 2.5 ms |  |\n' +
      '| post_tool_execution | tidy | server | success | 12 ms | tool_result |',
    '---\n\n> **4 earlier messages summarised:** they talked\n\n---',
    '**Waiting for approval:**\n\n- `read_file` {"path":"a"}: denied (no)',
    '**Error:** The model service did not answer properly. (`upstream: down`)',
    '_ended: cancelled_',
  ].join('\n\n') + '\n';
  assert.equal(md, expected);
});

test('export file names are slugs of the title', () => {
  assert.equal(fileName('What is in the README?', 'json'), 'what-is-in-the-readme.json');
  assert.equal(fileName('Ünïcode — ✨', 'md'), 'unicode.md');
  assert.equal(fileName('', 'md'), 'conversation.md');
  assert.equal(fileName('x'.repeat(100), 'json'), 'x'.repeat(60) + '.json');
});

test('two pages on one store: neither loses the other\'s conversations', () => {
  const store = memoryStore();
  let n = 0;
  const ids = () => 'p' + (++n);
  const one = createLibrary(store, { newId: ids });
  const two = createLibrary(store, { newId: ids });
  assert.equal(two.current, one.current, 'the second page opens on the same one');
  const made = one.create('made in one');
  two.rename(two.current, 'renamed in two');
  assert.deepEqual(one.list().map((m) => m.title).sort(), ['made in one', 'renamed in two']);
  assert.deepEqual(two.list().map((m) => m.title).sort(), ['made in one', 'renamed in two']);
  // One deletes the conversation two has on screen: two keeps it, and its next message keeps it.
  one.remove(two.current);
  assert.deepEqual(two.list().map((m) => m.title).sort(), ['made in one', 'renamed in two']);
  two.touch(two.current, 'still here');
  assert.deepEqual(createLibrary(store, { newId: ids }).list().map((m) => m.id).sort(), [made.id, two.current].sort());
});

test('exports hold the tool calls and results of done.turn (docs/protocol.md §13)', () => {
  const library = createLibrary(memoryStore(), fixtures());
  const conversation = library.open();
  const turn = [
    { role: 'user', content: 'list the files' },
    { role: 'assistant', content: '', tool_calls: [{ id: 'k1', type: 'function', function: { name: 'list_dir', arguments: '{"path":"."}' } }] },
    { role: 'tool', tool_call_id: 'k1', name: 'list_dir', content: 'a.txt\nb.txt' },
    { role: 'assistant', content: 'Two files.' },
  ];
  conversation.startChat('list the files', 'c1');
  conversation.receive({ ...done('c1', 'Two files.'), turn });
  const parsed = library.exportJson('a', {});
  assert.deepEqual(parsed.messages, turn);
  // With no drawn transcript (a reload that lost it), the Markdown comes from the history.
  const md = exportMarkdown({ title: 'files' }, itemsOf(parsed.messages), {});
  assert.match(md, /list_dir/);
  assert.match(md, /b\.txt/);
  assert.match(md, /Two files\./);
});

test('the chat list is grouped by the day each conversation was last used, and searched', async () => {
  const { dateGroups, matchesSearch } = await import('../../static/library.js');
  const now = new Date(2025, 5, 15, 10, 0).getTime();
  const at = (days, hour) => new Date(2025, 5, 15 - days, hour, 0).getTime();
  const metas = [
    { id: 'a', updated: at(0, 9) }, { id: 'b', updated: at(1, 23) }, { id: 'c', updated: at(1, 0) },
    { id: 'd', updated: at(3, 12) }, { id: 'e', updated: at(7, 12) }, { id: 'f', updated: at(8, 12) },
  ];
  assert.deepEqual(dateGroups(metas, now).map((g) => [g.label, g.items.map((m) => m.id)]), [
    ['Today', ['a']], ['Yesterday', ['b', 'c']], ['Previous 7 days', ['d', 'e']], ['Older', ['f']],
  ]);
  assert.deepEqual(dateGroups([{ id: 'x', updated: at(0, 1) }], now).map((g) => g.label), ['Today'], 'empty groups are left out');
  const messages = [{ role: 'user', content: 'Read the README' }, { role: 'assistant', content: 'It explains hooks.' }];
  assert.ok(matchesSearch('readme', 'Files', messages));
  assert.ok(matchesSearch('HOOKS explains', 'Files', messages), 'words in any order, any case');
  assert.ok(matchesSearch('files', 'Files', []));
  assert.ok(!matchesSearch('deploy', 'Files', messages));
  assert.ok(matchesSearch('  ', 'Files', messages), 'an empty search finds everything');
});
