// Retry, Regenerate and Edit on the page go on from an earlier point of the conversation:
// `truncate(length)` keeps the history's first messages, then the next chat sends from there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createConversation, KEYS } from '../../static/protocol.js';

function memoryStore() {
  const data = new Map();
  return {
    load(key, fallback) { return data.has(key) ? JSON.parse(data.get(key)) : fallback; },
    save(key, value) { data.set(key, JSON.stringify(value)); },
    get(key) { return data.has(key) ? JSON.parse(data.get(key)) : undefined; },
  };
}
const done = (id, content) => ({ type: 'done', id, reason: 'completed', message: { role: 'assistant', content } });

function chat(conversation, input, answer) {
  const frame = conversation.startChat(input);
  conversation.receive(done(frame.id, answer));
  return frame;
}

test('edit: the history before the edited message is kept, the next chat sends only that', () => {
  const store = memoryStore();
  const c = createConversation(store);
  chat(c, 'one', 'A1');
  const at = c.history.length; // where the second message starts
  chat(c, 'two', 'A2');
  c.truncate(at);
  assert.deepEqual(store.get(KEYS.history).map((m) => m.content), ['one', 'A1']);
  const frame = c.startChat('two, edited');
  assert.deepEqual(frame.messages.map((m) => m.content), ['one', 'A1']);
  c.receive(done(frame.id, 'B2'));
  assert.deepEqual(c.history.map((m) => m.content), ['one', 'A1', 'two, edited', 'B2']);
});

test('retry after a failure: the failed message is in the history once, after it succeeds', () => {
  const c = createConversation(memoryStore());
  const at = c.history.length;
  const failed = c.startChat('hello');
  c.receive({ type: 'error', id: failed.id, code: 'upstream', message: '500' });
  c.truncate(at); // nothing to drop: a failed chat added nothing
  chat(c, 'hello', 'Hi');
  assert.deepEqual(c.history.filter((m) => m.role === 'user').map((m) => m.content), ['hello']);
});

test('truncate drops a waiting approval, refuses while a chat runs and bad lengths', () => {
  const c = createConversation(memoryStore());
  const frame = c.startChat('read');
  c.receive({ type: 'approval', id: frame.id, state: 'v1.x', calls: [{ call_id: 'r1', name: 'read_file', arguments: {} }] });
  c.receive({ type: 'done', id: frame.id, reason: 'approval_required', message: { role: 'assistant', content: '' } });
  assert.ok(c.approval);
  c.truncate(0);
  assert.equal(c.approval, null);
  assert.deepEqual(c.history, []);
  c.startChat('again');
  assert.throws(() => c.truncate(0), /running/);
  assert.throws(() => createConversation(memoryStore()).truncate(-1), /whole number/);
});
