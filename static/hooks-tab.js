// The Hooks tab: every hook by level (server, workspace, skill, session) with its live metrics,
// refreshed every 2 s while the tab is on screen; below them, the replay of recorded traffic
// through the hooks as loaded now (what hook-replay.js makes of `POST /api/hooks/replay`).

import { api, ApiRefused, SignInNeeded } from './api.js';
import { $, el } from './dom.js';
import { hookLevels, shortPath } from './hook-levels.js';
import { replayCount, replayLabel, replayProblem, replayReport, shownRows } from './hook-replay.js';
import { view } from './state.js';
import { formatMs } from './trace.js';

const HOOKS_REFRESH_MS = 2000;
export const LEVEL_TITLES = { server: 'Server', workspace: 'Workspace', skill: 'Skill', session: 'Session' };
export const METRICS = [['runs', 'runs'], ['successes', 'ok'], ['failures', 'failures'], ['timeouts', 'timeouts'], ['blocked', 'blocked'], ['skipped', 'skipped'], ['total_ms', 'total'], ['p50_ms', 'p50'], ['p95_ms', 'p95']];

export function hookCard(hook) {
  const card = el('div', 'hook-card' + (hook.trusted ? '' : ' untrusted'));
  card.dataset.hookId = hook.id;
  card.dataset.level = hook.level;
  const head = el('div', 'hook-head');
  const event = el('strong', 'hook-event', hook.event_name);
  if (hook.event_name !== hook.event) event.title = hook.event;
  head.appendChild(event);
  if (hook.matcher) head.appendChild(el('code', 'hook-matcher', hook.matcher));
  head.appendChild(el('span', 'tag', hook.type));
  if (hook.dialect) head.appendChild(el('span', 'tag', hook.dialect));
  if (hook.async) head.appendChild(el('span', 'tag', 'async'));
  // Trust is a question only for workspace files: the tag shows there (and on anything not trusted).
  if (hook.level === 'workspace' || !hook.trusted) head.appendChild(el('span', 'tag ' + (hook.trusted ? 'trusted' : 'not-trusted'), hook.trusted ? 'trusted' : 'not trusted'));
  card.appendChild(head);
  const name = el('div', 'hook-name', hook.name);
  if (hook.id !== hook.name) name.title = hook.id;
  card.appendChild(name);
  if (hook.what) card.appendChild(el('code', 'hook-what', hook.what));
  if (hook.where) {
    const where = el('div', 'hook-where', hook.where);
    if (hook.file) where.title = hook.file;
    card.appendChild(where);
  }
  if (hook.expires_at) card.appendChild(el('div', 'hook-where', 'expires ' + new Date(hook.expires_at * 1000).toLocaleString()));
  if (hook.metrics) {
    const metrics = el('div', 'metrics');
    for (const [key, label] of METRICS) {
      const cell = el('span', 'metric');
      const value = el('span', 'value');
      value.dataset.metric = key;
      cell.append(label + ' ', value);
      metrics.appendChild(cell);
    }
    card.appendChild(metrics);
    fillMetrics(card, hook.metrics);
  }
  return card;
}

export function fillMetrics(card, metrics) {
  for (const value of card.querySelectorAll('[data-metric]')) {
    const v = metrics[value.dataset.metric];
    value.textContent = value.dataset.metric.endsWith('_ms') ? formatMs(v) : String(v);
    const alarming = (value.dataset.metric === 'blocked' || value.dataset.metric === 'failures' || value.dataset.metric === 'timeouts') && v > 0;
    value.parentNode.classList.toggle('alarm', alarming);
  }
}

