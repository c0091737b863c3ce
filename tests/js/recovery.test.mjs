// The ways out of a failed chat without a browser: each error code in plain words with the
// actions that can work for it (static/errors.js), dropping the oldest turns of a history too
// long for the model, and when a manual compaction has something to summarise (static/protocol.js,
// static/compaction.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { errorOf, explainError } from '../../static/errors.js';
import { createConversation, dropOldestTurns, groupsOf } from '../../static/protocol.js';
import { compactable, placeCut } from '../../static/compaction.js';

test('a raw protocol error is never the headline, and Retry is offered only where it can help', () => {
  const cases = {
    bad_frame: ['field "messages[9].content" must be a string', ['edit', 'new_chat']],
    context_too_long: ['the conversation needs about 9000 tokens, and the model\'s window is 4096', ['compact', 'new_chat', 'drop']],
    hook_blocked: ['no secrets here', ['edit', 'new_chat']],
    unknown_skill: ['unknown skill "gone"', ['skills', 'retry']],
    busy: ['a chat is already running', ['retry']],
    draining: ['the server is shutting down', ['retry']],
    internal: ['panic in a task', ['retry', 'new_chat']],
    quota_exceeded: ['the chats_per_minute quota of user:ann is spent; try again in 20 s', ['retry']],
    auth_expired: ['the token expired', ['sign_in']],
    unavailable: ['the shared state could not be reached', ['retry']],
  };
  for (const [code, [message, actions]] of Object.entries(cases)) {
    const shown = explainError(code, message);
    assert.deepEqual(shown.actions, actions, code);
    assert.ok(!shown.title.includes(code) && !shown.title.includes(message), code + ': ' + shown.title);
    assert.match(shown.title, /^[A-Z].*\.$/, code + ' reads as a sentence');
    assert.equal(shown.detail, code + ': ' + message, code + ' keeps its detail');
  }
  assert.equal(explainError('bad_frame', 'field "messages[9].content" must be a string').editAt, 9);
  assert.equal(explainError('bad_frame', 'not JSON').editAt, null);
  assert.match(explainError('hook_blocked', 'no secrets here').body, /no secrets here/, 'a hook\'s reason is its own words');
  assert.deepEqual(explainError('some_new_code', 'x').actions, ['retry', 'new_chat'], 'an unknown code reads as the server\'s failure');
});

test('an upstream failure says what the model service did, and retries only what can pass next time', () => {
  const say = (message) => explainError('upstream', message);
  assert.deepEqual(say('the model API answered HTTP 429: slow down').actions, ['retry', 'new_chat']);
  assert.match(say('the model API answered HTTP 429: slow down').title, /busy|quota/);
  assert.deepEqual(say('the model API answered HTTP 500: model overloaded').actions, ['retry', 'new_chat']);
  assert.deepEqual(say('the model API sent no data for 60s (timeout)').actions, ['retry', 'new_chat']);
  assert.match(say('the model API sent no data for 60s (timeout)').title, /too long/);
  assert.deepEqual(say('could not connect to the model API at http://x: refused').actions, ['retry', 'new_chat']);
  assert.deepEqual(say('the model API answered HTTP 401: bad key').actions, ['new_chat']);
  assert.deepEqual(say('the model API answered HTTP 400: model overloaded').actions, ['edit', 'new_chat']);
});

test('error items stored by an older page are read back', () => {
  assert.deepEqual(errorOf({ kind: 'error', text: 'bad_frame: field "messages[2]" is wrong' }), { code: 'bad_frame', message: 'field "messages[2]" is wrong' });
  assert.equal(errorOf({ kind: 'error', text: 'connection lost; the reply was cut off' }).code, 'connection_lost');
  assert.deepEqual(errorOf({ kind: 'error', code: 'upstream', message: 'down' }), { code: 'upstream', message: 'down' });
});

const hook = (content) => ({ role: 'system', content, _hook: { name: 'rules', skill: 's', timing: 'before' } });
const call = (id) => ({ role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: '{}' } }] });
const result = (id) => ({ role: 'tool', tool_call_id: id, name: 'read_file', content: 'text' });

