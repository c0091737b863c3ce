// What a turn's foot shows: `hook_trace` frames as timeline rows and their sum, token usage, the
// final text a hook may have rewritten. No DOM.

import { list } from './protocol.js';

const OUTCOMES = ['success', 'skip', 'block', 'ask', 'timeout', 'failure'];

/** A `hook_trace` frame as a timeline row: `{event, hook, level, ms, outcome, changed}`. */
export function traceRow(frame) {
  frame = frame || {};
  const text = (v, fallback) => (typeof v === 'string' && v ? v : fallback);
  return {
    event: text(frame.event, '?'),
    hook: text(frame.hook, '?'),
    level: text(frame.level, '?'),
    ms: typeof frame.ms === 'number' && isFinite(frame.ms) && frame.ms >= 0 ? frame.ms : null,
    outcome: OUTCOMES.includes(frame.outcome) ? frame.outcome : text(frame.outcome, 'unknown'),
    changed: list(frame.changed).filter((f) => typeof f === 'string'),
  };
}

/**
 * What a turn's hook runs add up to: `{runs, blocked, asked, failed (failures and timeouts),
 * changed (runs that changed something), ms}`.
 */
export function traceSummary(rows) {
  rows = list(rows);
  const count = (test) => rows.filter(test).length;
  return {
    runs: rows.length,
    blocked: count((r) => r.outcome === 'block'),
    asked: count((r) => r.outcome === 'ask'),
    failed: count((r) => r.outcome === 'failure' || r.outcome === 'timeout'),
    changed: count((r) => r.changed.length > 0),
    ms: Math.round(rows.reduce((sum, r) => sum + (r.ms || 0), 0) * 10) / 10,
  };
}

/** `ms` for people: `—` when unknown, one decimal under 10 ms, whole milliseconds above. */
export function formatMs(ms) {
  if (typeof ms !== 'number' || !isFinite(ms)) return '—';
  if (ms < 10) return (Math.round(ms * 10) / 10) + ' ms';
  return Math.round(ms).toLocaleString('en-US') + ' ms';
}

/**
 * What the chat's last answer bubble shows once `done` arrives. `done.message` is the final
 * answer (the bubbles' texts joined by a blank line) as the hooks left it: a hook that rewrote
 * the answer makes it differ from what streamed, and then it replaces the last bubble's text
 * (what the earlier bubbles already show is left out). `streamed`: the chat's bubble texts, in
 * order. Returns null when the bubbles already show it.
 */
export function finalText(streamed, done) {
  const message = done && done.message && typeof done.message.content === 'string' ? done.message.content : '';
  if (!message || message === streamed.join('\n\n')) return null;
  const earlier = streamed.slice(0, -1).join('\n\n');
  if (earlier && message.startsWith(earlier + '\n\n')) return message.slice(earlier.length + 2);
  return message;
}

/** `done.usage` as `{prompt, completion}` token counts, or null when it has none. */
export function usageOf(done) {
  const usage = done && done.usage;
  if (!usage || typeof usage !== 'object') return null;
  const n = (v) => (Number.isInteger(v) && v >= 0 ? v : null);
  const prompt = n(usage.prompt_tokens);
  const completion = n(usage.completion_tokens);
  return prompt === null && completion === null ? null : { prompt: prompt || 0, completion: completion || 0 };
}

/**
 * The one-line summary of a turn item (`{model, usage, trace}`), e.g.
 * `gpt-4o · 1,200 in · 80 out tokens · 4 hook runs · 1 blocked · 12 ms`.
 */
export function turnLine(item) {
  const parts = [];
  if (item.model) parts.push(item.model);
  if (item.usage) {
    parts.push(item.usage.prompt.toLocaleString('en-US') + ' in · ' + item.usage.completion.toLocaleString('en-US') + ' out tokens');
  }
  const runs = list(item.trace);
  if (runs.length) {
    const s = traceSummary(runs);
    parts.push(s.runs + ' hook run' + (s.runs === 1 ? '' : 's'));
    if (s.blocked) parts.push(s.blocked + ' blocked');
    if (s.asked) parts.push(s.asked + ' asked');
    if (s.failed) parts.push(s.failed + ' failed');
    parts.push(formatMs(s.ms));
  }
  return parts.join(' · ');
}
