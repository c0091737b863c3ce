// The side panel: its tabs, the Skills tab with the tools, and what /api/info says. Showing the
// panel or a tab, and the info, are announced (`changed('panel')`, `changed('info', info)`).

import { SignInNeeded, api } from './api.js';
import { $, el } from './dom.js';
import { toolGroups } from './server.js';
import { BANNER, TAB, changed, store, view } from './state.js';

// ─── tabs ───

export const TABS = ['conversations', 'skills', 'hooks'];

export function isPhone() { return window.matchMedia('(max-width: 700px)').matches; }

export function showPanel(on) {
  $('panel').hidden = !on;
  $('toggle-panel').setAttribute('aria-expanded', String(on));
  changed('panel');
}

export function selectTab(name, focus) {
  if (!TABS.includes(name)) name = 'conversations';
  view.tab = name;
  store.save(TAB, name);
  for (const tab of TABS) {
    const button = $('tab-' + tab);
    const on = tab === name;
    button.setAttribute('aria-selected', String(on));
    button.tabIndex = on ? 0 : -1;
    $('pane-' + tab).hidden = !on;
  }
  if (focus) $('tab-' + name).focus();
  changed('panel');
}

// ─── skills ───

export function renderSkills(skills) {
  const box = $('skills');
  box.textContent = '';
  if (!skills.length) box.appendChild(el('p', 'muted', 'No skills loaded.'));
  for (const skill of skills) {
    const card = el('div', 'skill');
    const label = el('label');
    const check = el('input');
    check.type = 'checkbox';
    check.dataset.skill = skill.name;
    check.onchange = () => {
      const names = Array.from(document.querySelectorAll('#skills input[data-skill]')).filter((c) => c.checked).map((c) => c.dataset.skill);
      view.conversation.setSkills(names);
    };
    label.appendChild(check);
    label.appendChild(document.createTextNode(' ' + skill.name));
    card.appendChild(label);
    if (skill.description) card.appendChild(el('div', 'desc', skill.description));
    if (skill.hooks.length) {
      const list = el('ul');
      for (const hook of skill.hooks) {
        list.appendChild(el('li', null, hook.name + ' · ' + hook.timing + ' · ' + hook.role + (hook.persistent ? ' · persistent' : '') + (hook.tool_filter ? ' · ' + hook.tool_filter.join('|') : '')));
      }
      card.appendChild(list);
    }
    for (const error of skill.errors || []) card.appendChild(el('div', 'problem', error));
    for (const warning of skill.warnings || []) card.appendChild(el('div', 'warning', warning));
    box.appendChild(card);
  }
  renderSkillChecks();
}

export function renderSkillChecks() {
  const on = view.conversation.enabledSkills(view.defaultSkills);
  for (const check of document.querySelectorAll('#skills input[data-skill]')) check.checked = on.includes(check.dataset.skill);
}

// ─── server info ───

// The tools the model may be offered, the MCP servers' grouped by server with their state.
export function renderTools(info) {
  const box = $('tools-list');
  box.textContent = '';
  for (const group of toolGroups(info)) {
    if (!group.tools.length && group.state === null) continue;
    const card = el('div', 'tool-group');
    const head = el('div', 'tool-group-title', group.title);
    if (group.state) head.appendChild(el('span', 'tag' + (group.state === 'running' ? '' : ' warn'), group.state));
    card.appendChild(head);
    if (group.reason) card.appendChild(el('div', 'warning', group.reason));
    const names = el('ul');
    for (const name of group.tools) names.appendChild(el('li', null, name));
    card.appendChild(names);
    box.appendChild(card);
  }
}

// Asks `/api/info` and `/api/skills` and draws them: 'loaded', 'sign-in' (the server wants a
// token: the sign-in panel says so) or 'failed'.
export async function loadServerInfo() {
  try {
    const info = await api('/api/info');
    $('banner').hidden = !info.demo || store.load(BANNER, false) === true;
    view.defaultSkills = info.default_skills || [];
    view.model = typeof info.model === 'string' ? info.model : null;
    $('model').textContent = view.model || '';
    $('model').hidden = !view.model;
    renderTools(info);
    changed('info', info);
    const skills = await api('/api/skills');
    renderSkills(skills);
    document.body.dataset.info = 'loaded';
    return 'loaded';
  } catch (error) {
    // A server that wants a token says so in the sign-in panel (api.js announced it).
    $('skills').textContent = error instanceof SignInNeeded ? 'Sign in to see the skills.' : 'could not load the skills: ' + error;
    document.body.dataset.info = 'failed';
    return error instanceof SignInNeeded ? 'sign-in' : 'failed';
  }
}