// Draws the tab; when only the metrics changed, it updates them in place (so a selection, e.g.
// of a trust command, survives the refresh).
export function renderHooks() {
  const box = $('hooks');
  const levels = hookLevels(view.hooks, view.conversation.sessionHooks);
  const shape = JSON.stringify(levels.map((l) => [l.hooks.map((h) => Object.assign({}, h, { metrics: !!h.metrics })), l.untrusted]));
  if (box.dataset.shape === shape) {
    for (const level of levels) {
      for (const hook of level.hooks) {
        const card = box.querySelector('.hook-card[data-level="' + level.level + '"][data-hook-id="' + CSS.escape(hook.id) + '"]');
        if (card && hook.metrics) fillMetrics(card, hook.metrics);
      }
    }
  } else {
    box.dataset.shape = shape;
    box.textContent = '';
    for (const level of levels) {
      const section = el('section', 'hook-level');
      section.dataset.level = level.level;
      const title = el('h3', null, LEVEL_TITLES[level.level] + ' ');
      title.appendChild(el('span', 'count', String(level.hooks.length)));
      section.appendChild(title);
      if (!level.hooks.length && !level.untrusted.length) section.appendChild(el('p', 'muted none', 'none'));
      for (const hook of level.hooks) section.appendChild(hookCard(hook));
      for (const file of level.untrusted) {
        const row = el('div', 'untrusted-file');
        const head = el('div', null, 'Not loaded: ');
        const shown = el('code', null, file.shown);
        shown.title = file.file;
        head.append(shown, ' (' + file.reason + ')');
        row.appendChild(head);
        if (file.trust_command) {
          row.appendChild(el('div', 'muted', 'To trust it, run:'));
          row.appendChild(el('code', 'trust-command', file.trust_command));
        }
        section.appendChild(row);
      }
      box.appendChild(section);
    }
  }
  const status = $('hooks-status');
  if (view.hooksError) status.textContent = 'could not load the hooks: ' + view.hooksError;
  else if (view.hooks) status.textContent = 'Live: refreshed ' + new Date().toLocaleTimeString() + ', every 2 s while this tab is open.';
  else status.textContent = 'loading…';
}

export function hooksOnScreen() {
  return !$('panel').hidden && view.tab === 'hooks' && document.visibilityState === 'visible';
}

export async function refreshHooks() {
  if (view.polling) return;
  view.polling = true;
  try {
    // Its 401 may be `admin_token`'s, not a sign-in's: said in the tab (/api/info opens the panel).
    view.hooks = await api('/api/hooks', { signIn: false });
    view.hooksError = null;
  } catch (error) {
    view.hooksError = String(error.message || error);
  } finally {
    view.polling = false;
  }
  view.refreshes += 1;
  $('hooks').dataset.refreshes = String(view.refreshes);
  renderHooks();
}

// The metrics refresh while the tab is on screen, and only then.
export function updatePolling() {
  if (hooksOnScreen()) {
    if (view.poll) return;
    refreshHooks();
    view.poll = setInterval(refreshHooks, HOOKS_REFRESH_MS);
  } else if (view.poll) {
    clearInterval(view.poll);
    view.poll = null;
  }
  $('hooks').dataset.polling = String(!!view.poll);
}

// ─── Replay recorded traffic ───

export function setUpReplay() {
  $('replay-last').addEventListener('input', () => {
    if (!view.replaying) $('replay-run').textContent = replayLabel(replayCount($('replay-last').value));
  });
  $('replay-form').addEventListener('submit', (event) => {
    event.preventDefault();
    runReplay();
  });
  $('replay-only-changed').addEventListener('change', renderReplay);
}

// Asks the server to replay the last N recorded events; the button is off meanwhile.
export async function runReplay() {
  if (view.replaying) return;
  const count = replayCount($('replay-last').value);
  $('replay-last').value = String(count);
  view.replaying = true;
  renderReplay();
  try {
    // Its 401 is `admin_token`'s, not a sign-in's: said here, no sign-in panel.
    view.replay = { report: replayReport(await api('/api/hooks/replay', { signIn: false, body: { last: count } })) };
  } catch (error) {
    const status = error instanceof SignInNeeded ? 401 : error instanceof ApiRefused ? error.status : 0;
    view.replay = { problem: replayProblem({ status, code: error.code, message: error.said || String(error.message || error) }) };
  } finally {
    view.replaying = false;
  }
  renderReplay();
}

