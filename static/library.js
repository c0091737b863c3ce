// Several conversations in one store (each with its own history, session hooks, waiting approval
// and transcript, under its own key prefix), with their titles, and their exports. No DOM.

import { KEYS, NO_STORE, PER_CONVERSATION, UNTITLED, createConversation, list } from './protocol.js';
import { exportJson, exportMarkdown } from './exports.js';


// A store that keeps conversation `id`'s own keys under `hookwire.conversation.<id>.` and
// passes the shared settings through: `createConversation` needs no change to be one of many.
export function conversationStore(store, id) {
  const own = (key) => {
    const name = PER_CONVERSATION.find((n) => KEYS[n] === key);
    return name ? 'hookwire.conversation.' + id + '.' + name : key;
  };
  return {
    load: (key, fallback) => store.load(own(key), fallback),
    save: (key, value) => store.save(own(key), value),
  };
}

// A title from the first message: its first line, at most 48 characters.
export function titleFrom(input) {
  const line = String(input || '').split('\n').map((l) => l.trim()).find((l) => l) || '';
  const flat = line.replace(/\s+/g, ' ');
  return flat.length > 48 ? flat.slice(0, 47) + '…' : flat || UNTITLED;
}

function validMeta(meta) {
  return meta && typeof meta === 'object' && typeof meta.id === 'string' && meta.id !== '' &&
    typeof meta.title === 'string';
}

const DAY = 24 * 60 * 60 * 1000;

/**
 * The conversations `metas` (most recent first) in groups by when they were last used, as chat
 * lists show them: `[{label, items}]` with the labels Today, Yesterday, Previous 7 days, Older
 * (calendar days of the local time zone; empty groups left out).
 */
export function dateGroups(metas, now) {
  const today = new Date(now);
  today.setHours(0, 0, 0, 0);
  const start = today.getTime();
  const groups = [
    { label: 'Today', from: start },
    { label: 'Yesterday', from: start - DAY },
    { label: 'Previous 7 days', from: start - 7 * DAY },
    { label: 'Older', from: -Infinity },
  ].map((g) => ({ label: g.label, from: g.from, items: [] }));
  for (const meta of list(metas)) {
    const group = groups.find((g) => meta.updated >= g.from);
    group.items.push(meta);
  }
  return groups.filter((g) => g.items.length).map((g) => ({ label: g.label, items: g.items }));
}

/** Whether `query` (any case, words in any order) is in `title` or one of `messages`. */
export function matchesSearch(query, title, messages) {
  const words = String(query || '').toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return true;
  const texts = [String(title || '')].concat(list(messages).filter((m) => m && typeof m.content === 'string' && !m._hook).map((m) => m.content));
  const all = texts.join('\n').toLowerCase();
  return words.every((word) => all.includes(word));
}

/**
 * The person's conversations in `store` (`{load, save, remove?}`): a list of
 * `{id, title, named, created, updated}` (times in ms) under `KEYS.conversations`, the one on
 * screen under `KEYS.current`, and each one's history, session hooks, waiting approval and
 * transcript under its own prefix (`conversationStore`). There is always at least one. The
 * keys of the single conversation the page kept before (`hookwire.history`, …) become the
 * first conversation. `options.now` and `options.newId` are for tests.
 */
