// Signing in without a browser (static/server.js): what a 401 says to the sign-in panel, the
// token the panel keeps for the tab, and renewing an open connection's sign-in with an `auth`
// frame whose answer a `ping` right after it makes known (docs/protocol.md §20).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRenewal, keepToken, signInNeed, takeToken } from '../../static/server.js';
import { explainError } from '../../static/errors.js';

function memoryStore() {
  const data = new Map();
  return {
    load: (key, fallback) => (data.has(key) ? data.get(key) : fallback),
    save: (key, value) => data.set(key, value),
  };
}

test('a 401 without a token asks for one; a refused token says why, in a sentence of its own', () => {
  assert.deepEqual(signInNeed('Bearer', '{"error": {"code": "token", "message": "this server needs a sign-in token"}}', false), { refused: null });
  assert.deepEqual(signInNeed(null, '', false), { refused: null });
  // A JWT that does not verify: text on /api/*, JSON on the front-end routes.
  assert.deepEqual(signInNeed('Bearer error="invalid_token"', 'invalid token: expired', true), { refused: 'the token was refused: expired' });
  assert.deepEqual(signInNeed('Bearer error="invalid_token"', '{"error": {"code": "invalid_token", "message": "invalid token: wrong audience"}}', true),
    { refused: 'the token was refused: wrong audience' });
  // A wrong static token is refused with a plain challenge: the page knows it sent one.
  assert.deepEqual(signInNeed('Bearer', 'wrong token', true), { refused: 'the token was refused: wrong token' });
  assert.deepEqual(signInNeed('Bearer error="invalid_token"', '', true), { refused: 'the token was refused: no reason given' });
  assert.ok(signInNeed('Bearer', 'x'.repeat(5000), true).refused.length < 250, 'a long body is cut');
});

test('a token from the panel is kept for the tab as the fragment\'s is, and an empty one forgets it', () => {
  const session = memoryStore();
  assert.equal(keepToken('  ey.J.wt \n', session), 'ey.J.wt');
  assert.deepEqual(takeToken('http://127.0.0.1:8080/', session), { token: 'ey.J.wt', cleanUrl: null }, 'a reload finds it');
  assert.equal(keepToken('', session), null);
  assert.deepEqual(takeToken('http://127.0.0.1:8080/', session), { token: null, cleanUrl: null });
});

test('a renewal sends auth then a ping, and tells taken from refused by what comes first', () => {
  const renewal = createRenewal('ey.fresh', 'sign-in-1');
  assert.deepEqual(renewal.frames, [{ type: 'auth', token: 'ey.fresh' }, { type: 'ping', id: 'sign-in-1' }]);
  // Frames about other things are not its business.
  assert.equal(renewal.answer({ type: 'pong' }), null);
  assert.equal(renewal.answer({ type: 'pong', id: 'sign-in-0' }), null);
  assert.equal(renewal.answer({ type: 'error', id: 'c1', code: 'busy', message: 'a chat runs' }), null);
  assert.equal(renewal.answer({ type: 'text', id: 'c1', delta: 'x' }), null);
  assert.equal(renewal.answer(null), null);
  assert.deepEqual(renewal.answer({ type: 'pong', id: 'sign-in-1' }), { taken: true });
  // Refused: a token that does not verify names the reason; another person's says so.
  assert.deepEqual(renewal.answer({ type: 'error', code: 'auth_expired', message: 'the token was refused: expired' }),
    { taken: false, refused: 'the token was refused: expired' });
  assert.deepEqual(renewal.answer({ type: 'error', code: 'bad_frame', message: 'the token names another user: open a new connection to sign in as them' }),
    { taken: false, refused: 'the token was refused: the token names another user: open a new connection to sign in as them' });
  assert.deepEqual(renewal.answer({ type: 'error', id: null, code: 'bad_frame' }), { taken: false, refused: 'the token was refused: bad_frame' });
});

test('an expired sign-in offers Sign in again, not a Retry that would fail the same way', () => {
  const shown = explainError('auth_expired', 'the sign-in token has expired');
  assert.deepEqual(shown.actions, ['sign_in']);
  assert.equal(shown.title, 'Your sign-in has expired.');
});
