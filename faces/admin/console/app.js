// Gatehouse operator console. Vanilla JS, no inline script or style (the page's
// Content-Security-Policy forbids both). Every action is a call of the admin JSON-RPC API
// (POST /rpc) with the operator's credential in a header; live updates come from
// GET /console/events, read with fetch so that the credential stays in a header too.
'use strict';

(function () {
  const KEY = 'gatehouse.console.credential';
  const $ = (id) => document.getElementById(id);
  const SVGNS = 'http://www.w3.org/2000/svg';

  let credential = null; // {kind: 'apikey'|'bearer', value}
  let stream = null;     // AbortController of the event stream
  let rpcId = 0;

  function load() {
    try {
      const raw = sessionStorage.getItem(KEY);
      return raw ? JSON.parse(raw) : null;
    } catch (e) {
      return null;
    }
  }

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    if (credential && credential.kind === 'bearer') {
      h['Authorization'] = 'Bearer ' + credential.value;
    } else if (credential && credential.kind === 'apikey') {
      h['X-API-Key'] = credential.value;
    } // 'none': an anonymous caller, admitted from loopback when the configuration says so
    return h;
  }

  // RPCError is a JSON-RPC error answer.
  class RPCError extends Error {
    constructor(err) {
      super(err.message + ' (' + err.code + ')');
      this.code = err.code;
      this.data = err.data;
    }
  }

  async function rpc(method, params) {
    const body = {jsonrpc: '2.0', id: ++rpcId, method: method};
    if (params !== undefined) {
      body.params = params;
    }
    const resp = await fetch('/rpc', {
      method: 'POST',
      headers: headers({'Content-Type': 'application/json'}),
      body: JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
    });
    let msg;
    try {
      msg = await resp.json();
    } catch (e) {
      throw new Error('HTTP ' + resp.status);
    }
    if (msg.error) {
      throw new RPCError(msg.error);
    }
    return msg.result;
  }

  // el builds an element with text content and attributes; never HTML.
  function el(tag, text, attrs) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) {
      e.textContent = String(text);
    }
    for (const [k, v] of Object.entries(attrs || {})) {
      e.setAttribute(k, v);
    }
    return e;
  }

  function row(cells, attrs) {
    const tr = el('tr', null, attrs);
    for (const c of cells) {
      const td = el('td');
      if (c instanceof Node) {
        td.appendChild(c);
      } else {
        td.textContent = c === undefined || c === null ? '' : String(c);
      }
      tr.appendChild(td);
    }
    return tr;
  }

  function fill(tbody, rows, empty) {
    tbody.replaceChildren(...rows);
    if (empty) {
      empty.classList.toggle('hidden', rows.length > 0);
    }
  }

  function when(ms) {
    if (!ms) {
      return '';
    }
    return new Date(ms).toLocaleTimeString();
  }

  function banner(text) {
    const b = $('banner');
    b.textContent = text || '';
    b.classList.toggle('hidden', !text);
  }

  function pill(text, cls) {
    return el('span', text, {'class': 'pill ' + cls});
  }

  // --- sign in and out

  function showApp(on) {
    $('login-section').classList.toggle('hidden', on);
    $('app').classList.toggle('hidden', !on);
    $('session').classList.toggle('hidden', !on);
  }

  async function signIn(c) {
    credential = c;
    try {
      await rpc('admin.status');
    } catch (e) {
      credential = null;
      sessionStorage.removeItem(KEY);
      $('login-error').textContent = 'Sign-in refused: ' + e.message;
      showApp(false);
      return;
    }
    sessionStorage.setItem(KEY, JSON.stringify(c));
    $('login-error').textContent = '';
    showApp(true);
    refreshApprovals();
    refreshCatalog();
    openStream();
  }

  function signOut() {
    if (stream) {
      stream.abort();
      stream = null;
    }
    credential = null;
    sessionStorage.removeItem(KEY);
    $('cred').value = '';
    showApp(false);
  }

  // --- live updates: GET /console/events, read with fetch (EventSource cannot send a header)

  async function openStream() {
    if (stream) {
      stream.abort();
    }
    const ctl = new AbortController();
    stream = ctl;
    let delay = 1000;
    while (stream === ctl) {
      try {
        const resp = await fetch('/console/events', {headers: headers({'Accept': 'text/event-stream'}), signal: ctl.signal, cache: 'no-store'});
        if (resp.status === 401 || resp.status === 403) {
          banner('The event stream was refused (HTTP ' + resp.status + '): sign in again.');
          $('live').textContent = 'refused';
          return;
        }
        if (!resp.ok || !resp.body) {
          throw new Error('HTTP ' + resp.status);
        }
        $('live').textContent = 'live';
        $('live').className = 'pill ok';
        banner('');
        delay = 1000;
        await readEvents(resp.body, ctl);
      } catch (e) {
        if (ctl.signal.aborted) {
          return;
        }
      }
      $('live').textContent = 'reconnecting';
      $('live').className = 'pill warn';
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 15000);
    }
  }

  async function readEvents(body, ctl) {
    const reader = body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    while (!ctl.signal.aborted) {
      const {value, done} = await reader.read();
      if (done) {
        return;
      }
      buf += dec.decode(value, {stream: true});
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let event = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) {
            event = line.slice(6).trim();
          } else if (line.startsWith('data:')) {
            data.push(line.slice(5).replace(/^ /, ''));
          }
        }
        onEvent(event, data.join('\n'));
      }
    }
  }

  function onEvent(event, data) {
    if (event === 'denied') {
      banner('Signed out by the gateway: ' + JSON.parse(data));
      return;
    }
    if (event !== 'snapshot') {
      return;
    }
    const s = JSON.parse(data);
    if (s.status) {
      renderStatus(s.status);
    }
    renderBackends(s.backends);
    renderTasks(s.tasks);
    renderErrors(s.recent);
    refreshApprovals();
  }

  // --- gateway status

  function renderStatus(st) {
    $('gw-version').textContent = st.version;
    $('cfg-version').textContent = (st.config && st.config.version) || '(not from a file)';
    $('cfg-file').textContent = (st.config && st.config.file) || '(built in)';
    const lr = st.config && st.config.last_reload;
    $('cfg-reload').replaceChildren(lr ? pill((lr.ok ? 'ok' : 'refused') + ' at ' + when(lr.at), lr.ok ? 'ok' : 'bad') : document.createTextNode('none since start'));
    if (lr && lr.error) {
      $('cfg-reload').appendChild(el('div', lr.error, {'class': 'error'}));
    }
    fill($('listeners'), (st.listeners || []).map((l) =>
      row([l.name, l.addr, pill(l.tls ? (l.client_certs ? 'TLS + client certs' : 'TLS') : 'plaintext', l.tls ? 'ok' : 'warn')], {'data-listener': l.name})));
    fill($('faces'), (st.faces || []).map((f) =>
      row([f.name, pill(f.enabled ? 'on' : 'off', f.enabled ? 'ok' : 'off'), f.where || ''], {'data-face': f.name})));
  }

  async function reload() {
    $('reload-result').textContent = 'reloading…';
    try {
      const r = await rpc('admin.config.reload');
      $('reload-result').textContent = 'reloaded: version ' + (r.config.version || '');
      renderStatus(await rpc('admin.status'));
    } catch (e) {
      $('reload-result').textContent = 'refused: ' + ((e.data && e.data.error) || e.message);
    }
  }

  // --- backends, with a small chart of calls/s and p99 each

  function chart(samples, key, label, unit, total) {
    const w = 160, h = 36;
    const svg = document.createElementNS(SVGNS, 'svg');
    svg.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
    svg.setAttribute('width', String(w));
    svg.setAttribute('height', String(h));
    svg.setAttribute('class', 'chart');
    svg.setAttribute('role', 'img');
    const values = samples.map((s) => s[key]);
    const max = Math.max(...values, 0);
    const title = document.createElementNS(SVGNS, 'title');
    title.textContent = label + ' over the last ' + samples.length + ' samples; max ' + max.toFixed(2) + ' ' + unit;
    svg.appendChild(title);
    svg.setAttribute('aria-label', title.textContent);
    if (samples.length > 1) {
      const pts = values.map((v, i) => {
        const x = (i / (values.length - 1)) * (w - 2) + 1;
        const y = h - 2 - (max > 0 ? (v / max) * (h - 4) : 0);
        return x.toFixed(1) + ',' + y.toFixed(1);
      });
      const line = document.createElementNS(SVGNS, 'polyline');
      line.setAttribute('points', pts.join(' '));
      line.setAttribute('class', 'line ' + key);
      svg.appendChild(line);
    }
    const wrap = el('div', null, {'class': 'chart-cell'});
    wrap.appendChild(svg);
    // the figure beside the chart is over the whole window
    wrap.appendChild(el('span', (total || 0).toFixed(key === 'p99_ms' ? 1 : 2) + ' ' + unit, {'class': 'now', 'title': label + ' over the window'}));
    return wrap;
  }

  function renderBackends(b) {
    if (!b) {
      return;
    }
    const series = new Map((b.series || []).map((s) => [s.backend, s]));
    $('window-hint').textContent = 'Samples of ' + (b.bucket_ms / 1000) + ' s; charts show the last ' +
      (b.series && b.series[0] ? b.series[0].samples.length : 0) + '.';
    fill($('backends'), (b.backends || []).map((be) => {
      const s = series.get(be.name) || {samples: [], error_rate: 0};
      return row([
        be.name, be.kind,
        pill(be.up ? 'up' : 'down', be.up ? 'ok' : 'bad'),
        be.breaker ? pill(be.breaker, be.breaker === 'closed' ? 'ok' : 'bad') : '—',
        be.queue_depth,
        pill(be.shedding ? 'shedding' : 'no', be.shedding ? 'bad' : 'ok'),
        (100 * (s.error_rate || 0)).toFixed(1) + ' %',
        chart(s.samples, 'calls_per_second', 'calls/s', '/s', s.calls_per_second),
        chart(s.samples, 'p99_ms', 'p99', 'ms', s.p99_ms),
      ], {'data-backend': be.name});
    }));
  }

  // --- tasks

  function renderTasks(t) {
    const tasks = (t && t.tasks) || [];
    fill($('tasks'), tasks.map((task) => {
      const actions = el('div', null, {'class': 'actions'});
      const live = ['pending', 'accepted', 'running', 'suspended'].includes(task.status);
      if (live) {
        const b = el('button', 'Cancel', {'type': 'button', 'data-action': 'cancel', 'data-task': task.task_id});
        b.addEventListener('click', () => act('admin.tasks.cancel', {task_id: task.task_id}, b));
        actions.appendChild(b);
      }
      if (task.resumable) {
        const b = el('button', 'Resume', {'type': 'button', 'data-action': 'resume', 'data-task': task.task_id});
        b.addEventListener('click', () => act('admin.tasks.resume', {task_id: task.task_id}, b));
        actions.appendChild(b);
      }
      const p = task.progress || {};
      const prog = el('div', null, {'class': 'progress'});
      const bar = el('progress', null, {'max': String(p.total || 1), 'value': String(p.total ? p.processed : 0)});
      prog.appendChild(bar);
      prog.appendChild(el('span', p.total ? p.processed + '/' + p.total + (p.message ? ' ' + p.message : '') : (p.message || '')));
      const state = pill(task.status, {completed: 'ok', running: 'run', accepted: 'run', pending: 'run', suspended: 'warn'}[task.status] || 'bad');
      return row([task.task_id, task.owner, task.cap, state, prog, when(task.updated_at), actions],
        {'data-task': task.task_id, 'data-status': task.status});
    }), $('tasks-empty'));
  }

  async function act(method, params, button) {
    button.disabled = true;
    try {
      await rpc(method, params);
      banner('');
    } catch (e) {
      banner(method + ' refused: ' + e.message);
    } finally {
      button.disabled = false;
    }
    if (method.startsWith('admin.approvals.')) {
      refreshApprovals();
    } else {
      renderTasks(await rpc('admin.tasks.list').catch(() => null));
    }
  }

  // --- approvals

  let approvalsBusy = false;

  async function refreshApprovals() {
    if (approvalsBusy) {
      return;
    }
    approvalsBusy = true;
    try {
      const list = await rpc('admin.approvals.list', {include_decided: true});
      fill($('approvals'), (list.pending || []).map((a) => {
        const actions = el('div', null, {'class': 'actions'});
        const ok = el('button', 'Approve', {'type': 'button', 'data-action': 'approve', 'data-approval': a.id});
        ok.addEventListener('click', () => act('admin.approvals.approve', {id: a.id, note: 'approved in the console'}, ok));
        const no = el('button', 'Deny', {'type': 'button', 'data-action': 'deny', 'data-approval': a.id, 'class': 'danger'});
        no.addEventListener('click', () => act('admin.approvals.deny', {id: a.id, reason: 'denied in the console'}, no));
        actions.append(ok, no);
        return row([a.id, a.caller, a.method, new Date(a.expires).toLocaleTimeString(), actions], {'data-approval': a.id});
      }), $('approvals-empty'));
      fill($('audit'), (list.decided || []).slice(0, 50).map((a) =>
        row([a.id, a.caller, a.method, pill(a.status, a.status === 'approved' ? 'ok' : 'bad'), a.decided_by || '', a.note || '',
          a.decided_at ? new Date(a.decided_at).toLocaleTimeString() : ''], {'data-audit': a.id, 'data-status': a.status})));
    } catch (e) {
      fill($('approvals'), [row(['Approvals cannot be listed: ' + e.message])], $('approvals-empty'));
    } finally {
      approvalsBusy = false;
    }
  }

  // --- recent errors, linked to Jaeger when configured

  function traceLink(base, id) {
    if (!base || !/^[0-9a-f]{32}$/.test(id)) {
      return el('code', id);
    }
    const a = el('a', id, {'href': base.replace(/\/+$/, '') + '/trace/' + id, 'target': '_blank', 'rel': 'noopener noreferrer'});
    return a;
  }

  function renderErrors(r) {
    if (!r) {
      return;
    }
    fill($('errors'), (r.errors || []).map((e) =>
      row([when(e.at), e.code + (e.kind ? ' ' + e.kind : ''), e.method, e.backend || '', e.message, traceLink(r.jaeger_url, e.trace_id)],
        {'data-code': String(e.code)})), $('errors-empty'));
  }

  // --- catalog

  async function refreshCatalog(ev) {
    if (ev) {
      ev.preventDefault();
    }
    const params = {level: Number($('catalog-level').value)};
    const subject = $('catalog-subject').value.trim();
    const scopes = $('catalog-scopes').value.trim();
    if (subject || scopes) {
      params.subject = subject;
      params.scopes = scopes ? scopes.split(/\s+/) : [];
    }
    try {
      const r = await rpc('admin.catalog', params);
      fill($('catalog'), (r.caps || []).map((c) => {
        const detail = el('details');
        detail.appendChild(el('summary', 'L' + params.level));
        detail.appendChild(el('pre', JSON.stringify(c, null, 2)));
        return row([c.id, c.cat || '', c.desc || '', detail], {'data-cap': c.id});
      }));
    } catch (e) {
      fill($('catalog'), [row(['The catalog cannot be read: ' + e.message])]);
    }
  }

  // --- start

  document.addEventListener('DOMContentLoaded', () => {
    const kindChanged = () => $('cred-label').classList.toggle('hidden', $('cred-kind').value === 'none');
    $('cred-kind').addEventListener('change', kindChanged);
    kindChanged();
    $('login').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const kind = $('cred-kind').value;
      const value = $('cred').value.trim();
      if (kind !== 'none' && !value) {
        $('login-error').textContent = 'Enter the credential, or choose None.';
        return;
      }
      signIn({kind: kind, value: kind === 'none' ? '' : value});
    });
    $('logout').addEventListener('click', signOut);
    $('reload').addEventListener('click', reload);
    $('catalog-form').addEventListener('submit', refreshCatalog);
    const saved = load();
    if (saved) {
      signIn(saved);
    } else {
      showApp(false);
    }
  });
})();
