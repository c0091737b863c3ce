// Under the last exchange, when idle: Regenerate under an answer, and under a failed chat the
// ways out that can work for its failure (errors.js decides which): Retry only where trying
// again can help, Compact / Start a new chat / Drop the oldest turns for a conversation the
// model can no longer take, Edit for one the server refused as it is, Sign in again for a
// connection whose sign-in expired.

import { startCompaction, updateCompact } from './chat.js';
import { compactable, placeCut } from './compaction.js';
import { newConversation } from './conversations.js';
import { el, toast } from './dom.js';
import { describeDrop, errorOf, explainError } from './errors.js';
import { forkable, lastUserIndex, redoFrom, startEdit } from './forks.js';
import { selectTab, showPanel } from './panel.js';
import { askSignIn } from './sign-in.js';
import { saveTranscript, view } from './state.js';
import { nodes, redrawAll, scroll, transcriptEl } from './transcript.js';

// The failure of the last exchange: its error item, or null when it did not fail.
function lastFailure(index) {
  const after = view.transcript.slice(index + 1);
  for (let i = after.length - 1; i >= 0; i--) if (after[i].kind === 'error') return after[i];
  return null;
}

// The user message to edit for a refused history: the last one at or before the message the
// server named (`editAt`), else the last one.
function editTarget(editAt, index) {
  if (editAt !== null) {
    for (let i = index; i >= 0; i--) {
      const item = view.transcript[i];
      if (item.kind === 'user' && forkable(i) && item.at <= editAt) return item;
    }
  }
  return view.transcript[index];
}

// Drops the oldest turns of the history and says so where they were (they are folded).
function dropOldest(failure) {
  const cut = view.conversation.dropOldest();
  if (!cut) {
    toast('warn', 'There is nothing older to drop: start a new chat instead.');
    return;
  }
  placeCut(view.transcript, { kind: 'dropped', text: describeDrop(cut) }, cut.count, cut.kept);
  failure.eased = true;
  saveTranscript();
  redrawAll();
  updateCompact();
  updateActions(true);
}

const LABELS = {
  retry: 'Retry',
  compact: 'Compact the conversation',
  new_chat: 'Start a new chat',
  drop: 'Drop the oldest turns',
  edit: 'Edit a message',
  skills: 'Open Skills',
  sign_in: 'Sign in again',
};
const TITLES = {
  retry: 'Send the same message again',
  compact: 'Summarise the older part of this conversation, so that it fits again',
  new_chat: 'Start a new conversation (this one stays in the list)',
  drop: 'Forget the oldest half of this conversation (persistent hook messages stay)',
  edit: 'Change a message and go on from there',
  skills: 'Choose the skills this chat uses',
  sign_in: 'Give a fresh token; the message is sent again once it is taken',
};

// What each way out does (`index`: the last user message's place in the transcript).
function act(action, index, failure, shown) {
  const item = view.transcript[index];
  switch (action) {
    case 'retry': redoFrom(index, item.text); break;
    case 'compact': startCompaction(); break;
    case 'new_chat': newConversation(); break;
    case 'drop': dropOldest(failure); break;
    case 'edit': {
      const target = editTarget(shown.editAt, index);
      const node = nodes.get(target);
      if (node) startEdit(node, target);
      break;
    }
    case 'skills':
      showPanel(true);
      selectTab('skills', true);
      break;
    case 'sign_in':
      // The open connection's sign-in is renewed; then the message goes again.
      askSignIn({ renew: true, then: () => redoFrom(index, item.text) });
      break;
  }
}

export function updateActions(idle) {
  const old = transcriptEl.querySelector('.fork-actions');
  if (old) old.remove();
  const index = lastUserIndex();
  // A waiting approval is decided on its card first (Regenerate would drop it).
  if (!idle || index < 0 || !forkable(index) || view.conversation.approval) return;
  const item = view.transcript[index];
  const failure = lastFailure(index);
  const bar = el('div', 'fork-actions');
  const add = (action, handler, className) => {
    const button = el('button', className || action.replace('_', '-'), LABELS[action] || action);
    button.type = 'button';
    button.title = TITLES[action] || '';
    button.onclick = handler;
    bar.appendChild(button);
  };
  if (failure) {
    const found = errorOf(failure);
    const shown = explainError(found.code, found.message, found.retryAfter);
    // Made shorter since it failed (compacted, turns dropped): it may fit now.
    // Compact only when there is something to summarise: past the window, the server goes as
    // far as it must (even the last turn).
    const tooLong = { tooLong: found.code === 'context_too_long' };
    const actions = (failure.eased ? ['retry', 'new_chat'] : shown.actions)
      .filter((action) => action !== 'compact' || compactable(view.conversation.history, tooLong).ok);
    bar.setAttribute('aria-label', 'What you can do now');
    for (const action of actions) add(action, () => act(action, index, failure, shown));
  } else if (view.conversation.history.length <= item.at) {
    // Nothing of it in the history and no error: it was cut off (an older page's transcript).
    add('retry', () => redoFrom(index, item.text));
  } else {
    const button = el('button', 'regenerate', 'Regenerate');
    button.type = 'button';
    button.title = 'Ask again for another answer to the last message';
    button.onclick = () => redoFrom(index, item.text);
    bar.appendChild(button);
  }
  const wasAtBottom = transcriptEl.scrollHeight - transcriptEl.scrollTop - transcriptEl.clientHeight < 40;
  transcriptEl.appendChild(bar);
  if (wasAtBottom) scroll();
}
