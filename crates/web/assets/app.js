// The board in a browser. One snapshot on load, then boardd's events over
// server-sent events; each event re-reads only what it names (a task, the team,
// the open requests). No framework: the DOM is built with `h` and text is only
// ever set as text, never as HTML.
'use strict';

// ---------------------------------------------------------------- actions
// Every action is one boardd op (the server allows the ops in
// crates/web/src/ops.rs). `on` says where its form appears; `when` whether it
// applies; `inputs` are its fields; `args` builds the op's arguments.
// A new action is one entry here.
const ACTIONS = [
  { key: 'add', on: 'board', op: 'add_task', label: 'Add task',
    inputs: [
      { name: 'subject', label: 'Subject' },
      { name: 'description', label: 'Description', area: true },
      { name: 'blocked_by', label: 'Blocked by (task ids, comma separated)' },
      { name: 'priority', label: 'Priority', number: true },
      { name: 'role', label: 'Role' },
      { name: 'require_plan', label: 'Needs an approved plan', check: true },
    ],
    args: (_, v) => ({
      subject: v.subject, description: v.description,
      blocked_by: ids(v.blocked_by), priority: num(v.priority) ?? 0,
      role: v.role || null, require_plan: v.require_plan,
    }) },
  { key: 'edit', on: 'task', op: 'edit_task', label: 'Save changes',
    when: t => t.status === 'pending',
    inputs: [
      { name: 'subject', label: 'Subject', value: t => t.subject },
      { name: 'description', label: 'Description', area: true, value: t => t.description },
      { name: 'priority', label: 'Priority', number: true, value: t => String(t.priority) },
      { name: 'role', label: 'Role', value: t => t.role || '' },
    ],
    args: (t, v) => ({
      id: t.id, subject: v.subject, description: v.description,
      priority: num(v.priority), role: v.role,
    }) },
  { key: 'cancel', on: 'task', op: 'cancel_task', label: 'Cancel task',
    when: t => t.status === 'pending' || t.status === 'in_progress',
    args: t => ({ id: t.id }) },
  // A landing that waits (`blocked`, `conflict`) is looked at again by a retry.
  { key: 'retry', on: 'task', op: 'retry_task', label: 'Retry',
    when: t => t.status === 'failed' || t.status === 'cancelled' || landingWaits(t),
    args: t => ({ id: t.id }) },
  // Answered once the work landed (or why it could not).
  { key: 'merge', on: 'task', op: 'merge_task', label: 'Merge',
    when: inReview, args: t => ({ id: t.id }) },
  { key: 'send-back', on: 'task', op: 'send_back', label: 'Send back',
    when: inReview,
    inputs: [{ name: 'feedback', label: 'Feedback for the teammate (required)', area: true }],
    args: (t, v) => ({ id: t.id, feedback: v.feedback }) },
  { key: 'approve', on: 'plan', op: 'review_plan', label: 'Approve',
    args: r => ({ request: r.id, approve: true }) },
  { key: 'reject', on: 'plan', op: 'review_plan', label: 'Reject',
    inputs: [{ name: 'feedback', label: 'Feedback for the teammate', area: true }],
    args: (r, v) => ({ request: r.id, approve: false, feedback: v.feedback || null }) },
  { key: 'withdraw', on: 'shutdown', op: 'cancel_request', label: 'Withdraw',
    args: r => ({ request: r.id }) },
  { key: 'message', on: 'member', op: 'send', label: 'Send message',
    inputs: [{ name: 'content', label: 'Message', area: true }],
    args: (m, v) => ({ to: m.name, kind: 'message', content: v.content }) },
  { key: 'shutdown', on: 'member', op: 'request_shutdown', label: 'Ask to shut down',
    inputs: [{ name: 'reason', label: 'Why (optional)' }],
    args: (m, v) => ({ to: m.name, reason: v.reason || null }) },
];

function stageOf(t) {
  return t && t.landing ? t.landing.stage : null;
}
function inReview(t) {
  return stageOf(t) === 'review';
}
function landingWaits(t) {
  return stageOf(t) === 'blocked' || stageOf(t) === 'conflict';
}

