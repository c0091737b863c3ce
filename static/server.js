// Reaching the server: the access token, the WebSocket's address and subprotocols, the API
// requests' headers, what a refusal says about signing in, renewing a connection's sign-in, and
// the tools `/api/info` lists. No DOM.

import { list } from './protocol.js';

// The access token of a server that has `auth_token` set (README "Security model"): taken from
// the page's own URL once, from its fragment (`/#token=…`: a fragment never leaves the browser,
// so no proxy or server log holds it; a `?token=` query is not read), kept in `session`
// (sessionStorage: gone with the tab), and removed from the address bar. Returns
// `{token, cleanUrl}`: `cleanUrl` is the address to show instead (null when the URL had no
// token).
export function takeToken(href, session) {
  const url = new URL(href);
  const fragment = new URLSearchParams(url.hash.replace(/^#/, ''));
  const fromUrl = fragment.get('token');
  if (fromUrl !== null) {
    fragment.delete('token');
    const rest = fragment.toString();
    url.hash = rest ? '#' + rest : '';
    session.save(TOKEN_KEY, fromUrl);
    return { token: fromUrl || null, cleanUrl: url.toString() };
  }
  const kept = session.load(TOKEN_KEY, null);
  return { token: typeof kept === 'string' && kept ? kept : null, cleanUrl: null };
}

// Where the page opens its WebSocket: the same host, never with the token in the URL.
export function socketUrl(location) {
  const scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
  return scheme + location.host + '/ws';
}

// The subprotocols the page offers (a browser cannot set headers on a WebSocket, but it sends
// these in `Sec-WebSocket-Protocol`): `hookwire`, which the server answers, and the token as
// `hookwire.token.<token>`, percent-encoded down to the characters a protocol name may hold.
export function socketProtocols(token) {
  if (!token) return ['hookwire'];
  const encoded = encodeURIComponent(token).replace(/[()]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  return ['hookwire', 'hookwire.token.' + encoded];
}

// The headers of the page's API requests.
export function authHeaders(token) {
  return token ? { Authorization: 'Bearer ' + token } : {};
}

const TOKEN_KEY = 'hookwire.token';

// A token typed or pasted into the sign-in panel, kept in `session` as the fragment's is.
// Returns the token (null for an empty one).
export function keepToken(token, session) {
  const kept = typeof token === 'string' && token.trim() ? token.trim() : null;
  session.save(TOKEN_KEY, kept || '');
  return kept;
}

// What a 401 from the server says about signing in (docs/protocol.md §20): `{refused}`, the
// sentence the sign-in panel shows when a token was given and refused ("the token was refused:
// expired"), or null when the server only asks for one. `challenge`: the `WWW-Authenticate`
// header (`Bearer error="invalid_token"` for a JWT that does not verify); `body`: the answer's
// text (`{"error": {"message"}}` or one line); `sent`: whether the request carried a token (a
// wrong static token is refused with a plain `Bearer`).
export function signInNeed(challenge, body, sent) {
  const invalid = /\berror\s*=\s*"?invalid_token/.test(typeof challenge === 'string' ? challenge : '');
  if (!invalid && !sent) return { refused: null };
  return { refused: 'the token was refused: ' + refusalReason(body) };
}

// The reason in a refusal's body, without the "invalid token: " its message starts with.
function refusalReason(body) {
  let text = typeof body === 'string' ? body.trim() : '';
  try {
    const parsed = JSON.parse(text);
    if (parsed && parsed.error && typeof parsed.error.message === 'string') text = parsed.error.message;
  } catch (_) { /* a one-line text answer */ }
  text = text.replace(/^invalid token:\s*/i, '').replace(/\s+/g, ' ').trim();
  return text ? text.slice(0, 200) : 'no reason given';
}

// Renewing an open connection's sign-in with a fresh token (docs/protocol.md §20): `auth` is
// taken silently, or answered with an `error` without `id` (`auth_expired` for a token that does
// not verify, `bad_frame` for another person's). The server answers a connection's frames in the
// order it reads them, so a `ping` with `id` sent right after tells the two apart: its `pong`
// before any such error means the token was taken. `frames`: what to send, in order;
// `answer(frame)`: null for a frame that is not about the renewal, else `{taken: true}` or
// `{taken: false, refused}` (the sentence for the sign-in panel).
export function createRenewal(token, id) {
  return {
    frames: [{ type: 'auth', token }, { type: 'ping', id }],
    answer(frame) {
      if (!frame || typeof frame !== 'object') return null;
      if (frame.type === 'pong' && frame.id === id) return { taken: true };
      if (frame.type === 'error' && (frame.id === undefined || frame.id === null)) {
        const message = typeof frame.message === 'string' ? frame.message.trim() : '';
        const refused = message.startsWith('the token was refused') ? message
          : 'the token was refused: ' + (message || String(frame.code));
        return { taken: false, refused };
      }
      return null;
    },
  };
}

// The tools of `/api/info`, grouped for the page: the built-in ones first, then each MCP
// server with its state (`running`, `starting`, `down` …, and why) and its tools.
export function toolGroups(info) {
  info = info || {};
  const servers = list(info.mcp_servers);
  const fromServers = new Set(list(info.mcp_tools).map((tool) => tool && tool.name));
  const groups = [{ title: 'built-in', state: null, reason: null,
    tools: list(info.tools).filter((name) => !fromServers.has(name)) }];
  for (const server of servers) {
    if (!server || typeof server.name !== 'string') continue;
    groups.push({
      title: 'MCP: ' + server.name,
      state: typeof server.state === 'string' ? server.state : null,
      reason: typeof server.reason === 'string' && server.reason ? server.reason : null,
      tools: list(info.mcp_tools).filter((tool) => tool && tool.server === server.name).map((tool) => tool.name),
    });
  }
  return groups;
}
