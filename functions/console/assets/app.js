// The sluice console's page: polls the console's JSON API (api/...) every
// 2 s and calls it for the actions. Everything a queue or a message holds
// is put in the page as text (textContent), never as markup.
'use strict';

const POLL_MS = 2000;
const HISTORY = 60; // points of the rate sparkline

const state = {
  csrf: '',
  queues: [],
  selected: '',
  prevStats: null,
  history: [],
};

const $ = (id) => document.getElementById(id);

// el builds an element: el('td', {className: 'num'}, 'text', child, ...).
function el(tag, props, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, props || {});
  for (const c of children) {
    if (c !== null && c !== undefined) e.append(c);
  }
  return e;
}

async function getJSON(name) {
  const r = await fetch('api/' + name, { credentials: 'same-origin', cache: 'no-store' });
  return answer(r);
}

async function post(name, body) {
  const r = await fetch('api/' + name, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-Sluice-Csrf': state.csrf },
    body: JSON.stringify(body),
  });
  return answer(r);
}

async function answer(r) {
  let data = {};
  try { data = await r.json(); } catch (e) { /* not JSON: keep {} */ }
  if (!r.ok) {
    const err = (data && data.error) || { code: 'HTTP' + r.status, message: r.statusText };
    throw Object.assign(new Error(err.message), { code: err.code });
  }
  return data;
}

// show puts an outcome in a result line: ok text, or an error as AWS
// words it (code, then message).
function show(id, ok, text, err) {
  const p = $(id);
  p.className = 'result ' + (ok ? 'ok' : 'error');
  p.replaceChildren();
  if (ok) {
    p.textContent = text;
  } else {
    p.append(el('span', { className: 'code', textContent: err.code || 'Error' }), ': ' + err.message);
  }
}

// clear empties a result line as an action starts, so that what it then
// shows is that action's outcome.
function clear(id) {
  $(id).className = 'result';
  $(id).replaceChildren();
}

function banner(text) {
  const b = $('banner');
  b.hidden = !text;
  b.textContent = text || '';
}

function selectedQueue() {
  return state.queues.find((q) => q.name === state.selected);
}

// ---- the queue table -------------------------------------------------------

function setDepth(td, n) {
  td.textContent = String(n);
  td.classList.toggle('zero', n === 0);
}

// queueRow builds a queue's row once; polling then updates it in place, so
// that a click or the focus is never lost to a row built again.
function queueRow(q) {
  const name = el('td', { className: 'name' }, el('button', { type: 'button', textContent: q.name }),
    el('span', { className: 'badge fifo', textContent: 'FIFO', hidden: !q.fifo }),
    el('span', { className: 'badge dlq', textContent: 'DLQ', hidden: true }));
  const tr = el('tr', {}, name, el('td', { className: 'num visible' }), el('td', { className: 'num inflight' }),
    el('td', { className: 'num delayed' }), el('td', { className: 'dlq-target' }));
  tr.dataset.queue = q.name;
  tr.addEventListener('click', () => select(q.name));
  return tr;
}

function renderQueues(list, truncated) {
  state.queues = list;
  $('queue-count').textContent = '(' + list.length + ')';
  $('no-queues').hidden = list.length > 0;
  $('truncated').hidden = !truncated;
  const body = document.querySelector('#queues tbody');
  const rows = new Map([...body.children].map((tr) => [tr.dataset.queue, tr]));
  let prev = null;
  for (const q of list) {
    const tr = rows.get(q.name) || queueRow(q);
    rows.delete(q.name);
    setDepth(tr.querySelector('.visible'), q.visible);
    setDepth(tr.querySelector('.inflight'), q.inFlight);
    setDepth(tr.querySelector('.delayed'), q.delayed);
    tr.querySelector('.dlq-target').textContent = q.deadLetterQueue || '';
    tr.querySelector('.badge.dlq').hidden = !(q.sources && q.sources.length);
    tr.classList.toggle('selected', q.name === state.selected);
    const at = prev ? prev.nextSibling : body.firstChild;
    if (at !== tr) body.insertBefore(tr, at);
    prev = tr;
  }
  for (const tr of rows.values()) tr.remove();
  if (state.selected && !selectedQueue()) {
    state.selected = '';
    $('detail').hidden = true;
  }
  renderDetailData();
}

// ---- the selected queue ----------------------------------------------------