function ids(text) {
  return (text || '').split(/[\s,#]+/).filter(Boolean).map(Number);
}
function num(text) {
  return text === '' || text == null ? null : Number(text);
}

// ---------------------------------------------------------------- state

const state = {
  tasks: new Map(), members: new Map(), requests: new Map(),
  selected: null, // { kind: 'task' | 'member', id }
  detail: null,   // the selected task's get_task answer
};
// Test and benchmark hook: when the page reflected event N (Date.now()).
window.teamboard = { seq: 0, shown: {}, connected: false, closed: 0 };

// ---------------------------------------------------------------- helpers

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  };
  const res = await fetch(path, init);
  let answer = null;
  try { answer = await res.json(); } catch (_) { /* not JSON: said below */ }
  if (!res.ok) {
    const message = answer && answer.error ? answer.error.message : `${res.status} ${res.statusText}`;
    throw new Error(message);
  }
  return answer;
}

function ago(ms) {
  const s = Math.max(0, Math.floor((Date.now() - ms) / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const hr = Math.floor(m / 60);
  return hr < 48 ? `${hr}h ${m % 60}m` : `${Math.floor(hr / 24)}d`;
}
// An age that ticks: `tick()` rewrites every one each second.
function age(prefix, since, suffix) {
  return h('span', { class: 'age', dataset: { since, prefix, suffix: suffix || '' } },
    `${prefix}${ago(since)}${suffix || ''}`);
}
function tick() {
  for (const el of document.querySelectorAll('.age')) {
    el.textContent = `${el.dataset.prefix}${ago(Number(el.dataset.since))}${el.dataset.suffix}`;
  }
  document.getElementById('clock').textContent = new Date().toISOString().slice(11, 19) + ' UTC';
}

// Replaces what `container` shows, keeping what the person was typing in it:
// an event must not wipe a half-written message.
function rerender(container, ...children) {
  const typed = [...container.querySelectorAll('[data-dirty]')]
    .map(el => [el.name, el.type === 'checkbox' ? el.checked : el.value]);
  container.replaceChildren(...children.flat().filter(c => c != null && c !== '' && c !== false)
    .map(c => c instanceof Node ? c : document.createTextNode(String(c))));
  for (const [name, value] of typed) {
    const el = container.querySelector(`[name="${name}"]`);
    if (!el) continue;
    if (el.type === 'checkbox') el.checked = value; else el.value = value;
    el.dataset.dirty = '1';
  }
}

function notice(text, error) {
  const el = document.getElementById('notice');
  el.textContent = text;
  el.className = error ? 'notice error' : 'notice';
  el.hidden = !text;
}

// ---------------------------------------------------------------- action forms

// The forms of the actions `on` a kind of thing, for `subject`. An action no
// longer offered stays while the person is typing into it (`typing`, by key):
// sent anyway, boardd says in words why it is refused, where a vanishing form
// would say nothing.
function actionForms(on, subject, typing) {
  return ACTIONS.filter(a => a.on === on && (!a.when || a.when(subject) || (typing && typing.has(a.key))))
    .map(a => actionForm(a, subject));
}

// The actions in `container` whose fields the person has typed into.
function typingIn(container) {
  return new Set([...container.querySelectorAll('form[data-action]')]
    .filter(f => f.querySelector('[data-dirty]')).map(f => f.dataset.action));
}

function actionForm(action, subject) {
  const refusal = h('div', { class: 'refusal', role: 'alert' });
  const fields = (action.inputs || []).map(input => {
    const value = input.value ? input.value(subject) : '';
    const name = `${action.key}-${input.name}`;
    const control = input.area ? h('textarea', { name }, value)
      : input.check ? h('input', { type: 'checkbox', name })
      : h('input', { type: input.number ? 'number' : 'text', name, value });
    return h('label', {}, input.label, control);
  });
  const form = h('form', { class: `action action-${action.key}`, dataset: { action: action.key } },
    fields, h('button', { type: 'submit', name: action.key }, action.label), refusal);
  form.addEventListener('input', ev => { ev.target.dataset.dirty = '1'; });
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    const values = {};
    for (const input of action.inputs || []) {
      const el = form.elements[`${action.key}-${input.name}`];
      values[input.name] = input.check ? el.checked : el.value;
    }
    refusal.textContent = '';
    try {
      await api('/api/op', { op: action.op, args: action.args(subject, values) });
      form.querySelectorAll('[data-dirty]').forEach(el => delete el.dataset.dirty);
      if (!(action.inputs || []).some(i => i.value)) form.reset();
      notice(`${action.label}: done`);
    } catch (e) {
      refusal.textContent = e.message;
    }
  });
  return form;
}

