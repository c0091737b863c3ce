// The Hooks tab's content, arranged from `GET /api/hooks` and the stored session hooks. No DOM.

import { list } from './protocol.js';

const LEVELS = ['server', 'workspace', 'skill', 'session'];

// The end of a long path (`…/.hookwire/hooks.yaml`); the whole one goes in a tooltip.
export function shortPath(file) {
  const parts = String(file || '').split('/');
  return parts.length > 4 ? '…/' + parts.slice(-3).join('/') : String(file || '');
}

function metricsOf(m) {
  if (!m || typeof m !== 'object') return null;
  const n = (v) => (Number.isInteger(v) && v >= 0 ? v : 0);
  const ms = (v) => (typeof v === 'number' && isFinite(v) ? v : null);
  return {
    runs: n(m.runs), successes: n(m.successes), failures: n(m.failures), timeouts: n(m.timeouts), blocked: n(m.blocked),
    skipped: n(m.skipped), total_ms: ms(m.total_ms), p50_ms: ms(m.p50_ms), p95_ms: ms(m.p95_ms),
  };
}

/**
 * The Hooks tab's content: `GET /api/hooks` (`api`) and the conversation's stored session
 * hooks, as `[{level, hooks: [row], untrusted: [{file, shown, reason, trust_command}]}]` for
 * server, workspace, skill and session, in that order. A row: `{id, name (what traces call it),
 * level, where (file:line), file,
 * event, event_name, dialect, type, matcher, what (command, URL or prompt), trusted, async,
 * metrics (null where the server keeps none)}`; session rows also have `expires_at`.
 */
export function hookLevels(api, sessionHooks) {
  api = api && typeof api === 'object' ? api : {};
  const text = (v) => (typeof v === 'string' && v !== '' ? v : null);
  const byLevel = { server: [], workspace: [], skill: [], session: [] };
  for (const hook of list(api.hooks)) {
    if (!hook || typeof hook !== 'object') continue;
    const level = LEVELS.includes(hook.level) ? hook.level : 'server';
    const line = Number.isInteger(hook.line) ? hook.line : null;
    byLevel[level].push({
      id: text(hook.id) || '?',
      name: text(hook.name) || text(hook.id) || '?',
      level,
      file: text(hook.file),
      where: text(hook.file) ? shortPath(hook.file) + (line ? ':' + line : '') : null,
      event: text(hook.event) || '?',
      event_name: text(hook.event_name) || text(hook.event) || '?',
      dialect: text(hook.dialect),
      type: text(hook.type) || '?',
      matcher: text(hook.matcher),
      what: text(hook.command) || text(hook.url) || text(hook.prompt),
      trusted: hook.trusted !== false,
      async: hook.async === true,
      metrics: metricsOf(hook.metrics),
    });
  }
  for (const hook of list(api.skill_hooks)) {
    if (!hook || typeof hook !== 'object') continue;
    const id = (text(hook.skill) || '?') + '/' + (text(hook.name) || '?');
    byLevel.skill.push({
      id,
      name: id,
      level: 'skill',
      file: text(hook.file),
      where: text(hook.file) ? shortPath(hook.file) : null,
      event: text(hook.timing) || '?',
      event_name: text(hook.timing) || '?',
      dialect: null,
      type: 'prompt',
      matcher: null,
      what: (text(hook.role) || 'system') + ' message' + (hook.persistent ? ', persistent' : ''),
      trusted: true,
      async: false,
      metrics: metricsOf(hook.metrics),
    });
  }
  // The server's figures of session hooks, by event and name (it keeps no conversation).
  const sessionFigures = new Map();
  for (const figures of list(api.session_hooks)) {
    if (figures && typeof figures === 'object' && text(figures.name) && text(figures.event)) {
      sessionFigures.set(figures.event + '\u0000' + figures.name, figures.metrics);
    }
  }
  list(sessionHooks).forEach((hook, index) => {
    if (!hook || typeof hook !== 'object') return;
    const id = text(hook.name) || 'session-' + (index + 1);
    byLevel.session.push({
      id,
      name: id,
      level: 'session',
      file: null,
      where: 'this conversation',
      event: text(hook.event) || '?',
      event_name: text(hook.event) || '?',
      dialect: 'hookwire',
      type: text(hook.type) || 'llm',
      matcher: text(hook.matcher),
      what: text(hook.prompt) || text(hook.command),
      trusted: true,
      async: false,
      metrics: text(hook.name) ? metricsOf(sessionFigures.get((text(hook.event) || '?') + '\u0000' + hook.name) || {}) : null,
      expires_at: Number.isInteger(hook.expires_at) ? hook.expires_at : null,
    });
  });
  const untrusted = list(api.untrusted)
    .filter((u) => u && typeof u.file === 'string')
    .map((u) => ({
      file: u.file,
      shown: text(u.shown) || u.file,
      // `why` ends with what to do (the command, shown on its own); the reason comes first.
      reason: text(u.why) ? u.why.replace(/;[^;]*$/, '') : 'not trusted',
      trust_command: text(u.trust_command),
    }));
  return LEVELS.map((level) => ({ level, hooks: byLevel[level], untrusted: level === 'workspace' ? untrusted : [] }));
}

// The access token of a server that has `auth_token` set (README "Security model"): taken from
// the page's own URL once, from its fragment (`/#token=…`: a fragment never leaves the browser,
// so no proxy or server log holds it; a `?token=` query is not read), kept in `session`
