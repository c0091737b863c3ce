// The Hooks tab's replay of recorded traffic without a browser (static/hook-replay.js): the
// number asked for, the answer of `POST /api/hooks/replay` as the rows the tab shows (as
// `hookwire hooks replay` prints them), and the refusals in plain words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { replayCount, replayLabel, replayProblem, replayReport, replaySummary, shownRows } from '../../static/hook-replay.js';

// An answer as the server gives it after the guard was made stricter (docs/protocol.md §21).
const ANSWER = {
  replayed: 2,
  changed: 1,
  files: ['/srv/hooks.yaml'],
  events: [
    {
      place: '/rec/hooks-2026-11-27.jsonl:1', at: '2026-11-27T10:00:00.000Z', chat_id: 'c1', event: 'pre_send_message',
      old: { outcome: 'continue' }, new: { outcome: 'continue' }, changed: false,
    },
    {
      place: '/rec/hooks-2026-11-27.jsonl:2', at: '2026-11-27T10:00:01.250Z', chat_id: 'c1', event: 'pre_tool_execution',
      old: { outcome: 'continue', changed: { tool_arguments: { path: 'a.txt' } } },
      new: { outcome: 'block', reason: 'no tools today', decided_by: 'guard', changed: { tool_arguments: { path: 'a.txt' }, additional_context: 'careful' } },
      changed: true,
    },
  ],
};

test('the answer becomes one row per event, the changed one with what differs', () => {
  const report = replayReport(ANSWER);
  assert.equal(report.summary, '2 events replayed, 1 changed');
  assert.deepEqual(report.files, ['/srv/hooks.yaml']);
  assert.deepEqual(report.rows[0], {
    changed: false, mark: 'same', event: 'pre_send_message', at: '2026-11-27T10:00:00.000Z', when: '2026-11-27 10:00:00 UTC',
    place: '/rec/hooks-2026-11-27.jsonl:1', chat_id: 'c1', outcome: 'continue', decided: '-', rates: null, differences: [],
  });
  const changed = report.rows[1];
  assert.deepEqual([changed.mark, changed.outcome, changed.decided, changed.when], ['CHANGED', 'continue → block', '- → guard', '2026-11-27 10:00:01 UTC']);
  assert.deepEqual(changed.differences, [
    { field: 'reason', old: ['(none)'], new: ['no tools today'] },
    { field: 'additional_context', old: ['(none)'], new: ['careful'] },
  ], 'a field rewritten the same way both times is no difference');
});

test('a rewritten object is shown as indented JSON lines, and the hook that decides both times once', () => {
  const report = replayReport({
    events: [{
      event: 'pre_tool_execution', changed: true,
      old: { outcome: 'continue', decided_by: 'fix', changed: { tool_arguments: { path: 'a' } } },
      new: { outcome: 'continue', decided_by: 'fix', changed: { tool_arguments: { path: 'b' } } },
    }],
  });
  const row = report.rows[0];
  assert.equal(report.summary, '1 event replayed, 1 changed', 'counted when the server gave no counts');
  assert.deepEqual([row.outcome, row.decided], ['continue', 'fix']);
  assert.deepEqual(row.differences, [{ field: 'tool_arguments', old: ['{', '  "path": "a"', '}'], new: ['{', '  "path": "b"', '}'] }]);
});

test('repeated runs show the rate of each outcome', () => {
  const row = replayReport({ events: [{ event: 'stop', old: { outcome: 'continue' }, new: { outcome: 'continue' }, rates: { continue: 0.6, skip: 0.4 }, changed: true }] }).rows[0];
  assert.equal(row.rates, 'continue 60% · skip 40%');
  assert.deepEqual(row.differences, [], 'the decision kept is the same: nothing to list under it');
});

test('odd answers become visible defaults, not errors', () => {
  assert.deepEqual(replayReport(null), { replayed: 0, changed: 0, files: [], summary: '0 events replayed, 0 changed', rows: [] });
  const row = replayReport({ events: [null, { at: 'yesterday', old: 'x', changed: 'yes' }] }).rows;
  assert.equal(row.length, 1);
  assert.deepEqual([row[0].mark, row[0].event, row[0].when, row[0].outcome], ['same', '?', 'yesterday', '?']);
});

test('only changed keeps the changed rows', () => {
  const report = replayReport(ANSWER);
  assert.equal(shownRows(report, false).length, 2);
  assert.deepEqual(shownRows(report, true).map((r) => r.event), ['pre_tool_execution']);
});

test('the number of events is a whole number from 1 to 500, 50 otherwise', () => {
  assert.deepEqual(['50', '1', '0', '-3', '501', '12.4', '', 'ten', null, 7].map(replayCount), [50, 1, 1, 1, 500, 12, 50, 50, 50, 7]);
  assert.equal(replayLabel(50), 'Replay the last 50 recorded events');
  assert.equal(replayLabel(1), 'Replay the last 1 recorded event');
  assert.equal(replaySummary(1, 0), '1 event replayed, 0 changed');
});

test('each refusal says what to do', () => {
  const notRecorded = replayProblem({ status: 404, code: 'not_recorded', message: 'hook traffic is not recorded' });
  assert.ok(notRecorded.startsWith('This server records no hook traffic: set hooks.record.dir (or HOOKWIRE_HOOK_RECORD_DIR)'), notRecorded);
  assert.match(replayProblem({ status: 403, code: 'admin_only' }), /admin_token/);
  assert.match(replayProblem({ status: 401 }), /needs the admin token/);
  assert.equal(replayProblem({ status: 500, code: 'replay_failed', message: 'no hook files are loaded' }), 'The replay failed: no hook files are loaded');
  assert.equal(replayProblem({ status: 502 }), 'The replay failed (the server answered 502).');
  assert.equal(replayProblem({ status: 0, message: 'Failed to fetch' }), 'Could not reach the server: Failed to fetch');
});
