// The server's HTTP API as the page reads it: a GET with the access token.

import { authHeaders } from './server.js';
import { access } from './state.js';

// GET an API route with the access token; a refusal says what to do about it.
export async function api(path) {
  const response = await fetch(path, { headers: authHeaders(access.token) });
  if (response.status === 401) {
    throw new Error('this server needs an access token: open the page as ' + location.origin + '/#token=YOUR_TOKEN');
  }
  if (!response.ok) throw new Error(path + ' answered ' + response.status);
  return response.json();
}
