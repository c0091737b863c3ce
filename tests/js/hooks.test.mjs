// The page's hook views without a browser (static/trace.js, static/hook-levels.js): the trace switch and `hook_trace` frames
// (docs/protocol.md §12), a turn's summary line (usage, model, hook runs), and the Hooks tab's
// arrangement of `GET /api/hooks` and the stored session hooks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createConversation, KEYS } from '../../static/protocol.js';
import { traceRow, traceSummary, turnLine, usageOf, finalText, formatMs } from '../../static/trace.js';
import { hookLevels, shortPath } from '../../static/hook-levels.js';
import { toolGroups } from '../../static/server.js';

function memoryStore(initial = {}) {
  const data = new Map(Object.entries(initial).map(([key, value]) => [key, JSON.stringify(value)]));
  return {
    load(key, fallback) { return data.has(key) ? JSON.parse(data.get(key)) : fallback; },
    save(key, value) { data.set(key, JSON.stringify(value)); },
    get(key) { return data.has(key) ? JSON.parse(data.get(key)) : undefined; },
  };
}

const BLOCKED = {
  type: 'hook_trace', id: 'c1', event: 'pre_tool_execution', hook: 'no-secrets', level: 'workspace',
  ms: 3.2, outcome: 'block', changed: [],
};

test('the trace switch is kept and puts trace: true on chats and resumes', () => {
  const store = memoryStore();
  const chat = createConversation(store);
  assert.equal(chat.trace, false, 'off by default');
  assert.equal('trace' in chat.startChat('hi', 'c0'), false, 'no field when off');
  chat.abort();
  chat.setTrace(true);
  assert.equal(store.get(KEYS.trace), true);
  const again = createConversation(store);
  assert.equal(again.trace, true, 'kept across a reload');
  assert.equal(again.startChat('hi', 'c1').trace, true);
  again.receive({ type: 'approval', id: 'c1', calls: [], state: 's' });
  again.receive({ type: 'done', id: 'c1', reason: 'approval_required', message: { role: 'assistant', content: '' } });
  assert.equal(again.resumeChat([], 'r1').trace, true, 'a resume is traced too');
  again.abort();
  again.setTrace('yes');
  assert.equal(again.trace, false, 'only true turns it on');
  assert.equal(createConversation(memoryStore({ [KEYS.trace]: 'on' })).trace, false);
});

test('hook_trace frames are shown and change no history', () => {
  const store = memoryStore();
  const chat = createConversation(store);
  chat.setTrace(true);
  chat.startChat('read secrets.txt', 'c1');
  const update = chat.receive(BLOCKED);
  assert.deepEqual([update.kind, update.ended, update.frame], ['hook_trace', false, BLOCKED]);
  assert.equal(chat.receive({ ...BLOCKED, id: 'other' }).kind, 'ignored', 'another chat\'s trace');
  chat.receive({ type: 'done', id: 'c1', reason: 'completed', message: { role: 'assistant', content: 'no' } });
  assert.deepEqual(chat.history, [{ role: 'user', content: 'read secrets.txt' }, { role: 'assistant', content: 'no' }]);
});

test('a trace row keeps the fields of the frame, and odd values become visible defaults', () => {
  assert.deepEqual(traceRow(BLOCKED), {
    event: 'pre_tool_execution', hook: 'no-secrets', level: 'workspace', ms: 3.2, outcome: 'block', changed: [],
  });
  assert.deepEqual(traceRow({ type: 'hook_trace', event: 5, ms: -1, outcome: 'exploded', changed: ['tool_arguments', 7] }), {
    event: '?', hook: '?', level: '?', ms: null, outcome: 'exploded', changed: ['tool_arguments'],
  });
  assert.equal(traceRow(null).outcome, 'unknown');
});

test('a turn summary counts runs, blocks, asks and failures', () => {
  const rows = [
    traceRow(BLOCKED),
    traceRow({ event: 'pre_send_message', hook: 'stamp', level: 'server', ms: 1.04, outcome: 'success', changed: ['messages'] }),
    traceRow({ event: 'stop', hook: 'judge', level: 'session', ms: 20, outcome: 'timeout', changed: [] }),
    traceRow({ event: 'pre_tool_execution', hook: 'ask-first', level: 'rust', ms: 0, outcome: 'ask', changed: [] }),
    traceRow({ event: 'post_tool_execution', hook: 'x', level: 'skill', outcome: 'failure', changed: [] }),
  ];
  assert.deepEqual(traceSummary(rows), { runs: 5, blocked: 1, asked: 1, failed: 2, changed: 1, ms: 24.2 });
  assert.equal(turnLine({ model: 'gpt-4o', usage: { prompt: 1200, completion: 80 }, trace: rows }),
    'gpt-4o · 1,200 in · 80 out tokens · 5 hook runs · 1 blocked · 1 asked · 2 failed · 24 ms');
  assert.equal(turnLine({ usage: { prompt: 3, completion: 4 }, trace: [] }), '3 in · 4 out tokens');
  assert.equal(turnLine({ trace: [rows[1]] }), '1 hook run · 1 ms');
  assert.equal(turnLine({}), '');
});

