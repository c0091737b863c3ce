// The sign-in panel (docs/page.md "Signing in"): shown when the server wants a token — an API
// call answered 401 (api.js announces `changed('signIn')`) — or when a chat ended with
// `auth_expired` ("Sign in again" under it, recovery.js). The token pasted into its field is
// kept for the tab as the URL fragment's is (state.js `useToken`); it goes into no URL, no log,
// and no part of the page but the field, which is emptied as soon as it is read.
//
// - Signed out: the API is asked again with the token; once it answers, the WebSocket connects
//   again with it (its subprotocol) and what waited for the sign-in runs.
// - An open connection whose sign-in expired: the token goes to that connection (`auth`, then a
//   `ping` whose `pong` says it was taken: server.js `createRenewal`); taken, it is kept and
//   what waited (the failed chat, sent again) runs on the same connection. A refusal is said in
//   the panel, which stays.

import { reconnect, setStatus } from './connection.js';
import { $ } from './dom.js';
import { loadServerInfo } from './panel.js';
import { createRenewal } from './server.js';
import { useToken, view } from './state.js';

// What the next token is for: `renew` the open connection's sign-in, `then` run once signed in.
let purpose = { renew: false, then: null };
let renewals = 0;

/**
 * Shows the panel (or, shown, says what changed). `refused`: why the last token was refused, or
 * null; `renew`: the open connection's sign-in expired; `then`: what runs once signed in.
 */
export function askSignIn({ refused = null, renew = false, then = null } = {}) {
  const panel = $('sign-in');
  const shown = !panel.hidden;
  // The API's 401 while the panel is up keeps what the panel was opened for.
  if (!shown || renew || then) purpose = { renew, then };
  const news = refused && refused !== $('sign-in-problem').textContent;
  showProblem(refused);
  panel.hidden = false;
  if (!view.ws || view.ws.readyState !== WebSocket.OPEN) setStatus('offline', 'not signed in');
  // The field takes the focus when the panel opens or a token was just refused, not again.
  if (!shown || news) $('sign-in-token').focus();
}

// The panel's controls (app.js calls this once).
export function setUpSignIn() {
  $('sign-in-form').addEventListener('submit', submit);
  // Enter in the field signs in, as the message box sends (whatever makes the key event).
  $('sign-in-token').addEventListener('keydown', (event) => {
    if (event.key !== 'Enter' || event.isComposing) return;
    event.preventDefault();
    $('sign-in-form').requestSubmit();
  });
  $('sign-in-reload').addEventListener('click', () => {
    // The organisation's sign-in page gives the page its sign-in; a pasted token would stand in
    // its way.
    useToken('');
    location.reload();
  });
  // Escape leaves the panel (the page stays as it is; "Sign in again" or a reload brings it back).
  $('sign-in').addEventListener('keydown', (event) => {
    if (event.key !== 'Escape') return;
    event.preventDefault();
    hide();
  });
}

async function submit(event) {
  event.preventDefault();
  // One token at a time: the last one's answer is awaited.
  if ($('sign-in-submit').disabled) return;
  const field = $('sign-in-token');
  const token = field.value.trim();
  field.value = '';
  if (!token) {
    showProblem('Paste a token first.');
    field.focus();
    return;
  }
  const { renew, then } = purpose;
  if (renew && view.ws && view.ws.readyState === WebSocket.OPEN) {
    renewOn(view.ws, token, then);
    return;
  }
  useToken(token);
  busy(true);
  const answered = await loadServerInfo();
  busy(false);
  // Refused: the API's 401 said why in the panel. Answered, or the server unreachable: connect
  // with the token (the connection retries by itself).
  if (answered === 'sign-in') return;
  hide();
  view.onConnect = then;
  reconnect();
}

// Sends `token` to the open connection `ws`, and waits for the answer (connection.js hands the
// frames to `view.renewal` first).
function renewOn(ws, token, then) {
  const renewal = createRenewal(token, 'sign-in-' + ++renewals);
  busy(true);
  view.renewal = {
    take(frame) {
      const answer = renewal.answer(frame);
      if (!answer) return false;
      view.renewal = null;
      busy(false);
      if (!answer.taken) {
        showProblem(answer.refused);
        $('sign-in-token').focus();
        return true;
      }
      useToken(token);
      hide();
      if (then) then();
      return true;
    },
    lost() {
      view.renewal = null;
      busy(false);
      showProblem('the connection closed before the server answered: paste the token again');
    },
  };
  for (const frame of renewal.frames) ws.send(JSON.stringify(frame));
}

function showProblem(text) {
  const line = $('sign-in-problem');
  line.textContent = text || '';
  line.hidden = !text;
}

function busy(on) {
  $('sign-in-submit').disabled = on;
  $('sign-in-form').setAttribute('aria-busy', String(on));
}

function hide() {
  const panel = $('sign-in');
  const focused = panel.contains(document.activeElement);
  panel.hidden = true;
  showProblem(null);
  if (focused) $('input').focus();
}
