// The WebSocket: connect, hand each frame to the chat, reconnect with a growing delay, or at
// once with a new token (`reconnect`, after signing in).

import { api } from './api.js';
import { finish, onFrame, setState } from './chat.js';
import { $ } from './dom.js';
import { connectionLost } from './errors.js';
import { loadServerInfo } from './panel.js';
import { socketProtocols, socketUrl } from './server.js';
import { access, view } from './state.js';

let retryTimer = 0;

export function setStatus(kind, text) {
  const status = $('status');
  status.className = 'status ' + kind;
  $('status-text').textContent = text;
}

export function connect() {
  clearTimeout(retryTimer);
  setStatus('connecting', 'connecting…');
  const ws = new WebSocket(socketUrl(location), socketProtocols(access.token));
  view.ws = ws;
  let opened = false;
  ws.onopen = () => {
    opened = true;
    view.retry = 0;
    setStatus('online', 'connected');
    setState('idle');
    // A page opened while the server was down has no skills yet: fetch them now.
    if (document.body.dataset.info === 'failed') loadServerInfo();
    const next = view.onConnect;
    view.onConnect = null;
    if (next) next();
  };
  ws.onmessage = (event) => {
    let frame;
    try { frame = JSON.parse(event.data); } catch (_) { return; }
    // A renewal of the sign-in takes the answers to its `auth` frame (sign-in.js).
    if (view.renewal && view.renewal.take(frame)) return;
    onFrame(frame);
  };
  ws.onclose = () => {
    // A socket `reconnect` replaced says nothing any more.
    if (view.ws !== ws) return;
    if (view.renewal) view.renewal.lost();
    if (view.conversation.abort()) finish(connectionLost());
    setState('offline');
    // Refused before it opened while the API answered: the server may want a (new) token; the
    // API says so (a 401 opens the sign-in panel; any other answer changes nothing).
    if (!opened && document.body.dataset.info === 'loaded' && $('sign-in').hidden) api('/api/info').catch(() => {});
    const delay = Math.min(10000, 500 * 2 ** view.retry++);
    // Signed out, the retries wait for a token (they go on: a proxy may sign the page in).
    if ($('sign-in').hidden) setStatus('offline', 'offline, retrying in ' + Math.round(delay / 1000) + ' s');
    else setStatus('offline', 'not signed in');
    retryTimer = setTimeout(connect, delay);
  };
}

// Connects again at once, with the token the page has now (a sign-in gave a new one).
export function reconnect() {
  const old = view.ws;
  view.ws = null;
  if (old) old.close();
  if (view.renewal) view.renewal.lost();
  if (view.conversation.abort()) finish(connectionLost());
  view.retry = 0;
  connect();
}