test('usage comes from done.usage; milliseconds read well', () => {
  assert.deepEqual(usageOf({ usage: { prompt_tokens: 12, completion_tokens: 3 } }), { prompt: 12, completion: 3 });
  assert.equal(usageOf({ usage: {} }), null);
  assert.equal(usageOf({}), null);
  assert.deepEqual(usageOf({ usage: { prompt_tokens: 'x', completion_tokens: 3 } }), { prompt: 0, completion: 3 });
  assert.deepEqual([formatMs(null), formatMs(0.04), formatMs(3.25), formatMs(1234.5)], ['—', '0 ms', '3.3 ms', '1,235 ms']);
});

const API = {
  hooks: [
    {
      id: 'srv-1', name: 'guard', level: 'server', file: '/etc/hookwire/deep/er/hooks.yaml', line: 3, event: 'pre_tool_execution',
      event_name: 'PreToolUse', dialect: 'claude', type: 'command', matcher: 'Read', command: 'guard.sh', url: null,
      prompt: null, trusted: true, async: false,
      metrics: { runs: 4, failures: 1, timeouts: 0, blocked: 2, p50_ms: 3.5, p95_ms: 12 },
    },
    {
      id: 'ws-1', level: 'workspace', file: '/ws/.hookwire/hooks.yaml', line: 2, event: 'post_send_message',
      event_name: 'post_send_message', dialect: 'hookwire', type: 'http', matcher: null, command: null,
      url: 'http://127.0.0.1:9/h', prompt: null, trusted: true, async: true,
      metrics: { runs: 0, failures: 0, timeouts: 0, blocked: 0, p50_ms: null, p95_ms: null },
    },
    { id: 'odd', level: 'mars', event: 'stop', type: 'llm', prompt: 'judge', trusted: false, metrics: 'none' },
  ],
  skill_hooks: [
    { skill: 'concise', name: 'brevity', timing: 'after_user_input', role: 'system', persistent: true, file: '/s/concise/hooks/brevity.md',
      metrics: { runs: 2, successes: 2, failures: 0, timeouts: 0, blocked: 0, skipped: 0, total_ms: 0.1, p50_ms: 0, p95_ms: 0.1 } },
  ],
  session_hooks: [
    { event: 'stop', name: 'judge', metrics: { runs: 3, successes: 2, failures: 1, timeouts: 0, blocked: 0, skipped: 0, total_ms: 40, p50_ms: 12, p95_ms: 20 } },
    { event: 'pre_send_message', name: 'other', metrics: { runs: 9 } },
  ],
  untrusted: [
    {
      file: '/ws/.hookwire/hooks/extra.yaml', shown: '.hookwire/hooks/extra.yaml', trust_command: 'hookwire trust --workspace /ws',
      why: 'changed since it was trusted; review and trust it again with: hookwire trust --workspace /ws',
    },
    { file: '/ws/.hookwire/other.yaml' },
    { nope: 1 },
  ],
};

