// The hookwire browser page, its entry module: wires the view modules together, the controls,
// and starts the page. What the conversation is and what each frame means is decided without a
// DOM (protocol.js, library.js, exports.js, trace.js, hook-levels.js, server.js, compaction.js);
// the view draws it: transcript.js (the items), chat.js (the running chat), approval.js, forks.js
// (Retry, Regenerate, Edit), conversations.js (the Chats tab, exports), panel.js (tabs, skills,
// tools, server info), hooks-tab.js, voice-controls.js, connection.js, sign-in.js (the sign-in
// panel); state.js holds what they share and the one subscription through which they announce what changed.
//
// The view modules import one way (tests/js/imports.test.mjs holds it): the transcript draws
// the items other modules own with the renderers given here, and a module that changes what
// another shows announces it (`changed`); who redraws what is written here, once.

import { drawApproval } from './approval.js';
import { startChat, startCompaction, stop } from './chat.js';
import { connect } from './connection.js';
import { deleteConversation, exportAs, newConversation, renderConversations, startRename } from './conversations.js';
import { $ } from './dom.js';
import { drawUser } from './forks.js';
import { hooksOnScreen, refreshHooks, renderHooks, setUpReplay, updatePolling } from './hooks-tab.js';
import { TABS, isPhone, loadServerInfo, renderSkillChecks, selectTab, showPanel } from './panel.js';
import { KEYS } from './protocol.js';
import { updateActions } from './recovery.js';
import { askSignIn, setUpSignIn } from './sign-in.js';
import { BANNER, store, subscribe, view } from './state.js';
import { redrawAll, useRenderers } from './transcript.js';
import { renderSpeaker, useVoiceInfo, voice } from './voice-controls.js'; // the speaker and the microphone

useRenderers({ user: drawUser, approval: drawApproval });

// Who redraws what when a view module announces a change (state.js lists the names).
subscribe((what, detail) => {
  switch (what) {
    case 'state': updateActions(detail === 'idle'); break;
    case 'conversations': renderConversations(); break;
    case 'transcript':
      renderConversations();
      renderHooks();
      break;
    case 'switched':
      voice.queue.stop();
      renderSpeaker();
      renderSkillChecks();
      break;
    case 'sessionHooks': renderHooks(); break;
    case 'ended': if (hooksOnScreen()) refreshHooks(); break;
    case 'panel': updatePolling(); break;
    case 'info': useVoiceInfo(detail); break;
    case 'signIn': askSignIn(detail); break;
  }
});

$('composer').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = $('input').value.trim();
  if (!text || view.conversation.running || !view.ws || view.ws.readyState !== WebSocket.OPEN) return;
  $('input').value = '';
  fitInput();
  startChat(text);
});
// The message box starts at one line and grows with what is typed (up to a third of the screen,
// then it scrolls).
function fitInput() {
  const input = $('input');
  input.style.height = 'auto';
  input.style.height = Math.min(input.scrollHeight + 2, Math.max(120, window.innerHeight / 3)) + 'px';
}
$('input').addEventListener('input', fitInput);
$('chat-search').addEventListener('input', renderConversations);
$('input').addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $('composer').requestSubmit();
  }
});
$('stop').addEventListener('click', stop);
$('compact').addEventListener('click', startCompaction);
$('dismiss-banner').addEventListener('click', () => {
  store.save(BANNER, true);
  $('banner').hidden = true;
  $('input').focus();
});
$('new-chat').addEventListener('click', newConversation);
$('rename-conversation').addEventListener('click', startRename);
$('delete-conversation').addEventListener('click', deleteConversation);
$('export-json').addEventListener('click', (event) => exportAs(event.currentTarget, 'json'));
$('export-md').addEventListener('click', (event) => exportAs(event.currentTarget, 'md'));
$('toggle-panel').addEventListener('click', () => showPanel($('panel').hidden));
for (const tab of TABS) $('tab-' + tab).addEventListener('click', () => selectTab(tab));
// Arrow keys move between tabs (the tab list is one stop for Tab).
$('tabs').addEventListener('keydown', (event) => {
  const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
  if (!step) return;
  event.preventDefault();
  selectTab(TABS[(TABS.indexOf(view.tab) + step + TABS.length) % TABS.length], true);
});
document.addEventListener('visibilitychange', updatePolling);
// Another tab of the page changed the list of conversations: show it.
window.addEventListener('storage', (event) => {
  if (event.key === KEYS.conversations && !view.conversation.running) renderConversations();
});
// The theme switch: kept per browser (theme.js applies it before the page is drawn).
export const THEME = 'hookwire.theme';
$('theme').value = ['light', 'dark'].includes(store.load(THEME, 'system')) ? store.load(THEME, 'system') : 'system';
$('theme').addEventListener('change', (event) => {
  const theme = event.target.value;
  store.save(THEME, theme);
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
});
$('tools-switch').checked = view.conversation.tools;
$('tools-switch').addEventListener('change', (event) => view.conversation.setTools(event.target.checked));
$('trace-switch').checked = view.conversation.trace;
$('trace-switch').addEventListener('change', (event) => view.conversation.setTrace(event.target.checked));

setUpSignIn();
setUpReplay();
selectTab(view.tab);
showPanel(!isPhone());
redrawAll();
loadServerInfo();
connect();
