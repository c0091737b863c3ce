// What the page's modules share: the stores (localStorage, and sessionStorage for the access
// token), the library of conversations, the access token, `view`: the conversation on screen,
// what its transcript shows and the running chat; and the one subscription through which a view
// module says what it changed (`changed`), so that no view module imports another to keep it
// current: the entry module (app.js) subscribes the redraws.

import { createLibrary } from './library.js';
import { KEYS, itemsOf } from './protocol.js';
import { keepToken, takeToken } from './server.js';

export const TAB = 'hookwire.tab';
export const BANNER = 'hookwire.demoBannerDismissed';

// localStorage, one JSON value per key; the conversations save their own keys through it too.
export const store = {
  load(key, fallback) {
    try {
      const raw = localStorage.getItem(key);
      return raw === null ? fallback : JSON.parse(raw);
    } catch (_) {
      return fallback;
    }
  },
  save(key, value) {
    try { localStorage.setItem(key, JSON.stringify(value)); } catch (_) { /* storage full or off */ }
  },
  remove(key) {
    try { localStorage.removeItem(key); } catch (_) { /* storage off */ }
  },
};

// sessionStorage, for the access token: it lasts as long as the tab.
const session = {
  load(key, fallback) {
    try { const raw = sessionStorage.getItem(key); return raw === null ? fallback : JSON.parse(raw); } catch (_) { return fallback; }
  },
  save(key, value) {
    try { sessionStorage.setItem(key, JSON.stringify(value)); } catch (_) { /* storage off */ }
  },
};

export const library = createLibrary(store);
export const access = takeToken(location.href, session);
if (access.cleanUrl) history.replaceState(history.state, '', access.cleanUrl);
// A token from the sign-in panel: the API requests and every later connection use it.
export function useToken(token) {
  access.token = keepToken(token, session);
}

export const view = {
  conversation: library.open(), // the conversation on screen (protocol.js)
  own: library.storeFor(), // its keys
  transcript: [], // what is drawn, as items (see transcript.js)
  defaultSkills: [],
  model: null, // from /api/info
  ws: null,
  retry: 0,
  onConnect: null, // what runs once the next connection opens (a sign-in's retried chat)
  renewal: null, // a sign-in renewal waiting for its answer: {take(frame) → handled, lost()}
  chat: null, // the running chat on screen: {bubble, tools: {call_id: {item, node}}, trace: [rows]}
  afterStop: null, // what runs once the running chat has ended (New, a switch, Delete stop it first)
  tab: store.load(TAB, 'conversations'),
  hooks: null, // the last answer of /api/hooks
  hooksError: null,
  poll: null, // the Hooks tab's refresh timer while it is on screen
  polling: false, // a refresh is on its way
  refreshes: 0,
  replay: null, // the Hooks tab's last replay: {report} (hook-replay.js `replayReport`) or {problem}
  replaying: false, // a replay is on its way
};
view.transcript = loadTranscript();

// What was on the screen; without it (an imported or older conversation), what the history
// holds: the messages, hook chips and tool cards with their results.
export function loadTranscript() {
  const loaded = view.own.load(KEYS.transcript, []);
  if (Array.isArray(loaded) && loaded.length) return loaded;
  return itemsOf(view.conversation.history);
}
export function saveTranscript() {
  view.own.save(KEYS.transcript, view.transcript);
}

// The one subscription. `what` names what changed, `detail` says more where a listener needs it:
//   'state'         the chat state ('idle', 'running', 'offline': detail)
//   'conversations' the list of conversations (a title, an order)
//   'transcript'    the transcript was drawn anew (another conversation, a fork, the start)
//   'switched'      another conversation is on screen
//   'sessionHooks'  the model registered a session hook
//   'ended'         a chat ended (the hooks' figures moved)
//   'panel'         the side panel was shown or hidden, or another tab chosen
//   'info'          /api/info answered (its answer: detail)
//   'signIn'        the server wants a (new) token: an API call answered 401 (detail:
//                   server.js `signInNeed`'s `{refused}`)
// Listeners run at once, in the order they subscribed.
const listeners = [];
export function subscribe(listener) {
  listeners.push(listener);
}
export function changed(what, detail) {
  for (const listener of listeners) listener(what, detail);
}
