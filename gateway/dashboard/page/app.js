// tollgate's live dashboard. Hand-written, no library: it draws what the
// gateway sends over Server-Sent Events. Every value from the gateway is
// written as text (textContent, setAttribute), never parsed as markup:
// keys come from clients.
'use strict';
(function () {
  const outcomes = ['allowed', 'delayed', 'refused', 'shadow_refused'];
  const svgNS = 'http://www.w3.org/2000/svg';
  let samples = [];
  let capacity = 300;
  let period = 1;
  let frames = 0;

  const $ = (id) => document.getElementById(id);

  // el makes an element with attributes and children (strings become
  // text nodes).
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    for (const c of kids) e.append(c);
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(svgNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }

  function fmt(v) {
    if (v >= 100) return v.toFixed(0);
    if (v >= 10) return v.toFixed(1);
    return v.toFixed(2);
  }

  // renderCharts draws one chart per rule and policy: a line per outcome
  // over the samples kept.
  function renderCharts() {
    const series = new Map();
    samples.forEach((s, i) => {
      for (const r of s.rates || []) {
        const id = r.rule + '\u001f' + r.policy;
        if (!series.has(id)) series.set(id, { rule: r.rule, policy: r.policy, shadow: r.shadow, points: [] });
        series.get(id).points.push([i, r]);
      }
    });
    const box = $('charts');
    if (series.size === 0) return;
    box.replaceChildren();
    const w = 600, h = 110, n = Math.max(capacity - 1, 1);
    for (const s of series.values()) {
      let top = 1;
      for (const [, r] of s.points) for (const o of outcomes) top = Math.max(top, r[o]);
      const chart = svg('svg', { viewBox: `0 0 ${w} ${h + 4}`, class: 'chart', role: 'img' });
      chart.append(svg('line', { x1: 0, y1: h + 1, x2: w, y2: h + 1, class: 'axis' }));
      const offset = capacity - samples.length;
      for (const o of outcomes) {
        const pts = s.points.map(([i, r]) => `${(((i + offset) / n) * w).toFixed(1)},${(h + 1 - (r[o] / top) * h).toFixed(1)}`);
        if (pts.length === 1) pts.push(pts[0]);
        chart.append(svg('polyline', { points: pts.join(' '), class: 'line ' + o }));
      }
      const last = s.points[s.points.length - 1][1];
      const figures = el('p', { class: 'figures' });
      for (const o of outcomes) {
        if (s.shadow ? o === 'refused' || o === 'delayed' : o === 'shadow_refused') continue;
        figures.append(el('span', { class: o, 'data-outcome': o }, `${o.replace('_', ' ')} ${fmt(last[o])}/s`), ' ');
      }
      const title = el('h3', {}, s.rule, s.policy !== s.rule ? el('span', { class: 'policy' }, ' / ' + s.policy) : '', s.shadow ? el('span', { class: 'tag' }, 'shadow') : '');
      box.append(el('div', { class: 'series', 'data-rule': s.rule, 'data-policy': s.policy }, title, chart, figures,
        el('p', { class: 'scale' }, `peak ${fmt(top)}/s over ${Math.round(capacity * period)} s`)));
    }
  }

  function hitterTable(kind, list, caption) {
    const t = el('table', { class: 'hitters ' + kind, 'data-kind': kind });
    t.append(el('caption', {}, caption));
    t.append(el('tr', {}, el('th', {}, 'key'), el('th', {}, kind === 'refused' ? 'refusals' : 'requests'), el('th', { title: 'the count overestimates by at most this' }, '±'), el('th', {}, 'remaining')));
    if (list.length === 0) t.append(el('tr', {}, el('td', { colspan: 4, class: 'none' }, 'none')));
    for (const k of list) {
      t.append(el('tr', { 'data-key': k.key },
        el('td', { class: 'key' }, k.key),
        el('td', { class: 'count' }, String(k.count)),
        el('td', { class: 'error' }, k.error ? String(k.error) : ''),
        el('td', { class: 'remaining' }, k.remaining < 0 ? '?' : String(k.remaining))));
    }
    return t;
  }

  function renderTops(rules) {
    const box = $('toplists');
    if (!rules || rules.length === 0) return;
    box.replaceChildren();
    for (const r of rules) {
      box.append(el('div', { class: 'rule', 'data-rule': r.rule },
        el('h3', {}, r.rule, r.shadow ? el('span', { class: 'tag' }, 'shadow') : ''),
        el('p', { class: 'totals' }, el('span', { class: 'requests' }, String(r.requests)), ' requests, ',
          el('span', { class: 'refusals' }, String(r.refusals)), r.shadow ? ' would-be refusals' : ' refusals'),
        el('div', { class: 'pair' }, hitterTable('refused', r.refused || [], 'by refusals'), hitterTable('volume', r.volume || [], 'by requests'))));
    }
  }

  function left(secs) {
    const s = Math.max(0, Math.round(secs));
    const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = s % 60;
    return (h ? h + 'h' : '') + (h || m ? m + 'm' : '') + r + 's';
  }

  function renderPenalties(list) {
    const box = $('penalty-list');
    if (!list || list.length === 0) {
      box.replaceChildren(el('p', { class: 'none' }, 'no penalty in force'));
      return;
    }
    const t = el('table', { class: 'penalties' });
    t.append(el('tr', {}, el('th', {}, 'rule'), el('th', {}, 'policy'), el('th', {}, 'key'), el('th', {}, 'left')));
    for (const p of list) {
      t.append(el('tr', { 'data-rule': p.rule, 'data-key': p.key },
        el('td', { class: 'rule' }, p.rule),
        el('td', { class: 'policy' }, p.policy),
        el('td', { class: 'key' }, p.key),
        el('td', { class: 'left' }, left(p.left))));
    }
    box.replaceChildren(t);
  }

  function statusCard(s) {
    const t = el('table', { class: 'fields' });
    for (const f of s.fields || []) {
      t.append(el('tr', f.alert ? { class: 'alert' } : {}, el('th', {}, f.name), el('td', {}, f.value)));
    }
    return el('div', { class: 'card', 'data-status': s.name }, el('h3', {}, s.name), t);
  }

  function renderStatus(list) {
    const store = [], adaptive = [];
    for (const s of list || []) (s.kind === 'adaptive' ? adaptive : store).push(statusCard(s));
    $('status').replaceChildren(...store);
    if (adaptive.length > 0) $('adaptive-list').replaceChildren(...adaptive);
    else $('adaptive-list').replaceChildren(el('p', { class: 'none' }, 'no adaptive controller'));
  }

  function connect() {
    const es = new EventSource('/dashboard/events');
    es.addEventListener('hello', (ev) => {
      const h = JSON.parse(ev.data);
      capacity = h.capacity; period = h.period;
      samples = h.history || [];
      $('keys').textContent = h.keys;
      $('words').textContent = h.words;
      $('conn').textContent = 'live';
      $('conn').className = 'conn up';
      renderCharts();
    });
    es.addEventListener('frame', (ev) => {
      const f = JSON.parse(ev.data);
      samples.push(f.sample);
      while (samples.length > capacity) samples.shift();
      if (f.words) $('words').textContent = f.words;
      renderCharts();
      renderTops(f.rules);
      renderPenalties(f.penalties);
      renderStatus(f.status);
      $('clock').textContent = new Date(f.sample.t).toLocaleTimeString();
      frames++;
      document.body.dataset.frames = String(frames);
    });
    es.onerror = () => {
      $('conn').textContent = 'reconnecting…';
      $('conn').className = 'conn down';
    };
  }

  connect();
})();