// ---------------------------------------------------------------- the board

const ENDED = new Set(['completed', 'failed', 'cancelled']);

function card(t) {
  const open = (t.blocked_by || []).filter(b => (state.tasks.get(b) || {}).status !== 'completed');
  const tags = [];
  if (t.status === 'pending') {
    if (open.length) tags.push(h('span', { class: 'tag blocked' }, `blocked by ${open.map(b => '#' + b).join(', ')}`));
    else if (t.ready) tags.push(h('span', { class: 'tag ready' }, 'ready'));
  }
  if (inReview(t)) tags.push(h('span', { class: 'tag review' }, `waits for review · ${size(t.landing.diff)}`));
  else if (t.landing) tags.push(h('span', { class: 'tag landing' }, `landing: ${t.landing.stage}`));
  if (t.role) tags.push(h('span', { class: 'tag' }, t.role));
  if (t.require_plan) tags.push(h('span', { class: 'tag' }, 'plan needed'));
  const selected = state.selected && state.selected.kind === 'task' && state.selected.id === t.id;
  return h('li', { class: selected ? 'card selected' : 'card', id: `task-${t.id}`,
    dataset: { id: t.id, status: t.status }, onclick: () => select('task', t.id) },
  h('div', {}, h('b', {}, `#${t.id} `), t.subject),
  h('div', { class: 'meta' }, tags, t.owner ? `${t.owner}` : '',
    t.attempts ? ` · attempt ${t.attempts}` : ''));
}

// Puts the card of task `t` in its column, in id order.
function placeCard(t) {
  const old = document.getElementById(`task-${t.id}`);
  const el = card(t);
  const list = document.querySelector(`.column[data-status="${t.status}"] ol`);
  if (!list) return;
  if (old && old.parentNode === list) { old.replaceWith(el); return; }
  if (old) old.remove();
  let next = null;
  for (const other of list.children) {
    if (Number(other.dataset.id) > t.id) { next = other; break; }
  }
  list.insertBefore(el, next);
}

function setTask(t) {
  const before = state.tasks.get(t.id);
  state.tasks.set(t.id, t);
  placeCard(t);
  if (inReview(t) !== inReview(before)) renderRequests();
  // Cards blocked by this one show its status.
  if (before && before.status !== t.status) {
    for (const other of state.tasks.values()) {
      if ((other.blocked_by || []).includes(t.id)) placeCard(other);
    }
  }
}

function removeTask(id) {
  const before = state.tasks.get(id);
  state.tasks.delete(id);
  if (inReview(before)) renderRequests();
  const el = document.getElementById(`task-${id}`);
  if (el) el.remove();
}

// ---------------------------------------------------------------- the team

// The member's state: its liveness when boardd reports one, else its status.
function memberState(m) {
  if (m.liveness) return { state: m.liveness.state, since: m.liveness.since, live: m.liveness };
  return { state: m.connected || m.status === 'shutdown' ? m.status : 'offline', since: m.last_seen };
}

// What a state asks of the person, where it asks something.
const STATE_HINTS = {
  awaiting_approval: 'Its next move is yours: see "Waiting for you".',
  stalled: 'Connected but silent, as a stopped or hung process is; this ends when it is heard from again.',
};

function renderTeam() {
  const list = document.getElementById('team');
  if (!state.members.size) {
    list.replaceChildren(h('li', { class: 'muted' }, 'No teammates yet: `teamctl spawn NAME --role ROLE` starts one.'));
    return;
  }
  list.replaceChildren(...[...state.members.values()].map(m => {
    const s = memberState(m);
    const live = s.live || {};
    return h('li', { class: 'member', id: `member-${m.name}`, dataset: { name: m.name, state: s.state },
      onclick: () => select('member', m.name) },
    h('b', {}, m.name), ` (${m.role}) `,
    h('span', { class: `state state-${s.state}` }, s.state.replaceAll('_', ' ')), ' ',
    age(m.liveness ? 'for ' : 'seen ', s.since, m.liveness ? '' : ' ago'),
    m.task ? h('span', { class: 'muted' }, ` · #${m.task}`) : '',
    live.last_heartbeat ? h('div', { class: 'muted' }, age('last heartbeat ', live.last_heartbeat, ' ago')) : '',
    STATE_HINTS[s.state] ? h('div', { class: 'muted hint' }, STATE_HINTS[s.state]) : '',
    live.exit ? h('div', { class: 'muted' }, `exit: ${live.exit}`) : '');
  }));
}

