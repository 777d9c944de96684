// ARIA web UI: a single page over the HTTP API of `aria serve` (docs/http-api.md).
// Plain JavaScript, no dependencies, nothing fetched but the API. Model output is untrusted:
// every piece of text reaches the page through textContent, or through esc() before the
// Markdown renderer adds its own fixed tags.
'use strict';

const API = '/api/v1';
const $ = (id) => document.getElementById(id);
const state = {
  convId: null, sessionId: null, running: false, controller: null, turn: null,
  tools: null, memOffset: 0, memQuery: '', searchTimer: 0,
  notes: null, unread: 0, oldestNote: null,
  agentEditing: null,
};

// ==== Small helpers

/** el('div', {class: 'x', testid: 'y', onclick: f}, child, 'text', …) */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k === 'testid') node.dataset.testid = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);
const items = (page) => (Array.isArray(page) ? page : (page && page.items) || []);
const pretty = (v) => {
  if (typeof v === 'string') { try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; } }
  return JSON.stringify(v, null, 2);
};
/**
 * The arguments of a call to approve, as shown: the server's rendering (`shown`, the same text
 * the terminal and Telegram show) when the question carries one; else the JSON with the same
 * hidden characters made visible as ⟨U+XXXX⟩ (bidi controls, zero-width and invisible
 * characters, variation selectors, tag characters, controls other than line feed and tab).
 */