export function createLibrary(store, options) {
  store = store || NO_STORE;
  options = options || {};
  const now = options.now || (() => Date.now());
  let counter = 0;
  const newId = options.newId || (() => now().toString(36) + Math.random().toString(36).slice(2, 6) + (++counter));
  const forget = (key) => (typeof store.remove === 'function' ? store.remove(key) : store.save(key, null));

  let metas = store.load(KEYS.conversations, null);
  if (!Array.isArray(metas)) metas = null;
  else metas = metas.filter(validMeta);
  if (metas === null) metas = migrate();
  let current = store.load(KEYS.current, null);
  if (!metas.length) metas.push(fresh());
  if (!metas.some((m) => m.id === current)) current = mostRecent().id;
  saveList();

  function fresh(title) {
    const t = now();
    return { id: newId(), title: title || UNTITLED, named: !!title, created: t, updated: t };
  }
  function saveList() {
    store.save(KEYS.conversations, metas);
    store.save(KEYS.current, current);
  }
  function mostRecent() {
    return metas.slice().sort((a, b) => b.updated - a.updated)[0];
  }
  function find(id) {
    const meta = metas.find((m) => m.id === id);
    if (!meta) throw new Error('no conversation ' + id);
    return meta;
  }
  // Another page of the same origin may have changed the list since: read it again before
  // each change, so that one page does not write back a list without the other's changes.
  function reread() {
    const stored = store.load(KEYS.conversations, null);
    if (!Array.isArray(stored)) return;
    const mine = metas.find((m) => m.id === current);
    metas = stored.filter(validMeta);
    // The conversation on screen here was deleted by another page: in use, so it stays.
    if (mine && !metas.some((m) => m.id === current)) metas.push(mine);
  }

  // The page before conversations: one set of keys, moved into the first conversation.
  function migrate() {
    const old = {};
    let any = false;
    for (const name of PER_CONVERSATION) {
      const value = store.load(KEYS[name], null);
      if (value === null) continue;
      old[name] = value;
      if (Array.isArray(value) ? value.length : typeof value === 'object') any = true;
    }
    if (!any) {
      for (const name of Object.keys(old)) forget(KEYS[name]);
      return [];
    }
    const history = list(old.history);
    const first = history.find((m) => m && m.role === 'user' && typeof m.content === 'string' && !m._hook);
    const meta = fresh(first ? titleFrom(first.content) : 'Earlier conversation');
    meta.named = false;
    const target = conversationStore(store, meta.id);
    for (const name of PER_CONVERSATION) {
      if (name in old) target.save(KEYS[name], old[name]);
      forget(KEYS[name]);
    }
    return [meta];
  }

  return {
    /** The conversations, most recently used first (copies). */
    list() {
      reread();
      return metas.slice().sort((a, b) => b.updated - a.updated).map((m) => Object.assign({}, m));
    },
    /** The conversations whose title or messages hold `query` (see `matchesSearch`), as `list`. */
    search(query) {
      return this.list().filter((m) => matchesSearch(query, m.title, conversationStore(store, m.id).load(KEYS.history, [])));
    },
    /** The id of the conversation on screen. */
    get current() { return current; },
    /** The meta data of conversation `id` (the current one by default), a copy. */
    meta(id) { return Object.assign({}, find(id || current)); },
    /** The store of conversation `id`'s own keys (and the shared settings). */
    storeFor(id) { return conversationStore(store, find(id || current).id); },
    /** Conversation `id` (the current one by default), restored from its keys. */
    open(id) { return createConversation(this.storeFor(id)); },
    /** A new, empty conversation, which becomes the current one. Returns its meta data. */
    create(title) {
      reread();
      const meta = fresh(typeof title === 'string' && title.trim() ? title.trim() : null);
      metas.push(meta);
      current = meta.id;
      saveList();
      return Object.assign({}, meta);
    },
    /** Makes `id` the current conversation. */
    switchTo(id) {
      reread();
      current = find(id).id;
      saveList();
    },
    /** Renames `id`; an empty title gives the automatic one back. */
    rename(id, title) {
      reread();
      const meta = find(id);
      const clean = String(title || '').replace(/\s+/g, ' ').trim().slice(0, 120);
      meta.title = clean || UNTITLED;
      meta.named = !!clean;
      saveList();
    },
    /**
     * Conversation `id` was used (a message `input` was sent): it moves to the top, and an
     * unnamed one takes its title from its first message.
     */
    touch(id, input) {
      reread();
      const meta = find(id);
      meta.updated = Math.max(now(), meta.updated + 1);
      if (!meta.named && meta.title === UNTITLED && input) meta.title = titleFrom(input);
      saveList();
    },
    /**
     * Deletes `id` and its keys. When it was the current one, the most recent other one takes
     * its place (a fresh one when none is left). Returns the current id.
     */
    remove(id) {
      reread();
      find(id);
      metas = metas.filter((m) => m.id !== id);
      for (const name of PER_CONVERSATION) forget('hookwire.conversation.' + id + '.' + name);
      if (!metas.length) metas.push(fresh());
      if (current === id) current = mostRecent().id;
      saveList();
      return current;
    },
    /** Conversation `id` as one JSON value (see `exportJson`). */
    exportJson(id, extra) {
      const meta = find(id || current);
      return exportJson(meta, this.storeFor(meta.id), Object.assign({ exported: now() }, extra));
    },
    /** Conversation `id` as Markdown (see `exportMarkdown`). */
    exportMarkdown(id, extra) {
      const meta = find(id || current);
      const own = this.storeFor(meta.id);
      return exportMarkdown(meta, list(own.load(KEYS.transcript, [])), Object.assign({ exported: now() }, extra));
    },
  };
}
