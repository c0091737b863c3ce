// A compaction in the transcript: the summary's text and where its divider goes. No DOM.

import { groupsOf, list } from './protocol.js';

const SUMMARY_OPEN = '<summary of the earlier conversation>';
const SUMMARY_CLOSE = '</summary of the earlier conversation>';

/** A summary's text without the tags it reaches the model in. */
export function summaryText(content) {
  let text = String(content || '');
  if (text.startsWith(SUMMARY_OPEN) && text.endsWith(SUMMARY_CLOSE)) {
    text = text.slice(SUMMARY_OPEN.length, text.length - SUMMARY_CLOSE.length).trim();
  }
  return text;
}

/**
 * Places a compaction's `divider` item in `transcript` (changed in place) where the summarised
 * messages were: before the first `user` item whose history place `at` is at or past `count`
 * (the first kept one, or the running chat's own input), else at the end. Every item before
 * it that is not folded yet (an older divider too: its summary was summarised again) becomes
 * `folded`; the kept user items' places move as the history did (`count` messages gave way to
 * the summary and `pinned` hook messages). A user item without `at` (stored before places
 * were kept) counts as summarised. Returns the divider's index.
 */
export function placeCompaction(transcript, divider, count, pinned) {
  return placeCut(transcript, divider, count, 1 + (Number.isInteger(pinned) && pinned > 0 ? pinned : 0));
}

/**
 * Like `placeCompaction`, for any cut of the history's first `count` messages that puts `front`
 * messages in their place (dropped turns: their kept hook messages).
 */
export function placeCut(transcript, divider, count, front) {
  const items = list(transcript);
  const kept = (item) => item && item.kind === 'user' && Number.isInteger(item.at) && item.at >= count;
  let cut = items.findIndex(kept);
  if (cut < 0) cut = items.length;
  for (let i = 0; i < cut; i++) {
    if (items[i] && typeof items[i] === 'object') items[i].folded = true;
  }
  const shift = front - count;
  for (let i = cut; i < items.length; i++) {
    if (kept(items[i])) items[i].at += shift;
  }
  items.splice(cut, 0, divider);
  return cut;
}

/**
 * Whether a manual compaction has something to summarise: `{ok, reason}`. The server keeps at
 * least the last turn, so a history of one turn (an earlier summary counts with the turn after
 * it) has nothing older to summarise, unless the conversation no longer fits the model's window
 * (`tooLong`): then the server summarises as much as it must, the last turn included.
 */
export function compactable(history, { tooLong = false } = {}) {
  const groups = groupsOf(history).length;
  if (groups === 0) return { ok: false, reason: 'Nothing to compact: the conversation is empty' };
  // Past the model's window the server summarises the last turn too (docs/protocol.md §10).
  if (groups === 1 && !tooLong) return { ok: false, reason: 'Nothing to compact yet: the conversation has only one turn' };
  return { ok: true, reason: 'Summarise the older part of this conversation, so that it takes less room' };
}
