// The Hooks tab's replay of recorded hook traffic (`POST /api/hooks/replay`, docs/protocol.md
// §21), without a DOM: how many events to ask for, the answer as the rows `hookwire hooks
// replay` prints, and what a refusal means in plain words.

export const REPLAY_DEFAULT = 50;
export const REPLAY_MAX = 500;

/** The number of events to ask for: a whole number from 1 to 500; anything else, 50. */
export function replayCount(value) {
  const text = typeof value === 'string' ? value.trim() : value;
  const n = Number(text);
  if (text === '' || text === null || text === undefined || !Number.isFinite(n)) return REPLAY_DEFAULT;
  return Math.min(REPLAY_MAX, Math.max(1, Math.round(n)));
}

/** What the button says for `count` events. */
export function replayLabel(count) {
  return 'Replay the last ' + count + ' recorded event' + (count === 1 ? '' : 's');
}

/** The summary line: "2 events replayed, 1 changed". */
export function replaySummary(replayed, changed) {
  return replayed + ' event' + (replayed === 1 ? '' : 's') + ' replayed, ' + changed + ' changed';
}

const text = (v) => (typeof v === 'string' && v !== '' ? v : null);

function decisionOf(d) {
  d = d && typeof d === 'object' ? d : {};
  return {
    outcome: text(d.outcome) || '?',
    reason: text(d.reason),
    decided_by: text(d.decided_by),
    changed: d.changed && typeof d.changed === 'object' && !Array.isArray(d.changed) ? d.changed : {},
  };
}

function same(a, b) {
  if (a === b) return true;
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object' || Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && same(a[key], b[key]));
}

// A string as its text, anything else as indented JSON; nothing as `(none)` (the CLI's way).
function lines(value) {
  if (value === null || value === undefined) return ['(none)'];
  return (typeof value === 'string' ? value : JSON.stringify(value, null, 2)).split('\n');
}

// What differs: the reason, then each rewritten field (by name), recorded and now.
function differences(old, now) {
  const found = [];
  if (old.reason !== now.reason) found.push({ field: 'reason', old: lines(old.reason), new: lines(now.reason) });
  const fields = [...new Set([...Object.keys(old.changed), ...Object.keys(now.changed)])].sort();
  for (const field of fields) {
    if (!same(old.changed[field], now.changed[field])) {
      found.push({ field, old: lines(old.changed[field]), new: lines(now.changed[field]) });
    }
  }
  return found;
}

// "2026-11-27T10:00:00.123Z" → "2026-11-27 10:00:00 UTC"; anything else as it came.
function whenOf(at) {
  const found = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d+)?Z$/.exec(at || '');
  return found ? found[1] + ' ' + found[2] + ' UTC' : at || '?';
}

function rowOf(event) {
  const old = decisionOf(event.old);
  const now = decisionOf(event.new);
  const name = (d) => d.decided_by || '-';
  const rates = event.rates && typeof event.rates === 'object' ? Object.entries(event.rates).filter(([, r]) => typeof r === 'number') : [];
  return {
    changed: event.changed === true,
    mark: event.changed === true ? 'CHANGED' : 'same',
    event: text(event.event) || '?',
    at: text(event.at),
    when: whenOf(text(event.at)),
    place: text(event.place),
    chat_id: text(event.chat_id),
    outcome: old.outcome === now.outcome ? now.outcome : old.outcome + ' → ' + now.outcome,
    decided: old.decided_by === now.decided_by ? name(now) : name(old) + ' → ' + name(now),
    rates: rates.length ? rates.map(([outcome, rate]) => outcome + ' ' + Math.round(rate * 100) + '%').join(' · ') : null,
    differences: event.changed === true ? differences(old, now) : [],
  };
}

/**
 * The answer of `POST /api/hooks/replay` as `{replayed, changed, files, summary, rows}`, a row
 * per event in the recorded order: `{changed, mark ('CHANGED' or 'same'), event, at, when,
 * place (file:line of the recording), chat_id, outcome ('continue', or 'continue → block'),
 * decided (the hook that decided, 'a → b' when another one does now, '-' for none), rates
 * ('continue 60% · skip 40%' or null), differences: [{field, old: [line], new: [line]}]}` —
 * the differences of a changed event: the reason, then each rewritten field.
 */
export function replayReport(answer) {
  answer = answer && typeof answer === 'object' ? answer : {};
  const rows = (Array.isArray(answer.events) ? answer.events : []).filter((e) => e && typeof e === 'object').map(rowOf);
  const replayed = Number.isInteger(answer.replayed) ? answer.replayed : rows.length;
  const changed = Number.isInteger(answer.changed) ? answer.changed : rows.filter((r) => r.changed).length;
  const files = (Array.isArray(answer.files) ? answer.files : []).filter((f) => typeof f === 'string');
  return { replayed, changed, files, summary: replaySummary(replayed, changed), rows };
}

/** The rows on screen: all, or only the changed ones. */
export function shownRows(report, onlyChanged) {
  return report.rows.filter((row) => row.changed || !onlyChanged);
}

/**
 * Why a replay did not happen, in plain words, from the HTTP status (0: no answer), the error's
 * `code` and `message`.
 */
export function replayProblem({ status, code, message } = {}) {
  const said = text(message);
  if (status === 404 || code === 'not_recorded') {
    return 'This server records no hook traffic: set hooks.record.dir (or HOOKWIRE_HOOK_RECORD_DIR) in its configuration and restart it; the chats after that are recorded and can be replayed here.';
  }
  if (status === 403 || code === 'admin_only') {
    return 'Only the operator may replay recorded traffic (it holds other people\'s chats): this server needs an admin_token for it, and has none. Set admin_token and open the page with it, or run hookwire hooks replay where the recordings are.';
  }
  if (status === 401) {
    return 'Replaying recorded traffic needs the admin token (admin_token), and this page did not send it: open the page with the admin token, or run hookwire hooks replay where the recordings are.';
  }
  if (status === 400) return 'The server did not take the request' + (said ? ': ' + said : '.');
  if (!status) return 'Could not reach the server' + (said ? ': ' + said : '.');
  return 'The replay failed' + (said ? ': ' + said : ' (the server answered ' + status + ').');
}