test('the Hooks tab: every hook under its level, with file:line, what it runs and its metrics', () => {
  const session = [{ event: 'stop', type: 'llm', prompt: 'JUDGE {{assistant_output}}', name: 'judge', expires_at: 1900000000, sig: 'ab' }];
  const levels = hookLevels(API, session);
  assert.deepEqual(levels.map((l) => [l.level, l.hooks.map((h) => h.id)]), [
    ['server', ['srv-1', 'odd']],
    ['workspace', ['ws-1']],
    ['skill', ['concise/brevity']],
    ['session', ['judge']],
  ]);
  const [server, workspace, skill, sessionLevel] = levels;
  assert.deepEqual(server.hooks[0], {
    id: 'srv-1', name: 'guard', level: 'server', file: '/etc/hookwire/deep/er/hooks.yaml', where: '…/deep/er/hooks.yaml:3',
    event: 'pre_tool_execution', event_name: 'PreToolUse', dialect: 'claude', type: 'command', matcher: 'Read',
    what: 'guard.sh', trusted: true, async: false,
    metrics: { runs: 4, successes: 0, failures: 1, timeouts: 0, blocked: 2, skipped: 0, total_ms: null, p50_ms: 3.5, p95_ms: 12 },
  });
  assert.deepEqual([server.hooks[1].trusted, server.hooks[1].metrics, server.hooks[1].what, server.hooks[1].where], [false, null, 'judge', null]);
  assert.deepEqual([workspace.hooks[0].what, workspace.hooks[0].async, workspace.hooks[0].where], ['http://127.0.0.1:9/h', true, '/ws/.hookwire/hooks.yaml:2']);
  assert.deepEqual(workspace.untrusted, [
    { file: '/ws/.hookwire/hooks/extra.yaml', shown: '.hookwire/hooks/extra.yaml', reason: 'changed since it was trusted', trust_command: 'hookwire trust --workspace /ws' },
    { file: '/ws/.hookwire/other.yaml', shown: '/ws/.hookwire/other.yaml', reason: 'not trusted', trust_command: null },
  ]);
  assert.equal(server.hooks[1].name, 'odd', 'no name: the id');
  assert.deepEqual(server.untrusted, []);
  assert.equal(skill.hooks[0].name, 'concise/brevity', 'as traces call it');
  assert.deepEqual([skill.hooks[0].event, skill.hooks[0].what, skill.hooks[0].metrics], ['after_user_input', 'system message, persistent',
    { runs: 2, successes: 2, failures: 0, timeouts: 0, blocked: 0, skipped: 0, total_ms: 0.1, p50_ms: 0, p95_ms: 0.1 }]);
  assert.deepEqual(sessionLevel.hooks[0], {
    id: 'judge', name: 'judge', level: 'session', file: null, where: 'this conversation', event: 'stop', event_name: 'stop',
    dialect: 'hookwire', type: 'llm', matcher: null, what: 'JUDGE {{assistant_output}}', trusted: true, async: false,
    metrics: { runs: 3, successes: 2, failures: 1, timeouts: 0, blocked: 0, skipped: 0, total_ms: 40, p50_ms: 12, p95_ms: 20 },
    expires_at: 1900000000,
  });
  // A named session hook that has not run here yet shows zeros; one without a name, none.
  const [, , , fresh] = hookLevels(API, [{ event: 'stop', name: 'new', prompt: 'p' }, { event: 'stop', prompt: 'q' }]);
  assert.deepEqual(fresh.hooks.map((h) => h.metrics && h.metrics.runs), [0, null]);
});

test('the Hooks tab before the API answered, or with odd answers, still has its four levels', () => {
  const levels = hookLevels(null, [{ event: 'stop', prompt: 'p' }, 'junk']);
  assert.deepEqual(levels.map((l) => [l.level, l.hooks.length]), [['server', 0], ['workspace', 0], ['skill', 0], ['session', 1]]);
  assert.deepEqual([levels[3].hooks[0].id, levels[3].hooks[0].type], ['session-1', 'llm']);
  assert.deepEqual(hookLevels({ hooks: 'x', skill_hooks: {}, untrusted: 3 }, null).map((l) => l.hooks.length), [0, 0, 0, 0]);
  assert.equal(shortPath('/a/b'), '/a/b');
  assert.equal(shortPath(''), '');
});

test('tools are grouped: the built-in ones, then each MCP server with its state and its tools', () => {
  const groups = toolGroups({
    tools: ['read_file', 'list_dir', 'mcp__notes__read', 'mcp__notes__write'],
    mcp_servers: [
      { name: 'notes', state: 'running', reason: null, tools: ['mcp__notes__read', 'mcp__notes__write'] },
      { name: 'web', state: 'down', reason: 'it exited with code 1', tools: [] },
    ],
    mcp_tools: [{ name: 'mcp__notes__read', server: 'notes' }, { name: 'mcp__notes__write', server: 'notes' }],
  });
  assert.deepEqual(groups, [
    { title: 'built-in', state: null, reason: null, tools: ['read_file', 'list_dir'] },
    { title: 'MCP: notes', state: 'running', reason: null, tools: ['mcp__notes__read', 'mcp__notes__write'] },
    { title: 'MCP: web', state: 'down', reason: 'it exited with code 1', tools: [] },
  ]);
  assert.deepEqual(toolGroups({}), [{ title: 'built-in', state: null, reason: null, tools: [] }]);
});

test('a rewritten answer in done.message replaces what the last bubble streamed', () => {
  const done = (content) => ({ type: 'done', message: { role: 'assistant', content } });
  assert.equal(finalText(['hello'], done('hello')), null);
  assert.equal(finalText(['hello'], done('REWRITTEN')), 'REWRITTEN');
  assert.equal(finalText(['first', 'second'], done('first\n\nsecond')), null);
  assert.equal(finalText(['first', 'second'], done('first\n\nSECOND')), 'SECOND');
  assert.equal(finalText(['first', 'second'], done('ALL NEW')), 'ALL NEW');
  assert.equal(finalText([], done('only at the end')), 'only at the end');
  assert.equal(finalText(['streamed'], done('')), null);
});