// ---------------------------------------------------------------- requests

function renderRequests() {
  const open = [...state.requests.values()].filter(r => r.state === 'pending');
  // Work waiting for review is the person's move too: listed here, decided
  // in the task's detail, where its diff is.
  const reviews = [...state.tasks.values()].filter(inReview).map(t =>
    h('li', { class: 'review-item', id: `review-${t.id}`, onclick: () => select('task', t.id) },
      h('b', {}, `Review #${t.id}`), ` ${t.subject}`, t.owner ? ` from ${t.owner}` : '',
      h('div', { class: 'muted' }, size(t.landing.diff),
        t.landing.review_at ? age(' · waiting for ', t.landing.review_at) : '')));
  const items = reviews.concat(open.map(r => {
    if (r.kind === 'plan') {
      return h('li', { class: 'request plan', id: `request-${r.id}` },
        h('div', {}, h('b', {}, `Plan r${r.id}`), ` for #${r.task} from ${r.from}`),
        h('pre', {}, r.plan || ''), actionForms('plan', r));
    }
    return h('li', { class: 'request shutdown', id: `request-${r.id}` },
      h('div', {}, h('b', {}, `Shutdown r${r.id}`), ` of ${r.to}`, r.reason ? `: ${r.reason}` : '',
        r.deadline ? h('span', { class: 'muted' }, ' · waiting for its answer') : ''),
      actionForms('shutdown', r));
  }));
  rerender(document.getElementById('requests'),
    ...(items.length ? items : [h('li', { class: 'muted' }, 'Nothing waits for you.')]));
}

// ---------------------------------------------------------------- detail

function select(kind, id) {
  state.selected = { kind, id };
  state.detail = null;
  document.querySelectorAll('.card.selected').forEach(el => el.classList.remove('selected'));
  const el = kind === 'task' ? document.getElementById(`task-${id}`) : null;
  if (el) el.classList.add('selected');
  renderDetail();
  if (kind === 'task') { refreshTask(id); loadDiff(id); } else loadTranscript(id);
}

function renderDetail() {
  const panel = document.getElementById('detail');
  const sel = state.selected;
  panel.hidden = !sel;
  if (!sel) return;
  const close = h('button', { class: 'close', onclick: () => { state.selected = null; renderDetail(); } }, 'Close');
  if (sel.kind === 'member') {
    const m = state.members.get(sel.id) || { name: sel.id };
    rerender(panel, close, h('h2', {}, `Teammate ${m.name}`),
      actionForms('member', m),
      h('h3', {}, 'Transcript (last entries)'), state.transcript || h('p', { class: 'muted' }, 'Loading…'));
    return;
  }
  const t = state.tasks.get(sel.id);
  if (!t) { rerender(panel, close, h('p', {}, `Task #${sel.id} is not on the board.`)); return; }
  const d = state.detail && state.detail.id === t.id ? state.detail : null;
  const checks = (t.check_runs || []).map(c => h('li', { class: `check ${c.outcome}` },
    h('div', {}, `${c.outcome}: `, h('code', {}, c.command),
      c.exit_code != null ? ` (exit ${c.exit_code}, ${c.duration_ms} ms)` : ''),
    c.tail ? h('pre', {}, c.tail) : ''));
  rerender(panel, close,
    h('h2', {}, `#${t.id} ${t.subject}`),
    h('p', { class: 'muted' }, `${t.status}`, t.owner ? ` · ${t.owner}` : '',
      t.landing ? ` · landing: ${t.landing.stage}` : '', ` · priority ${t.priority}`,
      t.blocked_by && t.blocked_by.length ? ` · blocked by ${t.blocked_by.map(b => '#' + b).join(', ')}` : ''),
    t.description ? h('pre', {}, t.description) : '',
    t.result ? h('div', {}, h('b', {}, 'Result: '), t.result) : '',
    t.last_error ? h('div', { class: 'refusal' }, `Last error: ${t.last_error}`) : '',
    landingDetail(t),
    actionForms('task', t, typingIn(panel)),
    checks.length ? [h('h3', {}, 'Checks'), h('ul', { class: 'checks' }, checks)] : '',
    h('h3', {}, 'Diff'), state.diff && state.diff.id === t.id ? state.diff.el : h('p', { class: 'muted' }, 'Loading…'),
    h('h3', {}, 'History'),
    h('ol', { class: 'history' }, d ? d.history.map(e =>
      h('li', {}, new Date(e.at).toISOString().slice(11, 19), ` ${e.actor}: ${e.detail}`)) : 'Loading…'));
}

