// The WebSocket: connect, hand each frame to the chat, reconnect with a growing delay.

import { finish, onFrame, setState } from './chat.js';
import { $ } from './dom.js';
import { connectionLost } from './errors.js';
import { loadServerInfo } from './panel.js';
import { socketProtocols, socketUrl } from './server.js';
import { access, view } from './state.js';

export function setStatus(kind, text) {
  const status = $('status');
  status.className = 'status ' + kind;
  $('status-text').textContent = text;
}

export function connect() {
  setStatus('connecting', 'connecting…');
  const ws = new WebSocket(socketUrl(location), socketProtocols(access.token));
  view.ws = ws;
  ws.onopen = () => {
    view.retry = 0;
    setStatus('online', 'connected');
    setState('idle');
    // A page opened while the server was down has no skills yet: fetch them now.
    if (document.body.dataset.info === 'failed') loadServerInfo();
  };
  ws.onmessage = (event) => {
    let frame;
    try { frame = JSON.parse(event.data); } catch (_) { return; }
    onFrame(frame);
  };
  ws.onclose = () => {
    if (view.conversation.abort()) finish(connectionLost());
    setState('offline');
    const delay = Math.min(10000, 500 * 2 ** view.retry++);
    setStatus('offline', 'offline, retrying in ' + Math.round(delay / 1000) + ' s');
    setTimeout(connect, delay);
  };
}
