// A spoken chat (docs/protocol.md §18): `voice: true` on the chat frame, and the history stored
// as the audio queue plays it — what was spoken before a persistent hook, the hook, the answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createConversation } from '../../static/protocol.js';

function memoryStore() {
  const data = new Map();
  return {
    load(key, fallback) { return data.has(key) ? JSON.parse(data.get(key)) : fallback; },
    save(key, value) { data.set(key, JSON.stringify(value)); },
  };
}
const hook = { role: 'system', content: 'A tool ran.', _hook: { name: 'seen', skill: 'note', timing: 'after_tool_call', sig: '' } };
const audio = (id, seq, text) => ({ type: 'audio', id, seq, format: 'wav', text, data: '' });

test('a spoken chat stores the hook between the sentences it was sent between', () => {
  const c = createConversation(memoryStore());
  const frame = c.startChat('what is here?', 'v1', { voice: true });
  assert.equal(frame.voice, true);
  assert.equal(c.receive(audio('v1', 0, 'Let me look.')).kind, 'audio');
  c.receive(audio('v1', 1, 'One moment.'));
  c.receive({ type: 'hook', id: 'v1', hook: { name: 'seen' }, message: hook });
  c.receive(audio('v1', 2, 'One file.'));
  c.receive({ type: 'done', id: 'v1', reason: 'completed', message: { role: 'assistant', content: 'Let me look. One moment.\n\nOne file.' } });
  assert.deepEqual(c.history, [
    { role: 'user', content: 'what is here?' },
    { role: 'assistant', content: 'Let me look. One moment.' },
    hook,
    { role: 'assistant', content: 'One file.' },
  ]);
});

test('spoken sentences that are not in the answer leave the usual order', () => {
  const c = createConversation(memoryStore());
  c.startChat('q', 'x1', { voice: true });
  c.receive(audio('x1', 0, 'Something else.'));
  c.receive({ type: 'hook', id: 'x1', hook: { name: 'seen' }, message: hook });
  c.receive({ type: 'done', id: 'x1', reason: 'completed', message: { role: 'assistant', content: 'Answer.' } });
  assert.deepEqual(c.history.map((m) => m.content), ['q', 'A tool ran.', 'Answer.']);
});

test('without voice, or with nothing spoken before the hook, the usual order', () => {
  const c = createConversation(memoryStore());
  const frame = c.startChat('hi', 'p1');
  assert.equal(frame.voice, undefined);
  c.receive({ type: 'hook', id: 'p1', hook: { name: 'seen' }, message: hook });
  c.receive({ type: 'done', id: 'p1', reason: 'completed', message: { role: 'assistant', content: 'A.' } });
  c.startChat('again', 'p2', { voice: true });
  c.receive({ type: 'hook', id: 'p2', hook: { name: 'seen' }, message: hook });
  c.receive(audio('p2', 0, 'B.'));
  c.receive({ type: 'done', id: 'p2', reason: 'completed', message: { role: 'assistant', content: 'B.' } });
  assert.deepEqual(c.history.map((m) => m.content), ['hi', 'A tool ran.', 'A.', 'again', 'A tool ran.', 'B.']);
});
