// Small DOM helpers of the page.

export const $ = (id) => document.getElementById(id);

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

export function toast(level, message) {
  const node = el('div', 'toast ' + level, message);
  $('toasts').appendChild(node);
  setTimeout(() => node.remove(), 6000);
}