test('the oldest half of the turns is dropped whole: a tool call with its results, the persistent hooks kept', () => {
  const history = [
    hook('always be kind'),
    { role: 'user', content: 'first' }, call('a'), result('a'), { role: 'assistant', content: 'one' },
    { role: 'user', content: 'second' }, hook('a reminder'), { role: 'assistant', content: 'two' },
    { role: 'user', content: 'third' }, { role: 'assistant', content: 'three' },
  ];
  assert.deepEqual(groupsOf(history), [[0, 5], [5, 8], [8, 10]]);
  const cut = dropOldestTurns(history);
  assert.equal(cut.turns, 2);
  assert.equal(cut.count, 8);
  assert.equal(cut.kept, 2);
  assert.deepEqual(cut.dropped, ['first', 'second']);
  assert.deepEqual(cut.history.map((m) => m.content), ['always be kind', 'a reminder', 'third', 'three']);
  assert.ok(!cut.history.some((m) => m.role === 'tool'), 'no result is left without its call');
  assert.equal(dropOldestTurns([]), null);
  // One turn left: it goes too (the failed message is not in the history).
  assert.deepEqual(dropOldestTurns([{ role: 'user', content: 'only' }, { role: 'assistant', content: 'one' }]).history, []);
});

test('a conversation drops its oldest turns and keeps the rest', () => {
  const saved = {};
  const store = { load: (k, f) => (k in saved ? saved[k] : f), save: (k, v) => { saved[k] = v; } };
  store.save('hookwire.history', [{ role: 'user', content: 'a' }, { role: 'assistant', content: '1' }, { role: 'user', content: 'b' }, { role: 'assistant', content: '2' }]);
  const conversation = createConversation(store);
  const cut = conversation.dropOldest();
  assert.deepEqual(cut.dropped, ['a']);
  assert.deepEqual(conversation.history.map((m) => m.content), ['b', '2']);
  assert.deepEqual(saved['hookwire.history'].map((m) => m.content), ['b', '2']);
});

test('dropped turns fold their items and the kept messages move up', () => {
  const transcript = [
    { kind: 'user', text: 'a', at: 0 }, { kind: 'assistant', text: '1' },
    { kind: 'user', text: 'b', at: 2 }, { kind: 'assistant', text: '2' },
    { kind: 'user', text: 'c', at: 4 }, { kind: 'error', code: 'context_too_long', message: 'x' },
  ];
  const at = placeCut(transcript, { kind: 'dropped', text: 'dropped' }, 2, 0);
  assert.equal(at, 2);
  assert.deepEqual(transcript.map((i) => [i.kind, !!i.folded, i.at]), [
    ['user', true, 0], ['assistant', true, undefined], ['dropped', false, undefined],
    ['user', false, 0], ['assistant', false, undefined], ['user', false, 2], ['error', false, undefined],
  ]);
});

test('Compact is offered once there is an older turn to summarise', () => {
  assert.equal(compactable([]).ok, false);
  assert.match(compactable([]).reason, /empty/);
  const one = [{ role: 'user', content: 'a' }, { role: 'assistant', content: '1' }];
  assert.equal(compactable(one).ok, false);
  assert.match(compactable(one).reason, /one turn/);
  const summarised = [{ role: 'user', content: 'summary', _compact: { count: 4 } }, hook('pinned'), ...one];
  assert.equal(compactable(summarised).ok, false, 'a summary and the turn after it: nothing older');
  assert.equal(compactable(one.concat(one)).ok, true);
  // Past the model's window the server summarises the last turn too.
  assert.equal(compactable(one, { tooLong: true }).ok, true);
  assert.equal(compactable([], { tooLong: true }).ok, false);
});

test('a spent quota says when it resets, from the frame\'s retry_after_seconds', () => {
  const message = 'the tokens_per_day quota of user:ann is spent; try again in 7200 s';
  assert.match(explainError('quota_exceeded', message, 7200).body, /resets in about 2 hours/);
  assert.match(explainError('quota_exceeded', message, 45).body, /resets in 45 seconds/);
  assert.match(explainError('quota_exceeded', message, 600).body, /resets in about 10 minutes/);
  // An item the page stored keeps the wait.
  const item = { kind: 'error', code: 'quota_exceeded', message, retryAfter: 60 };
  const found = errorOf(item);
  assert.match(explainError(found.code, found.message, found.retryAfter).body, /60 seconds/);
  assert.doesNotMatch(explainError('quota_exceeded', message).body, /resets in/);
});
