// Reaching the server: the access token, the WebSocket's address and subprotocols, the API
// requests' headers, and the tools `/api/info` lists. No DOM.

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