const HIDDEN = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u034F\u061C\u115F\u1160\u180E\u200B-\u200F\u2028-\u202E\u2060-\u2064\u2066-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF9-\uFFFB\u{E0000}-\u{E0FFF}]/gu;
const shownArguments = (a) => (typeof a.shown === 'string' ? a.shown
  : pretty(a.arguments ?? {}).replace(HIDDEN, (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`));
const when = (t) => { const d = t ? new Date(t) : null; return d && !isNaN(d) ? d.toLocaleString() : (t || ''); };
const usd = (n) => (typeof n === 'number' ? '$' + n.toFixed(n !== 0 && Math.abs(n) < 0.01 ? 4 : 2) : String(n));

function cookie(name) {
  for (const part of document.cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return decodeURIComponent(v.join('='));
  }
  return null;
}

// ==== API

class ApiError extends Error {
  constructor(status, code, message, hint) {
    super(message);
    Object.assign(this, { status, code, hint });
  }
}

function headers(method, body) {
  const h = { Accept: 'application/json' };
  if (body !== undefined) h['Content-Type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD') {
    const csrf = cookie('aria_csrf');
    if (csrf) h['X-CSRF-Token'] = csrf;
  }
  return h;
}

async function request(method, path, body, extra) {
  const init = { method, headers: headers(method, body), credentials: 'same-origin', ...extra };
  if (body !== undefined) init.body = JSON.stringify(body);
  let res;
  try {
    res = await fetch(API + path, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'cannot reach the ARIA server: ' + e.message, 'is `aria serve` still running?');
  }
  if (!res.ok) throw await apiError(res);
  return res;
}

async function apiError(res) {
  let body = null;
  try { body = await res.json(); } catch { /* not JSON */ }
  const e = (body && body.error) || {};
  const err = new ApiError(res.status, e.code || 'http_' + res.status,
    e.message || `${res.status} ${res.statusText}`, e.hint || '');
  if (res.status === 401) showLogin();
  return err;
}

async function api(method, path, body) {
  const res = await request(method, path, body);
  if (res.status === 204) return null;
  const type = res.headers.get('Content-Type') || '';
  return type.includes('json') ? res.json() : res.text();
}

/** Shows an API error (message and hint) until dismissed, or for 15 s. */
function showError(err) {
  if (err && err.name === 'AbortError') return;
  console.error(err);
  const text = el('div', { class: 'text' }, el('strong', { text: (err && err.message) || String(err) }));
  if (err && err.hint) text.append(el('span', { class: 'hint', text: err.hint }));
  const toast = el('div', { class: 'toast', testid: 'error', role: 'alert' }, text);
  const close = el('button', { class: 'icon-btn', 'aria-label': 'Dismiss', text: '×', onclick: () => toast.remove() });
  toast.append(close);
  $('toasts').append(toast);
  setTimeout(() => toast.remove(), 15000);
}

/** Runs an async action, showing its error if it fails; resolves to its value or undefined. */
async function attempt(fn) {
  try { return await fn(); } catch (e) { showError(e); return undefined; }
}

function confirmAction(text) {
  const dialog = $('confirm');
  $('confirm-text').textContent = text;
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true });
    dialog.returnValue = 'cancel';
    dialog.showModal();
    dialog.querySelector('[value="ok"]').focus();
  });
}

// ==== Markdown: escape first, then add a fixed set of tags. Links only to http(s), mailto, / and #.

const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const FENCE = /^\s*(`{3,}|~{3,})\s*([\w+#.-]*)/;

function markdown(src) {
  const lines = String(src).replace(/\r\n?/g, '\n').split('\n');
  let out = '';
  let para = [];
  const flush = () => { if (para.length) out += '<p>' + inline(para.join('\n')) + '</p>'; para = []; };
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    let m;
    if ((m = line.match(FENCE))) {
      flush();
      const code = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(m[1]); i++) code.push(lines[i]);
      i++;
      const lang = m[2].toLowerCase();
      out += `<pre class="code"><code${lang ? ` data-lang="${esc(lang)}"` : ''}>${highlight(code.join('\n'), lang)}</code></pre>`;
    } else if ((m = line.match(/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/))) {
      flush();
      out += `<h${m[1].length}>${inline(m[2])}</h${m[1].length}>`;
      i++;
    } else if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush(); out += '<hr>'; i++;
    } else if (/^\s{0,3}>/.test(line)) {
      flush();
      const quote = [];
      while (i < lines.length && /^\s{0,3}>/.test(lines[i])) quote.push(lines[i++].replace(/^\s{0,3}> ?/, ''));
      out += '<blockquote>' + markdown(quote.join('\n')) + '</blockquote>';
    } else if (LIST_ITEM.test(line)) {
      flush();
      const r = list(lines, i);
      out += r.html; i = r.next;
    } else if (!line.trim()) {
      flush(); i++;
    } else {
      para.push(line); i++;
    }
  }
  flush();
  return out;
}

function list(lines, start) {
  const first = lines[start].match(LIST_ITEM);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const width = indent + first[2].length + 1;
  const entries = [];
  let i = start;
  while (i < lines.length) {
    const line = lines[i];
    const m = line.match(LIST_ITEM);
    const lead = line.match(/^\s*/)[0].length;
    if (m && lead === indent && /\d/.test(m[2]) === ordered) { entries.push([m[3]]); i++; continue; }
    if (m && lead < indent) break;
    if (!line.trim()) {
      const next = lines[i + 1];
      if (next !== undefined && next.trim() && next.match(/^\s*/)[0].length > indent) { entries[entries.length - 1].push(''); i++; continue; }
      if (next !== undefined && LIST_ITEM.test(next) && next.match(/^\s*/)[0].length === indent) { i++; continue; }
      break;
    }
    if (lead > indent) { entries[entries.length - 1].push(line.slice(Math.min(lead, width))); i++; continue; }
    if (m || FENCE.test(line) || /^\s{0,3}(#{1,6}\s|>)/.test(line)) break;
    entries[entries.length - 1].push(line); i++; // a lazy continuation line
  }
  const tag = ordered ? 'ol' : 'ul';
  const startAt = ordered && parseInt(first[2], 10) !== 1 ? ` start="${parseInt(first[2], 10)}"` : '';
  const body = entries.map(([head, ...rest]) => {
    const more = rest.join('\n');
    return '<li>' + inline(head) + (more.trim() ? markdown(more) : '') + '</li>';
  }).join('');
  return { html: `<${tag}${startAt}>${body}</${tag}>`, next: i };
}

function inline(text) {
  let out = '';
  let last = 0;
  const code = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g;
  for (let m; (m = code.exec(text));) {
    out += emphasis(text.slice(last, m.index)) + '<code>' + esc(m[2].trim() || m[2]) + '</code>';
    last = m.index + m[0].length;
  }
  return out + emphasis(text.slice(last));
}

function safeUrl(url) {
  return /^(https?:\/\/|mailto:|\/(?!\/)|#)/i.test(url) ? url : null;
}

function emphasis(raw) {
  const held = [];
  const hold = (html) => `\u0000${held.push(html) - 1}\u0000`;
  let s = esc(raw.replace(/\u0000/g, ''));
  s = s.replace(/\[([^\]\n]+)\]\(([^)\s]+)(?:\s+&quot;[^)]*&quot;)?\)/g, (all, label, url) => {
    const href = safeUrl(url.replace(/&amp;/g, '&'));
    return href ? hold(`<a href="${esc(href)}" target="_blank" rel="noopener noreferrer">${label}</a>`) : all;
  });
  s = s.replace(/(^|[\s(])(https?:\/\/(?:[^\s<&]|&amp;)*[^\s<&.,;:!?)])/g, (all, pre, url) =>
    pre + hold(`<a href="${url}" target="_blank" rel="noopener noreferrer">${url}</a>`));
  s = s.replace(/\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__/g, (_, a, b) => `<strong>${a || b}</strong>`);
  s = s.replace(/(^|[^*\w])\*(?=\S)([^*]*?\S)\*(?!\*)|(^|[^_\w])_(?=\S)([^_]*?\S)_(?!\w)/g,
    (_, p1, a, p2, b) => `${p1 || p2 || ''}<em>${a || b}</em>`);
  s = s.replace(/~~(?=\S)([\s\S]*?\S)~~/g, '<del>$1</del>');
  s = s.replace(/\n/g, '<br>');
  return s.replace(/\u0000(\d+)\u0000/g, (_, n) => held[+n]);
}

const KEYWORDS = new Set(('as async await break case catch class const continue def default defer del do elif else enum ' +
  'except export extends false finally fn for from func function go if impl import in interface is lambda let loop ' +
  'match mod mut new nil none null pass pub raise return self static struct super switch this throw trait true try ' +
  'type use var where while with yield None True False and or not echo then fi done esac local').split(' '));
const HASH_COMMENTS = /^(py|python|sh|bash|shell|zsh|console|toml|ya?ml|rb|ruby|r|perl|pl|make|makefile|dockerfile|conf|ini|nix|ps1|powershell)$/;
const DASH_COMMENTS = /^(sql|lua|haskell|hs)$/;

function highlight(code, lang) {
  const comment = HASH_COMMENTS.test(lang) ? '#[^\\n]*' : DASH_COMMENTS.test(lang) ? '--[^\\n]*' : '\\/\\/[^\\n]*|\\/\\*[\\s\\S]*?\\*\\/';
  const token = new RegExp(`(${comment})|("(?:[^"\\\\\\n]|\\\\.)*"|'(?:[^'\\\\\\n]|\\\\.)*'|\`(?:[^\`\\\\]|\\\\.)*\`)|` +
    '(\\b0x[\\da-fA-F_]+\\b|\\b\\d[\\d_]*(?:\\.\\d+)?(?:[eE][+-]?\\d+)?\\w*)|([A-Za-z_]\\w*)', 'g');
  let out = '';
  let last = 0;
  for (let m; (m = token.exec(code));) {
    out += esc(code.slice(last, m.index));
    const cls = m[1] ? 'tok-c' : m[2] ? 'tok-s' : m[3] ? 'tok-n' : KEYWORDS.has(m[4]) ? 'tok-k' : '';
    out += cls ? `<span class="${cls}">${esc(m[0])}</span>` : esc(m[0]);
    last = m.index + m[0].length;
  }
  return out + esc(code.slice(last));
}

// ==== Conversations (sidebar)

async function loadConversations() {
  const q = $('conversation-search').value.trim();
  const seq = (state.convSeq = (state.convSeq || 0) + 1);
  const page = await attempt(() => api('GET', '/conversations?limit=200' + (q ? '&q=' + encodeURIComponent(q) : '')));
  if (!page || seq !== state.convSeq) return; // a later search has been sent since
  const list = $('conversations');
  list.replaceChildren();
  for (const c of items(page)) list.append(conversationRow(c));
  if (!list.children.length) list.append(el('li', { class: 'muted', text: q ? 'No conversation matches.' : 'No conversations yet.' }));
}

function conversationRow(c) {
  const title = c.title || 'Untitled conversation';
  const li = el('li', { testid: 'conversation-row', 'data-id': c.id, class: c.id === state.convId ? 'current' : '' });
  const open = el('button', { class: 'open', title, onclick: () => { location.hash = '#/c/' + c.id; } },
    el('span', { testid: 'conversation-title', text: title }),
    el('small', { text: `${c.message_count ?? 0} message${c.message_count === 1 ? '' : 's'} · ${when(c.updated_at)}` }));
  const rename = el('button', { class: 'icon-btn', testid: 'conversation-rename', 'aria-label': `Rename ${title}`, text: '✎',
    onclick: () => startRename(li, c) });
  const del = el('button', { class: 'icon-btn', testid: 'conversation-delete', 'aria-label': `Delete ${title}`, text: '×',
    onclick: () => deleteConversation(c) });
  li.append(open, rename, del);
  return li;
}

function startRename(li, c) {
  const input = el('input', { type: 'text', value: c.title || '', 'aria-label': 'New title', testid: 'conversation-title-input' });
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const title = input.value.trim();
    if (save && title && title !== c.title) {
      const updated = await attempt(() => api('PATCH', `/conversations/${encodeURIComponent(c.id)}`, { title }));
      if (updated && c.id === state.convId) $('chat-title').textContent = updated.title || title;
    }
    loadConversations();
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); finish(true); }
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); finish(false); }
  });
  input.addEventListener('blur', () => finish(true));
  li.replaceChildren(input);
  input.focus();
  input.select();
}

async function deleteConversation(c) {
  if (!(await confirmAction(`Delete the conversation “${c.title || 'Untitled conversation'}” and its messages?`))) return;
  const ok = await attempt(() => api('DELETE', `/conversations/${encodeURIComponent(c.id)}`).then(() => true));
  if (ok && c.id === state.convId) location.hash = '#/';
  loadConversations();
}

// ==== Chat: history and the live run

function resetChat(title) {
  state.convId = null;
  state.turn = null;
  $('chat-title').textContent = title || 'New conversation';
  $('run-state').textContent = '';
  showChatAgent(null);
  const empty = $('chat-empty');
  $('messages').replaceChildren(empty);
  empty.hidden = false;
}

/** The agent a conversation runs as, beside its title (none for ARIA as configured). */
function showChatAgent(name) {
  const badge = $('chat-agent');
  badge.textContent = name ? 'agent: ' + name : '';
  badge.hidden = !name;
}