export function renderReplay() {
  const running = view.replaying;
  const done = view.replay;
  const button = $('replay-run');
  button.disabled = running;
  button.textContent = running ? 'Replaying…' : replayLabel(replayCount($('replay-last').value));
  const box = $('replay');
  box.setAttribute('aria-busy', String(running));
  box.dataset.state = running ? 'running' : !done ? 'idle' : done.problem ? 'failed' : 'done';
  const status = $('replay-status');
  status.classList.toggle('problem', !running && !!done && !!done.problem);
  if (running) {
    status.textContent = 'Replaying the recorded events through the hooks as loaded now…';
    return;
  }
  const result = $('replay-result');
  result.textContent = '';
  if (!done || done.problem) {
    status.textContent = done ? done.problem : '';
    return;
  }
  const report = done.report;
  status.textContent = report.summary;
  if (report.files.length) {
    const files = el('p', 'muted replay-files', 'hook files: ' + report.files.map(shortPath).join(', '));
    files.title = report.files.join('\n');
    result.appendChild(files);
  }
  const rows = shownRows(report, $('replay-only-changed').checked);
  if (!rows.length) {
    result.appendChild(el('p', 'muted replay-none', report.rows.length ? 'No event changed.' : 'Nothing is recorded yet: chat with the server first.'));
    return;
  }
  result.appendChild(replayTable(rows));
  result.appendChild(el('p', 'muted replay-legend', '− as recorded · + as now'));
}

const REPLAY_COLUMNS = ['Result', 'Event, when', 'Outcome', 'Decided by'];

// A row per event; under a changed one (or one with rates), a row with what differs.
function replayTable(rows) {
  const table = el('table', 'replay-table');
  const head = el('tr');
  for (const name of REPLAY_COLUMNS) {
    const cell = el('th', null, name);
    cell.scope = 'col';
    head.appendChild(cell);
  }
  table.appendChild(el('thead')).appendChild(head);
  const body = el('tbody');
  for (const row of rows) {
    const line = el('tr', 'replay-row ' + (row.changed ? 'changed' : 'same'));
    line.appendChild(el('td', 'mark', row.mark));
    // The event with when it was recorded under it (the panel is narrow for a column more).
    const event = el('td');
    const name = el('div', 'event');
    // It may break after an underscore (pre_tool_|execution) rather than widen the panel.
    row.event.split('_').forEach((part, i, parts) => {
      name.append(part + (i < parts.length - 1 ? '_' : ''));
      if (i < parts.length - 1) name.appendChild(el('wbr'));
    });
    event.appendChild(name);
    const when = el('div', 'when', row.when);
    when.title = [row.at, row.chat_id && 'chat ' + row.chat_id, row.place].filter(Boolean).join(' · ');
    event.appendChild(when);
    line.appendChild(event);
    line.appendChild(el('td', 'outcome', row.outcome));
    line.appendChild(el('td', 'decided', row.decided));
    body.appendChild(line);
    if (!row.rates && !row.differences.length) continue;
    const detail = el('tr', 'replay-detail ' + (row.changed ? 'changed' : 'same'));
    const cell = el('td');
    cell.colSpan = REPLAY_COLUMNS.length;
    if (row.rates) cell.appendChild(el('div', 'rates', 'rates: ' + row.rates));
    for (const difference of row.differences) {
      const block = el('div', 'difference');
      block.appendChild(el('div', 'field', difference.field + ':'));
      for (const text of difference.old) block.appendChild(el('div', 'minus', '− ' + text));
      for (const text of difference.new) block.appendChild(el('div', 'plus', '+ ' + text));
      cell.appendChild(block);
    }
    detail.appendChild(cell);
    body.appendChild(detail);
  }
  table.appendChild(body);
  return table;
}
