// The server's HTTP API as the page reads it: a GET or a POST with the access token. A 401
// announces that the server wants a token (`changed('signIn')`: the sign-in panel opens).

import { authHeaders, signInNeed } from './server.js';
import { access, changed } from './state.js';

// What `api` throws for a 401: `need` is server.js `signInNeed`'s answer.
export class SignInNeeded extends Error {
  constructor(need) {
    super(need.refused || 'this server needs you to sign in');
    this.need = need;
  }
}

// What `api` throws for another refusal: the status, and the server's `{"error": {code,
// message}}` when it sent one.
export class ApiRefused extends Error {
  constructor(path, status, error) {
    super(path + ' answered ' + status);
    this.status = status;
    this.code = error && typeof error.code === 'string' ? error.code : null;
    this.said = error && typeof error.message === 'string' ? error.message : null;
  }
}

// GET an API route with the access token (with `body`: POST it as JSON). `signIn: false` for a
// route whose 401 is no reason to sign in again: `/api/hooks` and `/api/hooks/replay`, which
// with `admin_token` set want the operator's token instead.
export async function api(path, { signIn = true, body } = {}) {
  const sent = access.token;
  const init = { headers: authHeaders(sent) };
  if (body !== undefined) {
    init.method = 'POST';
    init.headers = { ...init.headers, 'Content-Type': 'application/json' };
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 401) {
    const text = await response.text().catch(() => '');
    const need = signInNeed(response.headers.get('WWW-Authenticate'), text, !!sent);
    // A refusal of a token the page no longer uses (a new one came meanwhile) asks for nothing.
    if (signIn && sent === access.token) changed('signIn', need);
    throw new SignInNeeded(need);
  }
  if (!response.ok) {
    const answer = await response.json().catch(() => null);
    throw new ApiRefused(path, response.status, answer && answer.error);
  }
  return response.json();
}