function scrollDown(force) {
  const box = $('messages');
  if (force || box.scrollHeight - box.scrollTop - box.clientHeight < 160) box.scrollTop = box.scrollHeight;
}

function addUserMessage(text) {
  $('chat-empty').hidden = true;
  $('messages').append(el('div', { class: 'msg user', testid: 'user-message', text }));
  scrollDown(true);
}

/** An assistant turn: text segments and tool steps in the order they came. */
function newTurn() {
  $('chat-empty').hidden = true;
  const box = el('div', { class: 'msg assistant', testid: 'assistant-message' });
  $('messages').append(box);
  return { box, seg: null, text: '', steps: new Map(), frame: 0, sawText: false };
}

function turnText(turn, delta) {
  if (!turn.seg) {
    turn.seg = el('div', { class: 'md', testid: 'assistant-text' });
    turn.box.append(turn.seg);
    turn.text = '';
  }
  turn.text += delta;
  turn.sawText = true;
  if (!turn.frame) {
    turn.frame = requestAnimationFrame(() => { turn.frame = 0; renderSegment(turn); });
  }
}

function renderSegment(turn) {
  if (turn.seg) turn.seg.innerHTML = markdown(turn.text); // markdown() escapes all text
  scrollDown();
}

function endSegment(turn) {
  if (turn.frame) { cancelAnimationFrame(turn.frame); turn.frame = 0; }
  renderSegment(turn);
  turn.seg = null;
}

/** A tool's tier as the tools list gives it; `by-arguments` when each call's own tier differs. */
const staticTier = (t) => (t.tier_depends_on_arguments ? 'by-arguments' : t.tier);

function toolTier(name, tier) {
  if (tier) return tier;
  const t = state.tools && state.tools.find((x) => x.name === name);
  return t ? staticTier(t) : '';
}

function addStep(turn, call) {
  endSegment(turn);
  const tier = toolTier(call.name, call.tier);
  const outcome = el('span', { class: 'outcome', testid: 'tool-outcome', text: 'running…' });
  const result = el('pre', { class: 'plain', testid: 'tool-result', text: '…' });
  const step = el('details', { class: 'step', testid: 'tool-step', 'data-call-id': call.id || '', 'data-tool': call.name },
    el('summary', {},
      el('span', { class: 'tool-name', testid: 'tool-name', text: call.name }),
      tier ? el('span', { class: `badge tier-${tier}`, testid: 'tier', text: tier }) : null,
      outcome),
    el('div', { class: 'step-body' },
      el('div', { class: 'label', text: 'Arguments' }),
      el('pre', { class: 'plain', testid: 'tool-arguments', text: pretty(call.arguments ?? {}) }),
      el('div', { class: 'label', text: 'Result' }), result));
  turn.box.append(step);
  const record = { step, outcome, result, name: call.name };
  turn.steps.set(call.id || `#${turn.steps.size}`, record);
  scrollDown();
  return record;
}

function findStep(turn, callId, name) {
  if (callId && turn.steps.has(callId)) return turn.steps.get(callId);
  const open = [...turn.steps.values()].filter((s) => s.name === name && s.outcome.textContent === 'running…');
  return open[0];
}

function setResult(turn, data) {
  // A denied call has no tool_call event: its step starts here, with the tier it was asked at.
  const asked = turn.asked && turn.asked.tool === data.name ? turn.asked.tier : undefined;
  const s = findStep(turn, data.call_id, data.name) || addStep(turn, { id: data.call_id, name: data.name || 'tool', tier: asked });
  const outcome = data.outcome || 'done';
  s.outcome.textContent = outcome;
  s.outcome.className = 'outcome ' + (/^(ok|success|done|completed)$/i.test(outcome) ? 'ok' : outcome === 'answered' ? '' : 'bad');
  s.step.dataset.outcome = outcome;
  let text = data.summary ?? data.content ?? '';
  if (data.reason && data.reason !== text) text += (text ? '\n' : '') + data.reason;
  if (data.hint) text += '\n' + data.hint;
  s.result.textContent = text || '(no output)';
}

function notice(turn, kind, message, hint) {
  const n = el('div', { class: `notice ${kind}`, testid: kind === 'error' ? 'run-error' : 'run-warning' },
    el('span', { text: message }), hint ? el('span', { class: 'hint', text: hint }) : null);
  endSegment(turn);
  turn.box.append(n);
  scrollDown();
}

/** The governed workflow's checks after an edit, and the files it put back when one failed. */
function workflowNotice(turn, w) {
  if (w.event === 'restored') {
    const files = (w.files || []).join(', ') || 'the files';
    notice(turn, 'warning', `${w.check || 'A check'} failed after the edit: ${files} put back as before.`,
      w.snapshot ? `Restore point ${String(w.snapshot).slice(0, 12)}` : '');
  } else if (Array.isArray(w.checks) && w.checks.length) {
    notice(turn, 'info', 'Checks after the edit: ' + w.checks.map((c) => `${c.check}: ${c.note || c.judgement || c.after}`).join('; '));
  }
}

function addApproval(turn, a) {
  endSegment(turn);
  turn.asked = { tool: a.tool, tier: a.tier };
  const { card, focus } = approvalCard(a);
  turn.box.append(card);
  scrollDown(true);
  focus();
}

/** The card of one approval question: what asks, its arguments, Approve / Deny and a countdown. */
function approvalCard(a) {
  const decision = el('div', { class: 'decision', testid: 'approval-decision', 'aria-live': 'polite' });
  const expires = el('span', { class: 'why', testid: 'approval-expires' });
  const buttons = [
    ['approve', 'Approve', 'approve', 'btn primary'],
    ['approve_session', 'Approve for session', 'approve-session', 'btn'],
    ['deny', 'Deny', 'deny', 'btn danger'],
  ].map(([value, label, testid, cls]) => el('button', { type: 'button', class: cls, testid, text: label, onclick: () => answer(value) }));
  const card = el('div', { class: 'approval', testid: 'approval', 'data-approval-id': a.id, role: 'group', 'aria-label': `Approve ${a.tool}?` },
    el('div', { class: 'title' }, 'Approval needed: ', el('span', { class: 'tool-name', text: a.tool }),
      a.tier ? el('span', { class: `badge tier-${a.tier}`, text: a.tier }) : null),
    a.reason ? el('div', { class: 'why', testid: 'approval-reason', text: a.reason }) : null,
    el('pre', { class: 'plain approval-arguments', testid: 'approval-arguments', text: shownArguments(a) }),
    el('div', { class: 'actions row' }, ...buttons, expires),
    decision);
  const deadline = a.expires_at ? new Date(a.expires_at).getTime() : NaN;
  const timer = isNaN(deadline) ? 0 : setInterval(() => {
    let left = Math.round((deadline - Date.now()) / 1000);
    if (card.dataset.decision) left = 0;
    if (left > 0) { expires.textContent = `answer within ${left} s`; return; }
    clearInterval(timer);
    if (!decision.textContent) { decision.textContent = 'Expired: the call was denied.'; buttons.forEach((b) => { b.disabled = true; }); }
    expires.textContent = '';
  }, 1000);
  async function answer(value) {
    buttons.forEach((b) => { b.disabled = true; });
    const ok = await attempt(() => api('POST', `/approvals/${encodeURIComponent(a.id)}`, { decision: value }).then(() => true));
    if (!ok) { buttons.forEach((b) => { b.disabled = false; }); return; }
    clearInterval(timer);
    expires.textContent = '';
    card.dataset.decision = value;
    decision.textContent = { approve: 'Approved once.', approve_session: 'Approved for this session.', deny: 'Denied.' }[value];
  }
  return { card, focus: () => buttons[0].focus({ preventScroll: true }) };
}

