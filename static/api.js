// The server's HTTP API as the page reads it: a GET with the access token. A 401 announces that
// the server wants a token (`changed('signIn')`: the sign-in panel opens).

import { authHeaders, signInNeed } from './server.js';
import { access, changed } from './state.js';

// What `api` throws for a 401: `need` is server.js `signInNeed`'s answer.
export class SignInNeeded extends Error {
  constructor(need) {
    super(need.refused || 'this server needs you to sign in');
    this.need = need;
  }
}

// GET an API route with the access token. `signIn: false` for a route whose 401 is no reason to
// sign in again: `/api/hooks`, which with `admin_token` set wants the operator's token instead.
export async function api(path, { signIn = true } = {}) {
  const sent = access.token;
  const response = await fetch(path, { headers: authHeaders(sent) });
  if (response.status === 401) {
    const body = await response.text().catch(() => '');
    const need = signInNeed(response.headers.get('WWW-Authenticate'), body, !!sent);
    // A refusal of a token the page no longer uses (a new one came meanwhile) asks for nothing.
    if (signIn && sent === access.token) changed('signIn', need);
    throw new SignInNeeded(need);
  }
  if (!response.ok) throw new Error(path + ' answered ' + response.status);
  return response.json();
}