function select(name) {
  if (state.selected === name) return;
  state.selected = name;
  for (const tr of document.querySelectorAll('#queues tbody tr')) {
    tr.classList.toggle('selected', tr.dataset.queue === name);
  }
  const q = selectedQueue();
  $('detail').hidden = false;
  $('detail-name').textContent = q.name;
  $('detail-kind').textContent = q.fifo ? 'FIFO' : 'Standard';
  $('detail-kind').className = 'badge' + (q.fifo ? ' fifo' : '');
  $('detail-url').textContent = q.url;
  for (const e of document.querySelectorAll('.fifo-only')) e.hidden = !q.fifo;
  for (const id of ['send-result', 'peek-result', 'purge-result', 'redrive-result']) clear(id);
  $('messages').replaceChildren();
  $('purge-confirm').hidden = true;
  $('purge-name').textContent = q.name;
  const dest = $('redrive-dest');
  dest.replaceChildren(el('option', { value: '', textContent: 'its source queues' }),
    ...state.queues.filter((o) => o.name !== q.name).map((o) => el('option', { value: o.arn, textContent: o.name })));
  renderDetailData();
  refreshTasks();
}

// renderDetailData updates what polling changes: attributes and the
// redrive card; forms keep what the user typed.
function renderDetailData() {
  const q = selectedQueue();
  if (!q) return;
  const names = Object.keys(q.attributes).sort();
  const rows = names.map((n) => {
    const tr = el('tr', {}, el('td', { textContent: n }), el('td', { textContent: formatAttribute(n, q.attributes[n]) }));
    tr.dataset.attribute = n;
    return tr;
  });
  document.querySelector('#attributes tbody').replaceChildren(...rows);
  const isDLQ = !!(q.sources && q.sources.length);
  $('redrive-card').hidden = !isDLQ;
  $('redrive-sources').textContent = isDLQ ? q.sources.join(', ') : '';
}

function formatAttribute(name, value) {
  if ((name === 'CreatedTimestamp' || name === 'LastModifiedTimestamp') && /^\d+$/.test(value)) {
    return value + '  (' + new Date(Number(value) * 1000).toISOString().replace('.000Z', 'Z') + ')';
  }
  return value;
}

async function refreshTasks() {
  const q = selectedQueue();
  const body = document.querySelector('#tasks tbody');
  if (!q || !(q.sources && q.sources.length)) {
    body.replaceChildren();
    return;
  }
  try {
    const data = await getJSON('tasks?arn=' + encodeURIComponent(q.arn));
    body.replaceChildren(...data.tasks.map((t) => el('tr', {},
      el('td', { className: 'status', textContent: t.Status + (t.FailureReason ? ' (' + t.FailureReason + ')' : '') }),
      el('td', { textContent: String(t.ApproximateNumberOfMessagesMoved) }),
      el('td', { textContent: t.ApproximateNumberOfMessagesToMove === undefined ? '' : String(t.ApproximateNumberOfMessagesToMove) }),
      el('td', { textContent: t.DestinationArn ? t.DestinationArn.split(':').pop() : 'source queues' }),
      el('td', { textContent: new Date(t.StartedTimestamp).toLocaleTimeString() }))));
  } catch (e) {
    show('redrive-result', false, '', e);
  }
}

// ---- actions ---------------------------------------------------------------

async function send(ev) {
  ev.preventDefault();
  const q = selectedQueue();
  const f = ev.target;
  const body = { queue: q.name, body: f.body.value };
  if (q.fifo) {
    body.groupId = f.groupId.value;
    body.dedupId = f.dedupId.value;
  }
  if (f.delaySeconds.value !== '') body.delaySeconds = Number(f.delaySeconds.value);
  clear('send-result');
  $('send').disabled = true;
  try {
    const out = await post('send', body);
    show('send-result', true, 'Sent: message ' + out.messageId + (out.sequenceNumber ? ', sequence number ' + out.sequenceNumber : ''));
    if (q.fifo && f.dedupId.value) f.dedupId.value = '';
    poll();
  } catch (e) {
    show('send-result', false, '', e);
  } finally {
    $('send').disabled = false;
  }
}

function messageCard(m) {
  const a = m.attributes || {};
  const meta = el('div', { className: 'meta' });
  const add = (label, v) => { if (v !== undefined && v !== '') meta.append(el('span', {}, label + ' ', el('b', { textContent: v }))); };
  add('ReceiveCount', a.ApproximateReceiveCount);
  add('sent', a.SentTimestamp ? new Date(Number(a.SentTimestamp)).toLocaleString() : undefined);
  add('group', a.MessageGroupId);
  add('dedup', a.MessageDeduplicationId);
  add('sequence', a.SequenceNumber);
  for (const [n, v] of Object.entries(m.messageAttributes || {})) add(n + ' (' + v.type + ')', v.value);
  const card = el('div', { className: 'message' },
    el('div', { className: 'id', textContent: m.messageId }),
    el('pre', { className: 'body', textContent: m.body }), meta);
  card.dataset.messageId = m.messageId;
  return card;
}