/** Questions that no conversation asked (MCP clients of /mcp): shown on the Notifications page. */
async function loadPendingApprovals() {
  const page = await attempt(() => api('GET', '/approvals'));
  if (!page) return;
  const box = $('pending-approvals');
  const waiting = items(page).filter((a) => a.channel === 'mcp');
  for (const a of waiting) {
    if ([...box.querySelectorAll('[data-testid="approval"]')].some((c) => c.dataset.approvalId === a.id)) continue;
    box.append(approvalCard(a).card);
  }
  box.hidden = !box.children.length;
}

/** An approval answered (here, on another page or channel, or by its timeout). */
function settleApproval(r) {
  const card = [...document.querySelectorAll('[data-testid="approval"]')].find((c) => c.dataset.approvalId === r.id);
  if (!card || card.dataset.decision) return;
  card.dataset.decision = r.status || 'answered';
  card.querySelectorAll('button').forEach((b) => { b.disabled = true; });
  card.querySelector('[data-testid="approval-expires"]').textContent = '';
  card.querySelector('[data-testid="approval-decision"]').textContent =
    { approved: 'Approved.', approved_session: 'Approved for this session.', denied: 'Denied.', expired: 'Expired: the call was denied.' }[r.status] || `Answered: ${r.status}.`;
}

function finishTurn(turn, done) {
  endSegment(turn);
  if (!turn.sawText && done.answer) { turnText(turn, done.answer); endSegment(turn); }
  const bits = [];
  if (done.state && done.state !== 'done') bits.push(done.state);
  const u = done.usage;
  if (u && (u.input_tokens || u.output_tokens)) bits.push(`${u.input_tokens ?? 0} in / ${u.output_tokens ?? 0} out tokens`);
  if (typeof done.cost_usd === 'number' && done.cost_usd > 0) bits.push(usd(done.cost_usd));
  if (bits.length) turn.box.append(el('div', { class: 'foot', testid: 'turn-footer', text: bits.join(' · ') }));
  turn.box.dataset.state = done.state || '';
}

/** Applies one server-sent event to the turn on screen. */
function handleEvent(turn, name, data) {
  switch (name) {
    case 'state':
      if (data.session_id) state.sessionId = data.session_id;
      if (data.conversation_id && data.conversation_id !== state.convId) {
        state.convId = data.conversation_id;
        history.replaceState(null, '', '#/c/' + data.conversation_id);
      }
      $('run-state').textContent = String(data.state || '').replace(/_/g, ' ');
      break;
    case 'text': turnText(turn, data.delta || ''); break;
    case 'tool_call': addStep(turn, { id: data.call_id, name: data.name, arguments: data.arguments, tier: data.tier }); break;
    case 'tool_result': setResult(turn, data); break;
    case 'approval': addApproval(turn, data); break;
    case 'approval_result': settleApproval(data); break;
    case 'warning': notice(turn, 'warning', data.message || 'warning'); break;
    case 'error': notice(turn, 'error', data.message || data.code || 'error', data.hint); break;
    case 'usage': break; // summed up in `done`
    case 'workflow': workflowNotice(turn, data); break;
    case 'done':
      finishTurn(turn, data);
      $('run-state').textContent = String(data.state || 'done').replace(/_/g, ' ');
      break;
    default:
      if (data && data.message) notice(turn, 'warning', data.message);
  }
}

/** Reads an SSE body (`event:`/`data:` lines, blank line between events) into handleEvent. */
async function readEvents(res, turn) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let sawDone = false;
  let sawError = false;
  const dispatch = (block) => {
    let name = 'message';
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') name = value;
      else if (field === 'data') data.push(value);
    }
    if (!data.length) return;
    let payload;
    try { payload = JSON.parse(data.join('\n')); } catch { payload = { message: data.join('\n') }; }
    if (name === 'done') sawDone = true;
    if (name === 'error') sawError = true;
    handleEvent(turn, name, payload);
  };
  while (!sawDone) {
    const { value, done } = await reader.read();
    if (done) { if (buffer.trim()) dispatch(buffer); break; }
    buffer += value;
    let cut;
    while (!sawDone && (cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const sep = buffer.slice(cut).match(/^\r?\n\r?\n/)[0];
      dispatch(buffer.slice(0, cut));
      buffer = buffer.slice(cut + sep.length);
    }
  }
  if (sawDone) reader.cancel().catch(() => {});
  return sawDone || sawError; // the server ends the stream after `done` or `error`
}

function setRunning(on) {
  state.running = on;
  $('send').disabled = on;
  $('stop').hidden = !on;
  $('stop').disabled = false;
  if (!on) { state.controller = null; state.sessionId = null; }
}

/** Runs one streamed request (a message, or following a run) into a new assistant turn. */
async function streamRun(path, body) {
  const turn = newTurn();
  const controller = new AbortController();
  state.turn = turn;
  state.controller = controller;
  setRunning(true);
  try {
    const res = await request(body ? 'POST' : 'GET', path, body, { signal: controller.signal });
    if ((res.headers.get('Content-Type') || '').includes('text/event-stream')) {
      const finished = await readEvents(res, turn);
      if (!finished) notice(turn, 'error', 'The event stream ended before the run did.', 'Reload the conversation to see where it stands.');
    } else {
      const done = await res.json();
      handleEvent(turn, 'done', done);
    }
  } catch (e) {
    if (e.name === 'AbortError') notice(turn, 'warning', 'Stopped following the run.');
    else notice(turn, 'error', e.message, e.hint);
  } finally {
    endSegment(turn);
    if (state.controller === controller) setRunning(false);
    loadConversations();
  }
}

async function sendMessage() {
  const input = $('message-input');
  const content = input.value;
  if (!content.trim() || state.running) return;
  if (!state.convId) {
    const c = await attempt(() => api('POST', '/conversations', { title: content.trim().split('\n')[0].slice(0, 60) }));
    if (!c) return;
    state.convId = c.id;
    history.replaceState(null, '', '#/c/' + c.id);
    $('chat-title').textContent = c.title || 'New conversation';
  }
  input.value = '';
  autosize();
  addUserMessage(content);
  await streamRun(`/conversations/${encodeURIComponent(state.convId)}/messages`, { content, stream: true });
}

async function stopRun() {
  if (!state.running) return;
  $('stop').disabled = true;
  const controller = state.controller;
  if (!state.sessionId) { controller && controller.abort(); return; }
  $('run-state').textContent = 'cancelling…';
  try {
    await api('POST', `/runs/${encodeURIComponent(state.sessionId)}/cancel`);
    // The stream ends with `done` (state cancelled); stop listening if it does not come soon.
    setTimeout(() => { if (state.controller === controller && controller) controller.abort(); }, 10000);
  } catch (e) {
    if (e.status !== 409) showError(e);
    if (controller) controller.abort();
  }
}

/** Stops following the run on screen (the run itself goes on; reopening its conversation follows it again). */
function detach() {
  if (state.running && state.controller) state.controller.abort();
}

