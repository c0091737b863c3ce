// A failed chat in plain words, with no DOM: what the person reads (a headline and a line of
// explanation) and the ways out that can work for that failure; the code and the server's
// message stay available as technical detail, never as the headline.
//
// The ways out (`actions`), in the order they are offered:
//   'retry'     send the same message again (only where trying again can help)
//   'compact'   summarise the older part of the conversation (it no longer fits)
//   'drop'      drop the oldest turns (the last resort when it no longer fits)
//   'edit'      edit a message and go on from there (`editAt`: the history place of the
//               message the server refused, when it named one)
//   'new_chat'  start a new conversation
//   'skills'    open the Skills tab (a chosen skill is gone)
//   'sign_in'   open the sign-in panel: a fresh token renews the connection's sign-in, then the
//               message is sent again

const LOST = 'connection_lost';

/** The error item the page keeps for a lost connection (no code from the server). */
export function connectionLost() {
  return { kind: 'error', code: LOST, message: 'the connection closed while the reply streamed' };
}

// "messages[9].content …" → 9: the message of the history the server refused.
function refusedMessage(message) {
  const found = /\bmessages\[(\d+)\]/.exec(message);
  return found ? Number(found[1]) : null;
}

// The model API's HTTP status in an `upstream` message ("the model API answered HTTP 429: …").
function upstreamStatus(message) {
  const found = /\bHTTP (\d{3})\b/.exec(message);
  return found ? Number(found[1]) : null;
}

function upstream(message) {
  const status = upstreamStatus(message);
  if (status === 401 || status === 403) {
    return {
      title: 'The model service refused this server’s credentials.',
      body: 'Trying again will not help until whoever runs this server checks its API key.',
      actions: ['new_chat'],
    };
  }
  if (status === 404) {
    return {
      title: 'The model service does not know the model this server asks for.',
      body: 'Whoever runs this server needs to check its model setting.',
      actions: ['new_chat'],
    };
  }
  if (status === 429) {
    return {
      title: 'The model service is busy or this server has used up its quota.',
      body: 'Wait a moment, then try again.',
      actions: ['retry', 'new_chat'],
    };
  }
  if (status !== null && status >= 400 && status < 500) {
    return {
      title: 'The model service refused this conversation.',
      body: 'Sending the same again would be refused again: edit your message or start a new chat.',
      actions: ['edit', 'new_chat'],
    };
  }
  if (/timeout|sent no data/i.test(message)) {
    return {
      title: 'The model took too long to answer.',
      body: 'It may be busy: try again.',
      actions: ['retry', 'new_chat'],
    };
  }
  return {
    title: 'The model service did not answer properly.',
    body: 'This is often brief: try again.',
    actions: ['retry', 'new_chat'],
  };
}

/**
 * What the page says about an `error` frame's `code` and `message` (or a lost connection,
 * `connectionLost()`): `{title, body, actions, editAt, detail}`; `detail` is the technical line
 * (`code: message`), `editAt` the history place of the refused message or null. `retryAfter`:
 * the frame's `retry_after_seconds`, when it said when to try again.
 */
