// ARIA status page: reads GET /status every 30 s and draws it (no libraries, no inline code).
'use strict';

const SVG = 'http://www.w3.org/2000/svg';
const $ = (id) => document.getElementById(id);

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function bytes(n) {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

function duration(secs) {
  const d = Math.floor(secs / 86400), h = Math.floor(secs / 3600) % 24, m = Math.floor(secs / 60) % 60;
  return d > 0 ? `${d}d ${h}h ${m}m` : `${h}h ${m}m ${secs % 60}s`;
}

function card(label, value) {
  const c = el('div', { class: 'card' });
  c.append(el('div', { class: 'label' }, label), el('div', { class: 'value' }, value));
  return c;
}

// Bars or lines over the 24 hourly buckets; `series` is [[values, className], …].
function chart(svg, hours, series, kind, format) {
  svg.replaceChildren();
  const W = 480, H = 140, L = 40, B = 18, T = 8;
  const max = Math.max(1e-9, ...series.flatMap(([v]) => v));
  const x = (i) => L + (i + 0.5) * ((W - L) / hours.length);
  const y = (v) => T + (H - B - T) * (1 - v / max);
  svg.append(svgEl('line', { class: 'axis', x1: L, y1: H - B, x2: W, y2: H - B }));
  svg.append(svgEl('text', { x: 2, y: T + 8 }, format(max)));
  svg.append(svgEl('text', { x: 2, y: H - B }, '0'));
  hours.forEach((h, i) => {
    if (i % 6 === 0) svg.append(svgEl('text', { x: x(i) - 10, y: H - 4 }, `${h.slice(11, 13)}h`));
  });
  for (const [values, cls] of series) {
    if (kind === 'bar') {
      const w = ((W - L) / hours.length) * 0.7;
      values.forEach((v, i) => {
        const r = svgEl('rect', { class: 'bar', x: x(i) - w / 2, y: y(v), width: w, height: Math.max(0, H - B - y(v)) });
        r.append(svgEl('title', {}, `${hours[i]}:00 UTC: ${format(v)}`));
        svg.append(r);
      });
    } else {
      const points = values.map((v, i) => `${x(i)},${y(v)}`).join(' ');
      svg.append(svgEl('polyline', { class: cls, points }));
    }
  }
}

function render(s) {
  const overall = $('overall');
  overall.textContent = s.status || 'unknown';
  overall.className = `pill ${s.status || ''}`;
  $('updated').textContent = `collected ${new Date(s.collected_at).toLocaleString()}`;
  const p = s.process || {};
  $('cards').replaceChildren(
    card('uptime', duration(s.uptime_secs || 0)),
    card('version', p.version || '–'),
    card('pid', String(p.pid ?? '–')),
    card('CPU', p.cpu_percent == null ? '–' : `${p.cpu_percent.toFixed(1)} %`),
    card('memory (RSS)', bytes(p.rss_bytes)),
    card('runs in flight', String(s.runs_in_flight)),
    card('scheduler', s.scheduler.running ? `${s.scheduler.enabled_jobs} job(s)` : 'off'),
    card('outbox', `${s.outbox.waiting} waiting`),
    card('model', s.models.model || '–'),
    card('database', bytes(s.database_bytes)),
    card('logs', bytes(s.log_bytes)),
    card('disk free', bytes(s.disk_free_bytes)),
    card('restore points', s.snapshots == null ? '–' : String(s.snapshots)),
    card('event-loop lag', `${s.event_loop_lag_ms.toFixed(1)} ms`),
  );
  const body = $('checks').tBodies[0];
  body.replaceChildren(...s.checks.map((c) => {
    const tr = el('tr');
    const status = el('td');
    status.append(el('span', { class: `pill ${c.status}` }, c.status));
    tr.append(el('td', {}, c.name), status, el('td', {}, c.detail));
    return tr;
  }));
  const hist = s.history || [];
  const hours = hist.map((h) => h.hour);
  chart($('chart-runs'), hours, [[hist.map((h) => h.runs), 'bar']], 'bar', (v) => String(Math.round(v)));
  chart($('chart-latency'), hours, [[hist.map((h) => h.p50_ms), 'line1'], [hist.map((h) => h.p95_ms), 'line2']], 'line', (v) => `${Math.round(v)}`);
  chart($('chart-spend'), hours, [[hist.map((h) => h.cost_usd), 'bar']], 'bar', (v) => `$${v.toFixed(3)}`);
  const jobs = s.scheduler.next_jobs || [];
  $('jobs').replaceChildren(...(jobs.length ? jobs.map((j) => el('li', {}, `${j.at} — ${j.name}`)) : [el('li', { class: 'muted' }, 'no scheduled jobs')]));
  const errors = s.recent_errors || [];
  $('errors').replaceChildren(...(errors.length ? errors.map((e) => el('li', {}, e)) : [el('li', { class: 'muted' }, 'none')]));
}

async function refresh() {
  try {
    const res = await fetch('/status', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
    if (res.status === 401) throw new Error('Log in on the chat page first (it keeps the token in a cookie).');
    if (!res.ok) throw new Error(`GET /status answered ${res.status}`);
    render(await res.json());
    $('error').hidden = true;
  } catch (e) {
    $('error').textContent = e.message;
    $('error').hidden = false;
  }
}

refresh();
setInterval(refresh, 30000);