async function openConversation(id) {
  if (state.running && id === state.convId) return;
  detach();
  resetChat('Loading…');
  state.convId = id;
  markCurrent();
  const c = await attempt(() => api('GET', `/conversations/${encodeURIComponent(id)}`));
  if (!c || state.convId !== id) { if (!c) resetChat(); return; }
  await state.toolsReady; // for the tier badges of past calls
  if (state.convId !== id) return;
  $('chat-title').textContent = c.title || (c.agent ? `New conversation with ${c.agent}` : 'Untitled conversation');
  showChatAgent(c.agent);
  renderHistory(c.messages || []);
  const live = (c.sessions || []).find((s) => s.running);
  if (live && !state.running) {
    state.sessionId = live.id;
    streamRun(`/runs/${encodeURIComponent(live.id)}/events`);
  }
}

function renderHistory(messages) {
  let turn = null;
  for (const m of messages) {
    if (m.role === 'user') { turn = null; addUserMessage(m.content || ''); continue; }
    if (m.role !== 'assistant' && m.role !== 'tool') continue;
    if (!turn) turn = newTurn();
    if (m.role === 'assistant') {
      if (m.content) { turnText(turn, m.content); endSegment(turn); }
      for (const call of m.tool_calls || []) addStep(turn, call);
    } else {
      // The stored result does not say how the call ended, only what the model was told.
      setResult(turn, { call_id: m.tool_call_id, name: '', outcome: /^refused\b/.test(m.content || '') ? 'refused' : 'answered', summary: m.content });
    }
  }
  if (turn) endSegment(turn);
  scrollDown(true);
}

function markCurrent() {
  for (const li of $('conversations').children) li.classList.toggle('current', li.dataset.id === state.convId);
}

function autosize() {
  const t = $('message-input');
  t.style.height = 'auto';
  t.style.height = Math.min(t.scrollHeight + 2, window.innerHeight * 0.4) + 'px';
}

// ==== Pages: memories, snapshots, cost, tools

const KINDS = ['fact', 'preference', 'event', 'skill', 'document'];

async function loadMemories(more) {
  const q = $('memory-search').value.trim();
  if (!more) { state.memOffset = 0; state.memQuery = q; }
  const list = $('memory-list');
  let rows;
  let total = 0;
  if (state.memQuery) {
    const page = await attempt(() => api('GET', `/memories/search?limit=50&q=${encodeURIComponent(state.memQuery)}`));
    if (!page) return;
    rows = items(page).map((h) => ({ ...(h.memory || h), score: h.score }));
  } else {
    const page = await attempt(() => api('GET', `/memories?limit=50&offset=${state.memOffset}`));
    if (!page) return;
    rows = items(page);
    total = page.total || 0;
    state.memOffset += rows.length;
  }
  if (!more) list.replaceChildren();
  for (const m of rows) list.append(memoryRow(m));
  if (!list.children.length) list.append(el('li', { class: 'muted', text: state.memQuery ? 'No memory matches.' : 'ARIA remembers nothing yet.' }));
  $('memory-more').hidden = !!state.memQuery || state.memOffset >= total;
}

function memoryRow(m) {
  const li = el('li', { testid: 'memory-row', 'data-id': m.id });
  const meta = [m.unconfirmed ? 'unconfirmed: written after reading outside text, not recalled until you confirm it' : '',
    m.kind, m.private ? 'private' : '', m.status && m.status !== 'active' ? m.status : '',
    m.updated_at ? 'updated ' + when(m.updated_at) : '', typeof m.score === 'number' ? 'score ' + m.score.toFixed(3) : '']
    .filter(Boolean).join(' · ');
  const show = () => li.replaceChildren(
    el('div', { class: 'content', testid: 'memory-content', text: m.content }),
    el('div', { class: 'meta', text: meta }),
    el('div', { class: 'actions' },
      ...(m.unconfirmed ? [el('button', { type: 'button', class: 'btn small primary', testid: 'memory-confirm', text: 'Confirm', onclick: confirmIt })] : []),
      el('button', { type: 'button', class: 'btn small', testid: 'memory-edit', text: 'Edit', onclick: edit }),
      el('button', { type: 'button', class: 'btn small danger', testid: 'memory-forget', text: 'Forget', onclick: forget })));
  function edit() {
    const text = el('textarea', { testid: 'memory-editor', 'aria-label': 'Memory text' });
    text.value = m.content;
    const kind = el('select', { 'aria-label': 'Kind', testid: 'memory-kind' },
      ...KINDS.map((k) => el('option', { value: k, text: k, selected: k === m.kind })));
    const priv = el('input', { type: 'checkbox', testid: 'memory-private', checked: !!m.private });
    const save = async () => {
      const body = {};
      if (text.value !== m.content) body.content = text.value;
      if (kind.value !== m.kind && m.kind) body.kind = kind.value;
      if (priv.checked !== !!m.private) body.private = priv.checked;
      if (Object.keys(body).length) {
        const updated = await attempt(() => api('PATCH', `/memories/${encodeURIComponent(m.id)}`, body));
        if (!updated) return;
        Object.assign(m, typeof updated === 'object' ? updated : body);
      }
      show();
    };
    text.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(); }
      if (e.key === 'Escape') { e.preventDefault(); show(); }
    });
    li.replaceChildren(text, el('div', { class: 'actions' },
      kind, el('label', { class: 'check' }, priv, ' private'),
      el('button', { type: 'button', class: 'btn small primary', testid: 'memory-save', text: 'Save', onclick: save }),
      el('button', { type: 'button', class: 'btn small', testid: 'memory-cancel', text: 'Cancel', onclick: show })));
    text.focus();
  }
  async function confirmIt() {
    const updated = await attempt(() => api('POST', `/memories/${encodeURIComponent(m.id)}/confirm`, {}));
    if (!updated) return;
    Object.assign(m, updated);
    show();
  }
  async function forget() {
    if (!(await confirmAction('Forget this memory? ARIA will no longer recall it.'))) return;
    const ok = await attempt(() => api('DELETE', `/memories/${encodeURIComponent(m.id)}`).then(() => true));
    if (ok) li.remove();
  }
  show();
  return li;
}

async function addMemory() {
  const input = $('memory-new');
  const content = input.value.trim();
  if (!content) return;
  const body = { content };
  if ($('memory-new-private').checked) body.private = true;
  const m = await attempt(() => api('POST', '/memories', body));
  if (!m) return;
  input.value = '';
  $('memory-search').value = '';
  loadMemories();
}

async function loadSnapshots() {
  const page = await attempt(() => api('GET', '/snapshots'));
  if (!page) return;
  const list = $('snapshot-list');
  list.replaceChildren();
  for (const s of items(page)) list.append(snapshotRow(s));
  if (!list.children.length) list.append(el('li', { class: 'muted', text: 'No restore points yet: ARIA takes one before every write it makes.' }));
}

