import { newChat, setState } from './chat.js';
import { el, toast } from './dom.js';
import { saveTranscript, view } from './state.js';
import { nodes, transcriptEl } from './transcript.js';

// The calls of an `approval` frame, each with Approve / Deny (and an optional reason); once
// every call has a decision, the resume is sent. Only the approval the conversation still
// keeps has live buttons (an older card, or one after a new message, is a record).
export function drawApproval(item) {
  const card = el('div', 'approval-card');
  card.setAttribute('role', 'group');
  const pending = view.conversation.approval;
  const live = !!pending && pending.state === item.state;
  item.decisions = item.decisions || {};
  const title = approvalTitle(item, live);
  card.setAttribute('aria-label', title);
  card.appendChild(el('div', 'approval-title', title));
  for (const call of item.calls) {
    const row = el('div', 'approval-call');
    row.dataset.callId = call.call_id;
    const head = el('div');
    head.appendChild(el('strong', null, call.name));
    if (call.reason) head.appendChild(el('span', 'muted', ' · ' + call.reason));
    row.appendChild(head);
    row.appendChild(el('pre', 'args', JSON.stringify(call.arguments, null, 2)));
    const decided = item.decisions[call.call_id];
    if (decided || !live) {
      row.appendChild(el('div', 'approval-outcome' + (decided ? ' ' + decided.decision : ''), decisionText(decided)));
    } else {
      const reason = el('input', 'approval-reason');
      reason.type = 'text';
      reason.placeholder = 'reason (optional)';
      reason.setAttribute('aria-label', 'Reason for ' + call.name);
      const approve = el('button', 'approve', 'Approve');
      const deny = el('button', 'deny', 'Deny');
      approve.type = deny.type = 'button';
      approve.onclick = () => decide(item, call, 'allow', reason.value);
      deny.onclick = () => decide(item, call, 'deny', reason.value);
      const buttons = el('div', 'approval-buttons');
      buttons.append(reason, approve, deny);
      row.appendChild(buttons);
    }
    card.appendChild(row);
  }
  card.dataset.state = item.state;
  return card;
}

// The card's title says where it stands: waiting, or what the person decided.
export function approvalTitle(item, live) {
  const decided = item.calls.map((c) => item.decisions[c.call_id]).filter(Boolean);
  if (decided.length < item.calls.length) {
    return live ? 'Waiting for your approval' : 'Not decided: the conversation went on without it';
  }
  const allowed = decided.filter((d) => d.decision === 'allow').length;
  if (allowed === decided.length) return decided.length === 1 ? 'You approved this call' : 'You approved these calls';
  if (allowed === 0) return decided.length === 1 ? 'You denied this call' : 'You denied these calls';
  return 'You approved ' + allowed + ' and denied ' + (decided.length - allowed) + ' calls';
}

export function decisionText(decided) {
  if (!decided) return 'Not decided';
  const word = decided.decision === 'allow' ? 'Approved' : 'Denied';
  return decided.reason ? word + ', because: ' + decided.reason : word;
}

export function decide(item, call, decision, reason) {
  if (view.conversation.running || !view.ws || view.ws.readyState !== WebSocket.OPEN) {
    toast('warn', 'not connected: decide again once the page is back online');
    return;
  }
  item.decisions[call.call_id] = reason ? { decision, reason } : { decision };
  const fresh = drawApproval(item);
  transcriptEl.replaceChild(fresh, transcriptEl.querySelector('.approval-card[data-state="' + CSS.escape(item.state) + '"]') || fresh);
  nodes.set(item, fresh);
  saveTranscript();
  if (item.calls.some((c) => !item.decisions[c.call_id])) return;
  const decisions = item.calls.map((c) => Object.assign({ call_id: c.call_id }, item.decisions[c.call_id]));
  const frame = view.conversation.resumeChat(decisions);
  view.chat = newChat();
  view.ws.send(JSON.stringify(frame));
  setState('running');
}