async function peek() {
  const q = selectedQueue();
  clear('peek-result');
  $('peek').disabled = true;
  try {
    const out = await post('peek', { queue: q.name, max: Number($('peek-max').value) });
    $('messages').replaceChildren(...out.messages.map(messageCard));
    show('peek-result', true, out.messages.length === 0 ? 'No visible messages.' :
      out.messages.length + ' message' + (out.messages.length === 1 ? '' : 's') + ' (received with visibility timeout 0).');
    poll();
  } catch (e) {
    show('peek-result', false, '', e);
  } finally {
    $('peek').disabled = false;
  }
}

async function purge() {
  const q = selectedQueue();
  $('purge-confirm').hidden = true;
  clear('purge-result');
  try {
    await post('purge', { queue: q.name });
    show('purge-result', true, 'Purged ' + q.name + '.');
    $('messages').replaceChildren();
    poll();
  } catch (e) {
    show('purge-result', false, '', e);
  }
}

async function redrive() {
  const q = selectedQueue();
  const body = { sourceArn: q.arn, destinationArn: $('redrive-dest').value };
  if ($('redrive-rate').value !== '') body.maxPerSecond = Number($('redrive-rate').value);
  clear('redrive-result');
  $('redrive').disabled = true;
  try {
    const out = await post('redrive', body);
    show('redrive-result', true, 'Started: task ' + out.taskHandle.slice(0, 24) + '…');
    refreshTasks();
  } catch (e) {
    show('redrive-result', false, '', e);
  } finally {
    $('redrive').disabled = false;
  }
}

// ---- live rates ------------------------------------------------------------

function renderStats(s) {
  const prev = state.prevStats;
  state.prevStats = s;
  if (!prev || s.at <= prev.at) return;
  const secs = (s.at - prev.at) / 1000;
  const r = {
    sent: Math.max(0, s.sent - prev.sent) / secs,
    received: Math.max(0, s.received - prev.received) / secs,
    deleted: Math.max(0, s.deleted - prev.deleted) / secs,
  };
  for (const k of ['sent', 'received', 'deleted']) $('rate-' + k).textContent = formatRate(r[k]);
  state.history.push(r);
  if (state.history.length > HISTORY) state.history.shift();
  drawSpark();
}

function formatRate(x) {
  if (x === 0) return '0';
  if (x < 10) return x.toFixed(1);
  return Math.round(x).toLocaleString();
}

function drawSpark() {
  const c = $('spark');
  const ratio = window.devicePixelRatio || 1;
  const w = c.clientWidth, h = c.clientHeight;
  if (c.width !== w * ratio) { c.width = w * ratio; c.height = h * ratio; }
  const g = c.getContext('2d');
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, w, h);
  const hist = state.history;
  const top = Math.max(1, ...hist.map((p) => Math.max(p.sent, p.received, p.deleted)));
  const colors = { sent: '#79b8ff', received: '#7ee2a8', deleted: '#ffb86b' };
  for (const k of ['deleted', 'received', 'sent']) {
    g.beginPath();
    g.strokeStyle = colors[k];
    g.lineWidth = 1.5;
    hist.forEach((p, i) => {
      const x = w - (hist.length - 1 - i) * (w / (HISTORY - 1)) - 1;
      const y = h - 4 - (p[k] / top) * (h - 8);
      if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
    });
    g.stroke();
  }
}

// ---- polling ---------------------------------------------------------------

let polling = null;

async function poll() {
  if (polling) return polling;
  polling = (async () => {
    try {
      const [qs, stats] = await Promise.all([getJSON('queues'), getJSON('stats')]);
      renderQueues(qs.queues, qs.truncated);
      renderStats(stats);
      banner('');
      document.body.dataset.polled = String(Number(document.body.dataset.polled || 0) + 1);
    } catch (e) {
      banner('Cannot reach the console API: ' + (e.code ? e.code + ': ' : '') + e.message);
    } finally {
      polling = null;
    }
  })();
  return polling;
}

async function start() {
  try {
    const s = await getJSON('session');
    state.csrf = s.csrf;
    $('who').textContent = 'account ' + s.account + ' · ' + s.region +
      (s.auth === 'none' ? ' · open (no authentication)' : ' · signed in as ' + s.accessKeyId);
  } catch (e) {
    banner('Cannot start the console: ' + e.message);
    return;
  }
  $('send-form').addEventListener('submit', send);
  $('peek').addEventListener('click', peek);
  $('purge').addEventListener('click', () => { $('purge-confirm').hidden = false; });
  $('purge-no').addEventListener('click', () => { $('purge-confirm').hidden = true; });
  $('purge-yes').addEventListener('click', purge);
  $('redrive').addEventListener('click', redrive);
  await poll();
  setInterval(() => { poll(); if (selectedQueue()) refreshTasks(); }, POLL_MS);
}

start();