// The size of a change as `teamctl review` writes it: `2 files, +10 -3`.
function size(diff) {
  if (!diff) return 'size unknown';
  return `${diff.files} file${diff.files === 1 ? '' : 's'}, +${diff.added} -${diff.removed}`;
}

// What a landing that waits on the person says, and what the person can do.
function landingDetail(t) {
  const l = t.landing;
  if (!l) return '';
  const paths = (l.paths || []).length ? h('ul', { class: 'paths' }, l.paths.map(p => h('li', {}, h('code', {}, p)))) : '';
  const retry = `Retry below, or \`teamctl task retry ${t.id}\``;
  if (l.stage === 'review') {
    return h('div', { class: 'landing-wait review' },
      h('b', {}, 'Waits for your review: '), size(l.diff),
      l.review_at ? age(', waiting for ', l.review_at) : '',
      '. Read the diff below, then merge it or send it back with feedback.');
  }
  if (l.stage === 'blocked') {
    return h('div', { class: 'landing-wait blocked' },
      h('b', {}, 'Landing blocked: '),
      `changes in the checkout of the target${l.checkout ? ` at ${l.checkout}` : ''} are in the way:`, paths,
      `Commit or undo them there: it lands within seconds on its own, or at once with ${retry}. No attempt is used while it waits.`);
  }
  if (l.stage === 'conflict') {
    return h('div', { class: 'landing-wait conflict' },
      h('b', {}, 'Landing conflict: '),
      `its branch conflicts with the target${l.onto ? ` at ${l.onto.slice(0, 12)}` : ''} in:`, paths,
      t.owner ? `${t.owner} is told to resolve it in the worktree. ` : 'Its teammate gave it back: it waits for you. ',
      `To resolve it yourself: in the task's worktree${t.worktree ? ` (${t.worktree.path})` : ''}, \`git rebase\` onto the target, `,
      `fix the files and continue, then ${retry}. No attempt is used while it waits.`);
  }
  return '';
}

async function loadDiff(id) {
  try {
    const answer = await api(`/api/task/${id}/diff`);
    const el = answer.diff != null
      ? h('pre', { class: 'diff' }, answer.diff || '(no changes yet)')
      : h('p', { class: 'muted diff-none' }, answer.none);
    state.diff = { id, el };
  } catch (e) {
    state.diff = { id, el: h('p', { class: 'refusal' }, e.message) };
  }
  if (state.selected && state.selected.kind === 'task' && state.selected.id === id) renderDetail();
}

async function loadTranscript(name) {
  let el;
  try {
    const answer = await api(`/api/member/${encodeURIComponent(name)}/transcript?lines=40`);
    el = answer.entries.length
      ? h('ol', { class: 'transcript' }, answer.entries.map(e => h('li', {},
        h('span', { class: 'muted' }, `${new Date(e.at).toISOString().slice(11, 19)} ${e.task ? '#' + e.task : '-'} ${e.kind}${e.tool ? ' ' + e.tool : ''} `),
        h('pre', {}, e.text))))
      : h('p', { class: 'muted' }, 'No transcript yet.');
  } catch (e) {
    el = h('p', { class: 'refusal' }, e.message);
  }
  if (state.selected && state.selected.kind === 'member' && state.selected.id === name) {
    state.transcript = el;
    renderDetail();
  }
}

// ---------------------------------------------------------------- refreshing

// Runs `load` then `apply`; calls made while one runs share the next run, so
// a burst of events costs two reads, not one per event.
function coalesce(load, apply) {
  let busy = false;
  let waiting = [];
  async function run() {
    busy = true;
    while (waiting.length) {
      const batch = waiting;
      waiting = [];
      try { apply(await load()); } catch (e) { apply(null, e); }
      batch.forEach(done => done());
    }
    busy = false;
  }
  return () => new Promise(done => { waiting.push(done); if (!busy) run(); });
}

const taskRefreshers = new Map();
function refreshTask(id) {
  if (!taskRefreshers.has(id)) {
    taskRefreshers.set(id, coalesce(() => api(`/api/task/${id}`), (d, e) => {
      if (e) { if (/not found|no task/i.test(e.message)) removeTask(id); return; }
      const { history, plans, ...task } = d;
      setTask(task);
      if (state.selected && state.selected.kind === 'task' && state.selected.id === id) {
        state.detail = d;
        renderDetail();
      }
    }));
  }
  return taskRefreshers.get(id)();
}