function snapshotRow(s) {
  const files = (s.targets && s.targets.length ? s.targets : s.files_changed) || [];
  const result = el('div', { class: 'result', testid: 'rollback-result', 'aria-live': 'polite' });
  const button = el('button', { type: 'button', class: 'btn small danger', testid: 'rollback', text: 'Roll back', onclick: rollback });
  const li = el('li', { testid: 'snapshot-row', 'data-id': s.id },
    el('div', {}, el('strong', { text: s.operation || 'snapshot' }), ' ', el('code', { text: String(s.id).replace(/^snapshot\//, '') })),
    el('div', { class: 'meta', text: [when(s.time || s.created_at), s.session ? 'session ' + String(s.session).slice(0, 8) : '', s.repository].filter(Boolean).join(' · ') }),
    files.length ? el('div', { class: 'meta', text: 'files: ' + files.join(', ') }) : null,
    el('div', { class: 'actions' }, button), result);
  async function rollback() {
    const what = files.length ? files.join(', ') : 'the files';
    if (!(await confirmAction(`Put ${what} back as they were before this ${s.operation || 'write'}?`))) return;
    button.disabled = true;
    const body = s.repository ? { repository: s.repository } : {};
    const r = await attempt(() => api('POST', `/snapshots/${encodeURIComponent(s.id)}/rollback`, body));
    button.disabled = false;
    if (!r) return;
    const put = Array.isArray(r.files) ? r.files : null;
    result.className = 'result ok';
    result.textContent = put && !put.length ? 'Nothing to put back: the files already match this restore point.'
      : 'Rolled back' + (put ? ': ' + put.join(', ') : '.') + (r.commit ? ` (recorded as ${String(r.commit).slice(0, 10)})` : '');
    li.dataset.rolledBack = 'true';
  }
  return li;
}

async function loadCost() {
  const cost = await attempt(() => api('GET', '/cost'));
  if (cost === undefined) return;
  $('cost').replaceChildren(renderValue(cost, ''));
}

const money = (key) => /usd|cost|spend|cap|limit|price/i.test(key);
const label = (key) => key.replace(/_/g, ' ').replace(/\busd\b/i, '(USD)');
function fmt(key, v) {
  if (typeof v === 'number') return money(key) ? usd(v) : v.toLocaleString();
  if (v === null || v === undefined) return '—';
  if (typeof v === 'object') return JSON.stringify(v);
  return /^\d{4}-\d\d-\d\dT\d\d:/.test(v) ? when(v) : String(v);
}

/** Renders any JSON answer readably: numbers as figures, objects as sections, lists as tables. */
function renderValue(v, key) {
  if (Array.isArray(v)) {
    if (!v.length) return el('p', { class: 'muted', text: 'none' });
    if (v.every((x) => x && typeof x === 'object' && !Array.isArray(x))) {
      const cols = [...new Set(v.flatMap(Object.keys))];
      return el('div', { class: 'table-wrap' }, el('table', {},
        el('thead', {}, el('tr', {}, ...cols.map((c) => el('th', { text: label(c) })))),
        el('tbody', {}, ...v.map((row) => el('tr', {}, ...cols.map((c) => el('td', { text: fmt(c, row[c]) })))))));
    }
    return el('p', { text: v.map((x) => fmt(key, x)).join(', ') });
  }
  if (v && typeof v === 'object') {
    const box = el('div', {});
    const stats = el('div', { class: 'stats' });
    for (const [k, x] of Object.entries(v)) {
      if (x === null || typeof x !== 'object') {
        stats.append(el('div', { class: 'stat', testid: 'cost-' + k }, el('div', { class: 'v', text: fmt(k, x) }), el('div', { class: 'k', text: label(k) })));
      }
    }
    if (stats.children.length) box.append(stats);
    for (const [k, x] of Object.entries(v)) {
      if (x !== null && typeof x === 'object') box.append(el('h2', { text: label(k) }), renderValue(x, k));
    }
    return box;
  }
  return el('p', { text: fmt(key, v) });
}

async function loadTools() {
  const page = await attempt(() => api('GET', '/tools'));
  if (!page) return;
  state.tools = items(page);
  const list = $('tool-list');
  list.replaceChildren();
  for (const t of state.tools) {
    list.append(el('li', { testid: 'tool-row', 'data-tool': t.name },
      el('div', {}, el('strong', { class: 'tool-name', text: t.name }), ' ', el('span', { class: `badge tier-${staticTier(t)}`, testid: 'tier', text: staticTier(t),
        title: t.tier_depends_on_arguments ? `each call's own tier (without arguments: ${t.tier})` : null })),
      el('div', { class: 'meta', text: t.description || '' }),
      el('details', {}, el('summary', { text: 'Arguments' }), el('pre', { class: 'plain', text: pretty(t.parameters ?? {}) }))));
  }
}

// ==== Agents (GET/POST/PATCH/DELETE /agents): built-in and aria.toml ones are read-only

/** The form's fields: input id, API field, and how its text becomes a value. */
const AGENT_FIELDS = [
  ['agent-description', 'description', 'text'],
  ['agent-system-prompt', 'system_prompt', 'text'],
  ['agent-models', 'models', 'list'],
  ['agent-tools', 'tools', 'list'],
  ['agent-mode', 'mode', 'text'],
  ['agent-max-cost', 'max_cost_usd', 'number'],
  ['agent-per-day', 'per_day_usd', 'number'],
  ['agent-temperature', 'temperature', 'number'],
  ['agent-memory', 'memory', 'text'],
  ['agent-persona', 'persona', 'text'],
  ['agent-planner', 'planner', 'text'],
];
const AGENT_NOTES = { builtin: 'built in', config: 'defined in aria.toml — edit the file' };

async function loadAgents() {
  const page = await attempt(() => api('GET', '/agents'));
  if (!page) return;
  const list = $('agent-list');
  list.replaceChildren();
  for (const a of items(page)) list.append(agentRow(a));
  if (!list.children.length) list.append(el('li', { class: 'muted', text: 'No agents.' }));
}

function agentRow(a) {
  const store = a.source === 'store';
  const line = (testid, name, value) => el('div', { class: 'meta', testid }, el('span', { class: 'label', text: name }), ' ', value);
  const caps = [a.max_cost_usd != null ? usd(a.max_cost_usd) + ' per task' : '', a.per_day_usd != null ? usd(a.per_day_usd) + ' per day' : '']
    .filter(Boolean).join(' · ');
  const chat = el('button', { type: 'button', class: 'btn small primary', testid: 'agent-chat', text: 'Chat as this agent', onclick: () => chatAs(a.name) });
  const actions = el('div', { class: 'actions' }, chat,
    store ? el('button', { type: 'button', class: 'btn small', testid: 'agent-edit', text: 'Edit', onclick: () => editAgent(a) }) : null,
    store ? el('button', { type: 'button', class: 'btn small danger', testid: 'agent-delete', text: 'Delete', onclick: () => deleteAgent(a) }) : null);
  return el('li', { testid: 'agent-row', 'data-name': a.name, 'data-source': a.source },
    el('div', {}, el('strong', { testid: 'agent-row-name', text: a.name }), ' ',
      el('span', { class: `badge source-${a.source}`, testid: 'agent-source', text: a.source }),
      AGENT_NOTES[a.source] ? el('span', { class: 'muted note', testid: 'agent-note', text: AGENT_NOTES[a.source] }) : null),
    el('div', { class: 'content', testid: 'agent-row-description', text: a.description || '' }),
    line('agent-row-tools', 'tools', a.tools ? (a.tools.length ? a.tools.join(', ') : 'none') : 'all (as configured)'),
    line('agent-row-mode', 'mode', a.mode || 'as configured'),
    line('agent-row-models', 'models', a.models && a.models.length ? a.models.join(', ') : 'the configured model'),
    line('agent-row-memory', 'memory', a.memory || 'shared'),
    line('agent-row-persona', 'persona', a.persona || 'none'),
    line('agent-row-planner', 'planner', (a.planner || 'none') + (a.confirm_completion ? ' · confirms completion' : '')),
    caps ? line('agent-row-caps', 'caps', caps) : null,
    a.temperature != null ? line('agent-row-temperature', 'temperature', String(a.temperature)) : null,
    a.system_prompt ? el('details', {}, el('summary', { text: 'System prompt' }), el('pre', { class: 'plain wrap', testid: 'agent-row-prompt', text: a.system_prompt })) : null,
    actions);
}

/** The form's values as the API's fields; throws for a number that is not one. */
function agentFormValues() {
  const values = {};
  for (const [id, field, kind] of AGENT_FIELDS) {
    const raw = $(id).value.trim();
    if (kind === 'list') values[field] = raw.split(',').map((s) => s.trim()).filter(Boolean);
    else if (kind === 'number' && raw) {
      const n = Number(raw);
      if (!Number.isFinite(n)) throw new ApiError(0, 'bad_input', `${field}: "${raw}" is not a number`, '');
      values[field] = n;
    } else values[field] = raw;
  }
  values.confirm_completion = $('agent-confirm').checked;
  return values;
}

const emptyValue = (v) => v === '' || v === false || (Array.isArray(v) && !v.length);
const sameValue = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** POST: every field that is not empty (memory only when not the default). */
function agentCreateBody(values) {
  const body = { name: $('agent-name').value.trim() };
  for (const [k, v] of Object.entries(values)) {
    if (!emptyValue(v) && !(k === 'memory' && v === 'shared')) body[k] = v;
  }
  return body;
}

/** PATCH: the fields that changed; a cleared one is sent as null. */
function agentPatchBody(values, a) {
  const body = {};
  for (const [k, v] of Object.entries(values)) {
    const was = a[k] ?? (k === 'models' || k === 'tools' ? [] : k === 'confirm_completion' ? false : k === 'memory' ? 'shared' : '');
    if (sameValue(v, was)) continue;
    body[k] = emptyValue(v) ? null : v;
  }
  return body;
}

function agentFormError(err) {
  const box = $('agent-form-error');
  if (!err) { box.hidden = true; box.textContent = ''; return; }
  box.textContent = err.message + (err.hint ? ' — ' + err.hint : '');
  box.hidden = false;
}

async function saveAgent() {
  const editing = state.agentEditing;
  agentFormError(null);
  const button = $('agent-save');
  button.disabled = true;
  try {
    const values = agentFormValues();
    if (editing) {
      const body = agentPatchBody(values, editing);
      if (Object.keys(body).length) await api('PATCH', `/agents/${encodeURIComponent(editing.name)}`, body);
    } else {
      await api('POST', '/agents', agentCreateBody(values));
    }
  } catch (e) {
    if (e.name !== 'AbortError') agentFormError(e);
    return; // the input stays as it was, to be corrected
  } finally {
    button.disabled = false;
  }
  resetAgentForm();
  loadAgents();
}

function resetAgentForm() {
  state.agentEditing = null;
  $('agent-form').reset();
  agentFormError(null);
  $('agent-name').disabled = false;
  $('agent-form-title').textContent = 'New agent';
  $('agent-save').textContent = 'Create agent';
  $('agent-cancel').hidden = true;
}

function editAgent(a) {
  resetAgentForm();
  state.agentEditing = a;
  $('agent-name').value = a.name;
  $('agent-name').disabled = true; // an agent cannot be renamed
  for (const [id, field, kind] of AGENT_FIELDS) {
    const v = a[field];
    $(id).value = v == null ? (field === 'memory' ? 'shared' : '') : kind === 'list' ? v.join(', ') : String(v);
  }
  $('agent-confirm').checked = !!a.confirm_completion;
  $('agent-form-title').textContent = `Edit agent ${a.name}`;
  $('agent-save').textContent = 'Save';
  $('agent-cancel').hidden = false;
  $('agent-form').scrollIntoView({ block: 'start' });
  $('agent-description').focus({ preventScroll: true });
}

async function deleteAgent(a) {
  if (!(await confirmAction(`Delete the agent “${a.name}”? Conversations bound to it will need another agent to go on.`))) return;
  const ok = await attempt(() => api('DELETE', `/agents/${encodeURIComponent(a.name)}`).then(() => true));
  if (!ok) return;
  if (state.agentEditing && state.agentEditing.name === a.name) resetAgentForm();
  loadAgents();
}

/** Starts a conversation bound to the agent and opens it in the chat view. */
async function chatAs(name) {
  const c = await attempt(() => api('POST', '/conversations', { agent: name }));
  if (!c) return;
  location.hash = '#/c/' + encodeURIComponent(c.id);
  loadConversations();
}

// ==== Schedules and notifications

async function loadSchedules() {
  const page = await attempt(() => api('GET', '/schedules'));
  if (!page) return;
  const list = $('schedule-list');
  list.replaceChildren();
  for (const job of items(page)) list.append(scheduleRow(job));
  if (!list.children.length) list.append(el('li', { class: 'muted', text: 'No scheduled jobs yet: make one with `aria schedule add`, /schedule add in Telegram, or POST /api/v1/schedules.' }));
}

function actionText(a) {
  switch (a && a.kind) {
    case 'agent': return 'ask ARIA: ' + a.prompt;
    case 'notify': return 'remind: ' + a.message;
    case 'profile': return `run ${a.profile} in ${a.root}`;
    case 'digest': return 'digest of ' + a.root;
    case 'heartbeat': return 'heartbeat';
    default: return JSON.stringify(a);
  }
}

function scheduleRow(job) {
  const result = el('div', { class: 'result', testid: 'schedule-result', 'aria-live': 'polite' });
  const toggle = el('button', { type: 'button', class: 'btn small', testid: 'schedule-toggle', text: job.enabled ? 'Pause' : 'Resume', onclick: setEnabled });
  const run = el('button', { type: 'button', class: 'btn small', testid: 'schedule-run', text: 'Run now', onclick: runNow });
  const li = el('li', { testid: 'schedule-row', 'data-name': job.name, class: job.enabled ? null : 'off' },
    el('div', {}, el('strong', { text: job.name }), ' ', el('code', { text: job.cron }), ' ', el('span', { class: 'badge', testid: 'schedule-state', text: job.enabled ? 'on' : 'paused' })),
    el('div', { class: 'meta', text: actionText(job.action) }),
    el('div', { class: 'meta', testid: 'schedule-next', text: job.enabled ? `next: ${when(job.next_run) || 'never'} (${job.tz})` : 'paused' }),
    el('div', { class: 'actions' }, toggle, run), result);
  async function setEnabled() {
    toggle.disabled = true;
    const updated = await attempt(() => api('PATCH', `/schedules/${encodeURIComponent(job.name)}`, { enabled: !job.enabled }));
    toggle.disabled = false;
    if (updated) li.replaceWith(scheduleRow(updated));
  }
  async function runNow() {
    run.disabled = true;
    result.className = 'result';
    result.textContent = 'Running…';
    const notice = await attempt(() => api('POST', `/schedules/${encodeURIComponent(job.name)}/run`, {}));
    run.disabled = false;
    if (!notice) { result.textContent = ''; return; }
    result.className = notice.kind === 'completed' || notice.kind === 'heartbeat' ? 'result ok' : 'result';
    result.textContent = notice.text;
  }
  return li;
}

function notificationRow(n, fresh) {
  return el('li', { testid: 'notification-row', 'data-id': n.id, 'data-kind': n.kind, class: fresh ? 'fresh' : null },
    el('div', {}, el('span', { class: 'badge', text: n.kind }), ' ', n.job ? el('strong', { text: n.job }) : null),
    el('div', { class: 'content', testid: 'notification-text', text: n.text }),
    el('div', { class: 'meta', text: [when(n.time), n.pushed && n.pushed.length ? 'sent to ' + n.pushed.join(', ') : ''].filter(Boolean).join(' · ') }));
}

async function loadNotifications(more) {
  const before = more && state.oldestNote ? `&before=${state.oldestNote}` : '';
  const page = await attempt(() => api('GET', '/notifications?limit=50' + before));
  if (!page) return;
  const list = $('notification-list');
  if (!more) list.replaceChildren();
  const got = items(page);
  for (const n of got) list.append(notificationRow(n, false));
  if (got.length) state.oldestNote = got[got.length - 1].id;
  $('notification-more').hidden = got.length < 50;
  if (!list.children.length) list.append(el('li', { class: 'muted', testid: 'notification-empty', text: 'No notifications yet.' }));
  state.notes = true;
  setUnread(0);
  loadPendingApprovals();
}

function setUnread(n) {
  state.unread = n;
  const badge = $('unread');
  badge.textContent = String(n);
  badge.hidden = n === 0;
}

/** Follows GET /notifications/events: new notifications go to the top of the list (and count as
 * unread while another page shows). EventSource reconnects by itself after a drop. */
function followNotifications() {
  if (state.noteEvents || typeof EventSource === 'undefined') return;
  const source = new EventSource(API + '/notifications/events');
  state.noteEvents = source;
  source.addEventListener('notification', (e) => {
    let n;
    try { n = JSON.parse(e.data); } catch { return; }
    const list = $('notification-list');
    if (state.notes) {
      const empty = list.querySelector('[data-testid="notification-empty"]');
      if (empty) empty.remove();
      if (!list.querySelector(`[data-testid="notification-row"][data-id="${Number(n.id)}"]`)) list.prepend(notificationRow(n, true));
    }
    if ($('view-notifications').hidden) setUnread(state.unread + 1);
    else if (n.kind === 'approval') loadPendingApprovals();
  });
}

// ==== Routing, theme, auth, start-up

function showView(name) {
  for (const v of document.querySelectorAll('.view')) v.hidden = v.dataset.view !== name;
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.classList.toggle('active', a.dataset.nav === name);
    if (a.dataset.nav === name) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  closeSidebar();
}

function route() {
  const hash = location.hash.replace(/^#\/?/, '');
  const [page, id] = hash.split('/');
  if (page === 'memories') { showView('memories'); loadMemories(); }
  else if (page === 'snapshots') { showView('snapshots'); loadSnapshots(); }
  else if (page === 'cost') { showView('cost'); loadCost(); }
  else if (page === 'tools') { showView('tools'); loadTools(); }
  else if (page === 'schedules') { showView('schedules'); loadSchedules(); }
  else if (page === 'agents') { showView('agents'); loadAgents(); }
  else if (page === 'notifications') { showView('notifications'); loadNotifications(); }
  else {
    showView('chat');
    if (page === 'c' && id) { if (id !== state.convId || !$('messages').querySelector('.msg')) openConversation(decodeURIComponent(id)); }
    else { detach(); resetChat(); markCurrent(); }
    $('message-input').focus({ preventScroll: true });
  }
}

function openSidebar() {
  $('sidebar').classList.add('open');
  $('backdrop').hidden = false;
  $('menu').setAttribute('aria-expanded', 'true');
  $('new-conversation').focus();
}
function closeSidebar() {
  $('sidebar').classList.remove('open');
  $('backdrop').hidden = true;
  $('menu').setAttribute('aria-expanded', 'false');
}

function applyTheme(theme) {
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}
function currentTheme() {
  return document.documentElement.dataset.theme ||
    (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
}
function toggleTheme() {
  const next = currentTheme() === 'dark' ? 'light' : 'dark';
  try { localStorage.setItem('aria-theme', next); } catch { /* private mode */ }
  applyTheme(next);
  $('theme').setAttribute('aria-label', `Switch to ${next === 'dark' ? 'light' : 'dark'} theme`);
}

function showLogin() {
  $('app').hidden = true;
  $('login').hidden = false;
  $('login-token').focus();
}

async function login(e) {
  e.preventDefault();
  const error = $('login-error');
  error.hidden = true;
  try {
    await api('POST', '/login', { token: $('login-token').value });
  } catch (err) {
    error.textContent = err.message + (err.hint ? ' — ' + err.hint : '');
    error.hidden = false;
    $('login').hidden = false; // apiError() on 401 already shows the form; keep it
    return;
  }
  $('login-token').value = '';
  $('login').hidden = true;
  startApp();
}

let started = false;
function startApp() {
  $('app').hidden = false;
  if (!started) {
    started = true;
    window.addEventListener('hashchange', route);
  }
  loadConversations();
  followNotifications();
  state.toolsReady = api('GET', '/tools').then((t) => { state.tools = items(t); }).catch(() => {});
  route();
}

function bind() {
  $('composer').addEventListener('submit', (e) => { e.preventDefault(); sendMessage(); });
  const input = $('message-input');
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); sendMessage(); }
  });
  input.addEventListener('input', autosize);
  $('stop').addEventListener('click', stopRun);
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || e.defaultPrevented || document.querySelector('dialog[open]')) return;
    if ($('sidebar').classList.contains('open')) { closeSidebar(); $('menu').focus(); return; }
    if (state.running) { e.preventDefault(); stopRun(); }
  });
  $('new-conversation').addEventListener('click', () => {
    if (location.hash === '#/' || location.hash === '') route(); else location.hash = '#/';
  });
  $('conversation-search').addEventListener('input', () => {
    clearTimeout(state.searchTimer);
    state.searchTimer = setTimeout(loadConversations, 250);
  });
  $('memory-search-form').addEventListener('submit', (e) => { e.preventDefault(); loadMemories(); });
  $('memory-add-form').addEventListener('submit', (e) => { e.preventDefault(); addMemory(); });
  $('memory-more').addEventListener('click', () => loadMemories(true));
  $('notification-more').addEventListener('click', () => loadNotifications(true));
  $('agent-form').addEventListener('submit', (e) => { e.preventDefault(); saveAgent(); });
  $('agent-cancel').addEventListener('click', resetAgentForm);
  $('menu').addEventListener('click', () => ($('sidebar').classList.contains('open') ? closeSidebar() : openSidebar()));
  $('backdrop').addEventListener('click', closeSidebar);
  $('theme').addEventListener('click', toggleTheme);
  $('login-form').addEventListener('submit', login);
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => applyTheme(localStorage.getItem('aria-theme')));
}

async function boot() {
  let saved = null;
  try { saved = localStorage.getItem('aria-theme'); } catch { /* private mode */ }
  applyTheme(saved);
  bind();
  let auth = { required: false, authenticated: true };
  try {
    auth = await api('GET', '/auth');
  } catch (e) {
    if (e.status === 401) return; // apiError() showed the login form
    showError(e);
  }
  if (auth.required && !auth.authenticated) showLogin();
  else startApp();
}

boot();