export function explainError(code, message, retryAfter) {
  const text = typeof message === 'string' ? message : '';
  const detail = code === LOST ? text : (code ? code + ': ' : '') + text;
  const base = { title: '', body: '', actions: [], editAt: null, detail };
  switch (code) {
    case LOST:
      return Object.assign(base, {
        title: 'The connection was lost; the reply was cut off.',
        body: 'The page reconnects by itself; then you can try again.',
        actions: ['retry'],
      });
    case 'context_too_long':
      return Object.assign(base, {
        title: 'This conversation has grown too long for the model.',
        body: 'Compact it (its older part becomes a summary), start a new chat, or, as a last resort, drop its oldest turns.',
        actions: ['compact', 'new_chat', 'drop'],
      });
    case 'bad_frame': {
      const at = refusedMessage(text);
      return Object.assign(base, {
        title: 'The server could not accept this conversation as it is.',
        body: at === null
          ? 'Sending it again would fail the same way: edit a message to go on from there, or start a new chat.'
          : 'One of its earlier messages cannot be sent again: edit a message before it to go on from there, or start a new chat.',
        actions: ['edit', 'new_chat'],
        editAt: at,
      });
    }
    case 'hook_blocked':
      return Object.assign(base, {
        title: 'A rule of this server stopped the chat.',
        body: text ? 'It said: ' + text : 'Sending the same again would be stopped again.',
        actions: ['edit', 'new_chat'],
      });
    case 'unknown_skill':
      return Object.assign(base, {
        title: 'A skill chosen for this chat is not on the server any more.',
        body: 'Turn it off in the Skills tab, then try again.',
        actions: ['skills', 'retry'],
      });
    case 'busy':
      return Object.assign(base, {
        title: 'Another reply was still running.',
        body: 'Wait for it to finish, then try again.',
        actions: ['retry'],
      });
    case 'draining':
      return Object.assign(base, {
        title: 'The server is restarting.',
        body: 'The page reconnects by itself; then try again.',
        actions: ['retry'],
      });
    case 'upstream':
      return Object.assign(base, upstream(text));
    case 'quota_exceeded':
      return Object.assign(base, {
        title: 'You have reached your limit on this server for now.',
        body: Number.isFinite(retryAfter) && retryAfter > 0
          ? 'It resets in ' + waitWords(retryAfter) + '; try again then.'
          : 'The technical details say which limit; try again later.',
        actions: ['retry'],
      });
    case 'auth_expired':
      return Object.assign(base, {
        title: 'Your sign-in has expired.',
        body: 'Sign in again with a fresh token (or reload the page to sign in through your organisation’s sign-in page); the message is then sent again.',
        actions: ['sign_in'],
      });
    case 'unavailable':
      return Object.assign(base, {
        title: 'A service this server needs cannot be reached.',
        body: 'This is usually brief: try again in a moment.',
        actions: ['retry'],
      });
    case 'internal':
    default:
      return Object.assign(base, {
        title: 'Something went wrong on the server.',
        body: 'Trying again may work; if it keeps failing, start a new chat.',
        actions: ['retry', 'new_chat'],
      });
  }
}

/** A wait in words a person reads at a glance: "about 3 hours", "40 seconds". */
export function waitWords(seconds) {
  const plural = (n, unit) => n + ' ' + unit + (n === 1 ? '' : 's');
  if (seconds < 90) return plural(Math.max(1, Math.round(seconds)), 'second');
  if (seconds < 90 * 60) return 'about ' + plural(Math.round(seconds / 60), 'minute');
  return 'about ' + plural(Math.round(seconds / 3600), 'hour');
}

/**
 * An error item as the page keeps it: `{kind: 'error', code, message, retryAfter?}`; one stored by an older
 * page has only `text` ("code: message", or the lost connection's sentence).
 */
export function errorOf(item) {
  if (item && typeof item.code === 'string') {
    const found = { code: item.code, message: item.message };
    if (Number.isFinite(item.retryAfter)) found.retryAfter = item.retryAfter;
    return found;
  }
  const text = item && typeof item.text === 'string' ? item.text : '';
  if (text.startsWith('connection lost')) return { code: LOST, message: '' };
  const found = /^([a-z_]+): ([\s\S]*)$/.exec(text);
  return found ? { code: found[1], message: found[2] } : { code: 'internal', message: text };
}

/** What the page says after dropping the oldest turns (`dropOldestTurns`' result). */
export function describeDrop(cut) {
  const quote = (text) => '“' + (text.length > 40 ? text.slice(0, 39) + '…' : text) + '”';
  const said = cut.dropped.length === 0 ? ''
    : cut.dropped.length === 1 ? ': ' + quote(cut.dropped[0])
      : ', from ' + quote(cut.dropped[0]) + ' to ' + quote(cut.dropped[cut.dropped.length - 1]);
  const turns = cut.turns === 1 ? 'the oldest turn' : 'the ' + cut.turns + ' oldest turns';
  const messages = cut.count - cut.kept;
  let text = 'Dropped ' + turns + ' (' + messages + ' message' + (messages === 1 ? '' : 's') + ') to make room' + said + '.';
  if (cut.kept) text += ' ' + (cut.kept === 1 ? 'The persistent hook message was' : 'The ' + cut.kept + ' persistent hook messages were') + ' kept.';
  return text;
}