const refreshTeam = coalesce(() => api('/api/team'), (members, e) => {
  if (e) return;
  state.members = new Map(members.map(m => [m.name, m]));
  renderTeam();
});

const refreshRequests = coalesce(() => api('/api/requests'), (requests, e) => {
  if (e) return;
  state.requests = new Map(requests.map(r => [r.id, r]));
  renderRequests();
});

const MEMBER_KINDS = new Set(['member_registered', 'member_status', 'usage_recorded', 'task_claimed',
  'task_completed', 'task_released', 'task_failed', 'request_settled']);

async function apply(event) {
  const work = [];
  if (event.kind === 'task_deleted') removeTask(event.task);
  else if (event.task != null) work.push(refreshTask(event.task));
  if (event.member != null || MEMBER_KINDS.has(event.kind)) work.push(refreshTeam());
  if (event.request != null || event.kind.startsWith('request_')) work.push(refreshRequests());
  if (event.kind === 'repo_set') work.push(loadBoard());
  const sel = state.selected;
  if (sel && sel.kind === 'member' && (event.member === sel.id || event.actor === sel.id)) loadTranscript(sel.id);
  if (sel && sel.kind === 'task' && event.task === sel.id) work.push(loadDiff(sel.id));
  addActivity(event);
  await Promise.all(work);
  window.teamboard.shown[event.seq] = Date.now();
  if (event.seq > window.teamboard.seq) window.teamboard.seq = event.seq;
  document.body.dataset.seq = window.teamboard.seq;
}

function addActivity(event) {
  const list = document.getElementById('activity');
  list.prepend(h('li', { dataset: { seq: event.seq } },
    new Date(event.at).toISOString().slice(11, 19), ` ${event.actor}: ${event.detail}`));
  while (list.children.length > 50) list.lastChild.remove();
}

// ---------------------------------------------------------------- start

async function loadBoard() {
  const b = await api('/api/board');
  document.getElementById('team-name').textContent = `· team ${b.team_name}`;
  document.title = `teamboard · ${b.team_name}`;
  for (const t of b.tasks) setTask(t);
  state.members = new Map(b.members.map(m => [m.name, m]));
  state.requests = new Map(b.requests.map(r => [r.id, r]));
  renderTeam();
  renderRequests();
  return b.seq;
}

// The newest event received (applied or queued): where a reconnect resumes.
let received = 0;

function connect(since) {
  const banner = document.getElementById('banner');
  // EventSource reconnects by itself and sends Last-Event-ID, which takes over
  // from `since`: the server catches up from the event log.
  const source = new EventSource(`/api/events?since=${since}`);
  source.onopen = () => { banner.hidden = true; window.teamboard.connected = true; };
  source.onerror = () => {
    banner.hidden = false;
    window.teamboard.connected = false;
    // Trap: an error status (boardd down while the server reconnects, or 401)
    // ends an EventSource for good. Start a new one after a pause, unless the
    // server refuses us: then only the printed address helps.
    if (source.readyState === EventSource.CLOSED) {
      window.teamboard.closed += 1;
      setTimeout(retry, 2000);
    }
  };
  // Events are applied in order: each waits for the one before.
  let chain = Promise.resolve();
  source.onmessage = msg => {
    const event = JSON.parse(msg.data);
    if (event.seq <= received) return;
    received = event.seq;
    chain = chain.then(() => apply(event));
  };
}

async function retry() {
  try {
    const res = await fetch('/api/team');
    if (res.status === 401) {
      document.getElementById('banner').textContent =
        'Disconnected: teamctl web no longer accepts this page (it restarted with a new token). Open the address it printed.';
      return;
    }
  } catch (_) { /* still down: try again below */ }
  connect(received);
}

async function start() {
  document.getElementById('add-task').append(...actionForms('board', null));
  tick();
  setInterval(tick, 1000);
  try {
    const seq = await loadBoard();
    window.teamboard.seq = seq;
    received = seq;
    document.body.dataset.seq = seq;
    connect(seq);
  } catch (e) {
    notice(`Cannot read the board: ${e.message}`, true);
    document.getElementById('banner').hidden = false;
  }
}

start();
