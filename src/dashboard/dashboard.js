// The live dashboard (served at /dashboard). Plain browser JavaScript, served as it is (no build step)
// and type-checked from its JSDoc by src/dashboard/tsconfig.json (`npm run typecheck`); charts with
// uPlot, served from node_modules by the server (nothing from the network). The API key is typed
// once, kept in this tab's sessionStorage and sent as a header: never in a URL, a cookie or a log.
// Everything the server returns is put in the page as text (textContent), never as HTML: tool
// outputs and arguments are the model's, and the model must not be able to script this page.
'use strict';

(() => {
  const STORAGE_KEY = 'rft-endpoints.key';
  const RUN_KEY = 'rft-endpoints.run';
  const REFRESH_MS = 5000;
  const OUTCOMES = ['ok', 'tool_error', 'invalid_arguments', 'timeout', 'budget_exhausted', 'interrupted'];
  /** @type {Record<string, string>} */
  const OUTCOME_COLORS = {
    ok: '#12b76a', tool_error: '#f79009', invalid_arguments: '#7a5af8', timeout: '#f04438', budget_exhausted: '#b54708', interrupted: '#667085',
  };
  const PALETTE = ['#2f6fde', '#e04f5f', '#12b76a', '#f79009', '#7a5af8', '#0e9384', '#c11574', '#667085', '#93370d', '#155eef'];

  /**
   * An element of the page (index.html has every id this script names).
   * @param {string} id
   */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  /**
   * A form field of the page (an input or a select).
   * @param {string} id
   */
  const $field = (id) => /** @type {HTMLInputElement | HTMLSelectElement} */ (document.getElementById(id));

  /**
   * Server replies (GET /v1/stats, /v1/rollouts, /v1/rollouts/{id}, /v1/tools) are read as JSON of the
   * shapes in /openapi.json; they are not re-declared here.
   * @typedef {any} Reply
   */
  /** @typedef {(stale: () => boolean) => Promise<void>} Refresh */
  const state = {
    key: sessionStorage.getItem(STORAGE_KEY),
    generation: 0,
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    timer: undefined,
    /** @type {Map<string, { plot: import('uplot'), signature: string }>} */
    charts: new Map(),
    /** @type {string[] | null} */
    tools: null,
    lastRollout: '',
    // The run every view is narrowed to ('' = all runs): kept in the tab, set by the header's field or a link's run=.
    run: sessionStorage.getItem(RUN_KEY) ?? '',
    /** @type {Set<string>} */
    runs: new Set(),
    runsListed: false,
  };

  /**
   * An element with attributes and children; strings become text nodes (never parsed as HTML).
   * @typedef {Node | string | number | null | undefined | false} Child
   * @param {string} tag
   * @param {Record<string, unknown> | null} [attrs]
   * @param {...(Child | Child[])} children
   * @returns {HTMLElement}
   */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = String(v);
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), /** @type {EventListener} */ (v));
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  const fmt = {
    /** @type {(x: number | null | undefined, digits?: number) => string} */
    num: (x, digits = 2) => (x === null || x === undefined ? '–' : Number(x).toLocaleString(undefined, { maximumFractionDigits: digits })),
    /** @type {(x: number | null | undefined) => string} */
    pct: (x) => (x === null || x === undefined ? '–' : `${(x * 100).toFixed(1)}%`),
    /** @type {(iso: string | null | undefined) => string} */
    time: (iso) => (iso ? new Date(iso).toLocaleString() : '–'),
    /** @type {(s: string | null | undefined, n?: number) => string} */
    short: (s, n = 10) => (s && s.length > n ? `${s.slice(0, n)}…` : s ?? '–'),
  };

  /** @param {string} text */
  function setStatus(text, error = false) {
    $('status').textContent = text;
    $('status').className = error ? 'error' : '';
  }

  // ---- the API --------------------------------------------------------------------------------

  /** @returns {Record<string, string>} */
  function authHeaders() {
    const name = document.body.dataset.keyHeader || 'authorization';
    return { [name]: document.body.dataset.keyScheme === 'bare' ? String(state.key) : `Bearer ${state.key}` };
  }

  /**
   * @param {string} path
   * @returns {Promise<Reply>}
   */
  async function api(path) {
    const res = await fetch(path, { headers: authHeaders(), cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer' });
    if (res.status === 401) {
      signOut('The server refused this key.');
      throw new Error('unauthorized');
    }
    const body = await res.json().catch(() => null);
    if (!res.ok) throw new Error((body && body.error && body.error.message) || `HTTP ${res.status}`);
    return body;
  }

  // ---- sign in --------------------------------------------------------------------------------

  async function signIn() {
    const key = $field('key').value.trim();
    $field('key').value = '';
    if (!key) return;
    state.key = key;
    try {
      await api('/v1/stats?since=1m');
    } catch (e) {
      if (state.key) signOut(`Could not sign in: ${/** @type {Error} */ (e).message}`);
      return;
    }
    sessionStorage.setItem(STORAGE_KEY, key);
    route();
  }

  function signOut(message = '') {
    state.key = null;
    sessionStorage.removeItem(STORAGE_KEY);
    state.generation++;
    clearTimeout(state.timer);
    $('signin-error').textContent = message;
    route();
  }

  // ---- pages and refresh ----------------------------------------------------------------------

  /**
   * Runs refresh now and every REFRESH_MS until the page changes. A refresh draws only if its page is
   * still the current one when its answer comes (`stale()` false): a slow answer for a page or filter
   * left since must not replace the newer one's.
   */
  /** @param {Refresh} refresh */
  function every(refresh) {
    const generation = ++state.generation;
    const stale = () => generation !== state.generation;
    clearTimeout(state.timer);
    const tick = async () => {
      if (stale()) return;
      try {
        await refresh(stale);
        setStatus(`updated ${new Date().toLocaleTimeString()}`);
      } catch (e) {
        const message = /** @type {Error} */ (e).message;
        if (message !== 'unauthorized') setStatus(`refresh failed: ${message}`, true);
      }
      if (generation === state.generation) state.timer = setTimeout(tick, REFRESH_MS);
    };
    void tick();
  }

  /** @param {'signin' | 'overview' | 'rollouts' | 'rollout'} page */
  function show(page) {
    for (const id of ['signin', 'overview', 'rollouts', 'rollout']) $(id).hidden = id !== page;
    $('nav').hidden = page === 'signin';
    $('signout').hidden = page === 'signin';
    $('run-filter').hidden = page === 'signin';
    for (const a of $('nav').querySelectorAll('a')) {
      a.classList.toggle('active', (page === 'overview' && a.getAttribute('href') === '#/') || (page !== 'overview' && a.getAttribute('href') === '#/rollouts'));
    }
  }

  function route() {
    if (!state.key) {
      state.generation++;
      clearTimeout(state.timer);
      show('signin');
      $('key').focus();
      return;
    }
    const hash = location.hash.replace(/^#/, '') || '/';
    const [path, query = ''] = hash.split('?');
    const linked = new URLSearchParams(query).get('run');
    if (linked !== null) setRun(linked);
    $field('run').value = state.run;
    if (path.startsWith('/rollout/')) {
      show('rollout');
      const traceId = decodeURIComponent(path.slice('/rollout/'.length));
      state.lastRollout = '';
      if ($('rollout').dataset.traceId !== traceId) clearRollout(traceId);
      every((stale) => refreshRollout(traceId, stale));
    } else if (path === '/rollouts') {
      show('rollouts');
      setFilters(new URLSearchParams(query));
      every(refreshRollouts);
    } else {
      show('overview');
      every(refreshOverview);
    }
  }

  /** @param {string} run */
  function setRun(run) {
    state.run = run.trim();
    if (state.run) sessionStorage.setItem(RUN_KEY, state.run);
    else sessionStorage.removeItem(RUN_KEY);
  }

  /** `&run=...` for the figures' and lists' queries when the views are narrowed to a run. */
  const runParam = () => (state.run ? `&run=${encodeURIComponent(state.run)}` : '');

  /**
   * Offers the run labels seen so far in the header's field.
   * @param {(string | null)[]} runs
   */
  function noteRuns(runs) {
    const before = state.runs.size;
    for (const r of runs) if (r) state.runs.add(r);
    if (state.runs.size !== before) $('runs').replaceChildren(...[...state.runs].sort().map((r) => h('option', { value: r })));
  }

  // ---- charts ---------------------------------------------------------------------------------

  /**
   * A uPlot line chart in a figure; kept across refreshes while its series stay the same.
   * @typedef {{ label: string, values: (number | null)[], color?: string }} Series
   * @param {string} id
   * @param {string[]} buckets
   * @param {Series[]} series
   * @param {{ yRange?: [number, number], percent?: boolean }} [opts]
   */
  function lineChart(id, buckets, series, opts = {}) {
    const fig = $(id);
    const xs = buckets.map((iso) => Date.parse(iso) / 1000);
    const points = series.reduce((n, s) => n + s.values.filter((v) => v !== null && v !== undefined).length, 0);
    fig.dataset.points = String(points);
    fig.dataset.series = String(series.length);
    const signature = JSON.stringify([series.map((s) => s.label), opts.yRange || null]);
    const data = /** @type {import('uplot').AlignedData} */ ([xs, ...series.map((s) => s.values)]);
    let chart = state.charts.get(id);
    if (chart && chart.signature === signature && chart.plot.root.isConnected) {
      chart.plot.setData(data);
      return;
    }
    if (chart) chart.plot.destroy();
    for (const el of fig.querySelectorAll('.empty, .uplot')) el.remove();
    if (series.length === 0) {
      fig.append(h('div', { class: 'empty' }, 'no data in this window yet'));
      state.charts.delete(id);
      return;
    }
    const width = Math.max(300, fig.clientWidth - 16);
    const plot = new uPlot(
      {
        width,
        height: 220,
        scales: { x: { time: true }, y: opts.yRange ? { range: opts.yRange } : {} },
        axes: [{}, { values: (/** @type {import('uplot')} */ _u, /** @type {number[]} */ ticks) => ticks.map((t) => (opts.percent ? `${Math.round(t * 100)}%` : fmt.num(t))) }],
        series: [
          {},
          ...series.map((s, i) => ({
            label: s.label,
            stroke: s.color || PALETTE[i % PALETTE.length],
            width: 2,
            spanGaps: true,
            points: { show: true, size: 4 },
            value: (/** @type {import('uplot')} */ _u, /** @type {number | null} */ v) => (v === null || v === undefined ? '–' : opts.percent ? fmt.pct(v) : fmt.num(v, 3)),
          })),
        ],
      },
      data,
      fig,
    );
    state.charts.set(id, { plot, signature });
  }

  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let resizeTimer;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      for (const [id, c] of state.charts) c.plot.setSize({ width: Math.max(300, $(id).clientWidth - 16), height: 220 });
    }, 150);
  });

  // ---- overview -------------------------------------------------------------------------------

  /** @type {(label: string, value: string | number, bad?: boolean) => HTMLElement} */
  const card = (label, value, bad = false) =>
    h('div', { class: bad ? 'card bad' : 'card' }, h('div', { class: String(value).length > 12 ? 'value long' : 'value' }, value), h('div', { class: 'label' }, label));

  /**
   * @param {HTMLElement} el
   * @param {[string, number?][]} head
   * @param {HTMLElement[]} rows
   */
  function table(el, head, rows) {
    el.replaceChildren(
      h('thead', {}, h('tr', {}, head.map(([label, num]) => h('th', { class: num ? 'num' : undefined }, label)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: head.length, class: 'muted' }, 'nothing yet'))),
    );
  }

  /** @type {Refresh} */
  async function refreshOverview(stale) {
    const span = $field('curve-window').value;
    // The curve reads grades and rollouts only: over days, scanning every call would be the slow part.
    if (!state.runsListed) {
      // Run labels to offer in the header's field: those of recent rollouts (the rollout list adds more).
      state.runsListed = true;
      void api('/v1/rollouts?limit=200').then(
        (p) => noteRuns(p.rollouts.map((/** @type {Reply} */ r) => r.run)),
        () => (state.runsListed = false),
      );
    }
    const [now, curve] = await Promise.all([api(`/v1/stats?since=15m&bucket=1m&include=calls,rollouts,grades${runParam()}`), curveStats(span)]);
    if (stale()) return;
    renderNow(now);
    renderCurve(curve.stats);
    const span_ = $('curve-span');
    span_.dataset.since = curve.stats.since;
    span_.dataset.until = curve.stats.until;
    span_.dataset.rollouts = String(curve.stats.totals.rollouts_started);
    span_.textContent = curve.fitted ? `fitted to the data: ${fmt.time(curve.stats.since)} to ${fmt.time(curve.stats.until)}` : '';
  }

  const CURVE_PARTS = 'rollouts,grades,integrity';
  /** Shortest window the curve is fitted to. */
  const MIN_CURVE_MS = 60_000;

  /**
   * The learning curve's figures, over the part of the chosen window that holds the run's data: a run
   * of a few minutes fills the chart instead of being a spike at the edge of a 6-hour window. Each
   * pass narrows to the buckets from the first to the last with a rollout started or graded (and
   * finer buckets come with the narrower window); at most three passes.
   */
  /**
   * @param {string} span
   * @returns {Promise<{ stats: Reply, fitted: boolean }>}
   */
  async function curveStats(span) {
    let stats = await api(`/v1/stats?since=${encodeURIComponent(span)}&include=${CURVE_PARTS}${runParam()}`);
    let fitted = false;
    for (let pass = 0; pass < 3; pass++) {
      const fit = fitWindow(stats);
      if (!fit) break;
      stats = await api(`/v1/stats?since=${fit.since}&until=${fit.until}&include=${CURVE_PARTS}${runParam()}`);
      fitted = true;
    }
    return { stats, fitted };
  }

  /**
   * The part of a reply's window that holds its data, or undefined if it holds none or fills most of it.
   * @param {Reply} s
   * @returns {{ since: number, until: number } | undefined}
   */
  function fitWindow(s) {
    /** @type {boolean[]} */
    const used = s.buckets.map((/** @type {string} */ _, /** @type {number} */ i) => s.rollouts_started[i] > 0 || s.rollouts_graded[i] > 0);
    const first = used.indexOf(true);
    const last = used.lastIndexOf(true);
    const span = Date.parse(s.until) - Date.parse(s.since);
    if (first < 0 || (last - first + 1) * 2 > used.length || span <= MIN_CURVE_MS) return undefined;
    const since = Date.parse(s.buckets[first]);
    const until = Math.min(Date.parse(s.until), Date.parse(s.buckets[last]) + s.bucket_ms);
    return { since, until: Math.max(until, since + MIN_CURVE_MS) };
  }

  /** @param {Reply} s */
  function renderNow(s) {
    const t = s.totals;
    const failed = s.tools.reduce((/** @type {number} */ n, /** @type {Reply} */ x) => n + x.calls * x.error_rate, 0);
    const sb = s.this_replica.sandboxes;
    $('now-cards').replaceChildren(
      card('rollouts started / min', fmt.num(t.rollouts_started_per_minute)),
      card('rollouts graded / min', fmt.num(t.rollouts_graded_per_minute)),
      card('tool calls / min', fmt.num(t.tool_calls_per_minute)),
      card('tool error rate', t.tool_calls ? fmt.pct(failed / t.tool_calls) : '–'),
      card('infrastructure failures', fmt.num(t.failures.infra, 0), t.failures.infra > 0),
      card('model failures', fmt.num(t.failures.model, 0)),
      card('bad rows (not graded)', fmt.num(t.failures.data, 0), t.failures.data > 0),
      card('sandboxes live / queued', sb ? `${sb.live} / ${sb.queued}` : 'off', sb ? sb.queued > 0 : false),
    );
    renderPool(sb);
    lineChart(
      'chart-outcomes',
      s.buckets,
      OUTCOMES.filter((o) => s.tool_calls[o].some((/** @type {number} */ v) => v > 0) || o === 'ok').map((o) => ({ label: o, values: s.tool_calls[o], color: OUTCOME_COLORS[o] })),
    );
    lineChart('chart-failures', s.buckets, [
      { label: 'infra', values: s.failures.infra, color: '#f04438' },
      { label: 'model', values: s.failures.model, color: '#7a5af8' },
      { label: 'bad row', values: s.failures.data, color: '#f79009' },
    ]);
    table(
      $('tools-table'),
      [['tool'], ['calls', 1], ['error rate', 1], ['p50 ms', 1], ['p99 ms', 1], ['outcomes']],
      s.tools.map((/** @type {Reply} */ x) =>
        h(
          'tr',
          {},
          h('td', { class: 'mono' }, x.tool),
          h('td', { class: 'num' }, fmt.num(x.calls, 0)),
          h('td', { class: 'num' }, fmt.pct(x.error_rate)),
          h('td', { class: 'num' }, fmt.num(x.p50_ms)),
          h('td', { class: 'num' }, fmt.num(x.p99_ms)),
          h('td', {}, Object.entries(x.by_outcome).map(([o, n]) => h('span', { class: o === 'ok' ? 'badge good' : 'badge' }, `${o} ${n}`))),
        ),
      ),
    );
  }

  /**
   * A card the tests can find by name (data-figure).
   * @param {string} name
   * @param {string} label
   * @param {string | number} value
   * @param {boolean} [bad]
   */
  function figureCard(name, label, value, bad = false) {
    const c = card(label, value, bad);
    c.dataset.figure = name;
    return c;
  }

  /** @param {number} ms */
  const duration = (ms) => (ms >= 3_600_000 ? `${fmt.num(ms / 3_600_000, 1)} h` : ms >= 60_000 ? `${fmt.num(ms / 60_000, 1)} min` : `${fmt.num(ms / 1000, 1)} s`);

  /**
   * What bounds the pool, in a sentence.
   * @param {Reply} b this_replica.sandboxes.pool.bounds
   */
  function poolBounds(b) {
    const floor = `keeps ${b.floor} prepared at least (RFT_SANDBOX_WARM)`;
    if (b.budget_mb === null) return `${floor}; learning the step is off (RFT_SANDBOX_WARM_MAX_MB=0).`;
    return (
      `${floor}; learns the step up to ${b.max} (the memory budget of ${b.budget_mb} MB at ${b.prepared_kb} KB a prepared sandbox, ` +
      `and the sandbox cap of ${b.cap}); a step ends after ${duration(b.burst_gap_ms)} without a new rollout; ` +
      `back to the floor after ${duration(b.idle_ms)} without one.`
    );
  }

  /**
   * The warm pool's panel: what is prepared and in use per kind of sandbox, and the last steps.
   * @param {Reply} sb this_replica.sandboxes (null: sandboxes are off)
   */
  function renderPool(sb) {
    const el = $('pool');
    if (!sb) return el.replaceChildren(h('p', { class: 'muted', 'data-pool': 'off' }, 'Sandboxes are off on this server (RFT_SANDBOX=none): there is no warm pool.'));
    const p = sb.pool;
    if (!p) return el.replaceChildren(h('p', { class: 'muted', 'data-pool': 'none' }, `The ${sb.driver} driver keeps no learning warm pool.`));
    const kinds = /** @type {Reply[]} */ (p.kinds);
    const inUse = kinds.reduce((n, k) => n + k.in_use, 0);
    const several = kinds.length > 1;
    const kindsTable = h('table', { id: 'pool-kinds' });
    const stepsTable = h('table', { id: 'pool-steps' });
    table(
      kindsTable,
      [['kind of sandbox'], ['warm', 1], ['in use', 1], ['target', 1], ['predicted step', 1]],
      kinds.map((k) =>
        h(
          'tr',
          { 'data-kind': k.kind },
          h('td', { class: 'mono' }, k.kind, k.latest ? h('span', { class: 'badge' }, 'latest') : null),
          h('td', { class: 'num' }, k.warm),
          h('td', { class: 'num' }, k.in_use),
          h('td', { class: 'num' }, k.target),
          h('td', { class: 'num' }, k.predicted),
        ),
      ),
    );
    /** @type {HTMLElement[]} */
    const steps = kinds.flatMap((k) =>
      /** @type {Reply[]} */ (k.steps)
        .slice()
        .reverse()
        .map((s) =>
          h(
            'tr',
            { 'data-kind': k.kind, 'data-started': s.started_at },
            several ? h('td', { class: 'mono' }, k.kind) : null,
            h('td', {}, fmt.time(s.started_at)),
            h('td', { class: 'num' }, duration(Date.parse(s.last_at) - Date.parse(s.started_at))),
            h('td', { class: 'num' }, s.size),
            h('td', { class: 'num' }, s.hits),
            h('td', { class: 'num' }, s.misses),
            h('td', { class: 'num' }, fmt.pct(s.size ? s.hits / s.size : null)),
          ),
        ),
    );
    /** @type {[string, number?][]} */
    const stepsHead = [['started'], ['arriving over', 1], ['new rollouts', 1], ['hits (warm)', 1], ['misses (cold)', 1], ['hit rate', 1]];
    table(stepsTable, several ? [['kind of sandbox'], ...stepsHead] : stepsHead, steps);
    el.replaceChildren(
      h(
        'div',
        { class: 'cards', id: 'pool-cards' },
        figureCard('warm', 'warm (prepared, idle)', p.warm),
        figureCard('in-use', 'in use', inUse),
        figureCard('predicted', 'predicted step', p.predicted),
        figureCard('target', 'filling to', p.target),
        figureCard('hits', 'hits since start', p.hits),
        figureCard('misses', 'misses since start', p.misses),
      ),
      h('p', { class: 'muted', id: 'pool-bounds' }, `${sb.driver}: `, poolBounds(p.bounds)),
      kindsTable,
      h('h4', {}, 'Last steps ', h('small', {}, 'newest first: a step is a burst of new rollouts; hits found a prepared sandbox, misses had one made cold')),
      stepsTable,
    );
  }

  /** @param {Reply} s */
  function renderCurve(s) {
    const label = (/** @type {Reply} */ c) => `${c.grader} ${fmt.short(c.grader_version, 8)}`;
    /** @type {(key: string) => Series[]} */
    const per = (key) => s.learning_curve.map((/** @type {Reply} */ c) => ({ label: label(c), values: c[key] }));
    lineChart('chart-score', s.buckets, per('mean_score'));
    lineChart('chart-calls', s.buckets, per('tool_calls_per_rollout'));
    lineChart('chart-budget', s.buckets, per('budget_exhaustion_rate'), { percent: true, yRange: [0, 1] });
    lineChart('chart-rollouts', s.buckets, [
      { label: 'started', values: s.rollouts_started, color: '#2f6fde' },
      { label: 'graded', values: s.rollouts_graded, color: '#12b76a' },
      { label: 'grader errors', values: s.failures.infra, color: '#f04438' },
    ]);
    const kinds = s.integrity_kinds || {};
    table(
      $('integrity-table'),
      [['grader'], ['version'], ['kind'], ['rollouts', 1], ['events', 1], ['how it is detected']],
      s.integrity.map((/** @type {Reply} */ f) => {
        const q = new URLSearchParams({ flag: f.kind, ...(f.grader ? { grader: f.grader } : {}) });
        return h(
          'tr',
          { class: 'link', onclick: () => (location.hash = `#/rollouts?${q}`) },
          h('td', {}, f.grader ?? '(not graded)'),
          h('td', { class: 'mono', title: f.grader_version ?? '' }, fmt.short(f.grader_version, 12)),
          h('td', {}, h('span', { class: 'badge flag' }, f.kind)),
          h('td', { class: 'num' }, f.rollouts),
          h('td', { class: 'num' }, f.events),
          h('td', { class: 'muted' }, kinds[f.kind] ?? ''),
        );
      }),
    );
    const sb = s.this_replica.sandboxes;
    table(
      $('replica-table'),
      [['what'], ['value']],
      [
        h('tr', {}, h('td', {}, 'sandboxes'), h('td', {}, sb ? `${sb.driver}: ${sb.live} live, ${sb.queued} queued, cap ${sb.cap}` : 'disabled')),
        ...(s.this_replica.failures || []).map((/** @type {Reply} */ f) => h('tr', {}, h('td', {}, `failures since start (${f.kind}, ${f.where})`), h('td', {}, fmt.num(f.count, 0)))),
      ],
    );
    const list = $('graders');
    list.replaceChildren(...[...new Set(s.learning_curve.map((/** @type {Reply} */ c) => String(c.grader)))].map((g) => h('option', { value: g })));
  }

  // ---- rollout list ---------------------------------------------------------------------------

  const FILTERS = ['min_score', 'max_score', 'tool', 'outcome', 'grader', 'flag', 'door'];

  /** @param {string} name */
  function filterField(name) {
    return /** @type {HTMLInputElement | HTMLSelectElement} */ ($('filters').querySelector(`[name="${name}"]`));
  }

  /** @param {URLSearchParams} params */
  function setFilters(params) {
    for (const name of FILTERS) filterField(name).value = params.get(name) ?? '';
  }

  function filterQuery() {
    const q = new URLSearchParams();
    for (const name of FILTERS) {
      const v = filterField(name).value.trim();
      if (v !== '') q.set(name, v);
    }
    if (state.run) q.set('run', state.run);
    return q;
  }

  async function loadTools() {
    if (state.tools) return;
    const { tools } = await api('/v1/tools');
    /** @type {string[]} */
    const names = tools.map((/** @type {Reply} */ t) => t.function.name).sort();
    state.tools = names;
    const select = filterField('tool');
    const current = select.value;
    select.replaceChildren(h('option', { value: '' }, 'any'), ...names.map((t) => h('option', { value: t }, t)));
    select.value = current;
  }

  /** @param {Reply} r */
  function rolloutRow(r) {
    const flags = r.integrity_flags || [];
    return h(
      'tr',
      { class: 'link', 'data-trace-id': r.trace_id, onclick: () => (location.hash = `#/rollout/${encodeURIComponent(r.trace_id)}`) },
      h('td', { class: 'mono' }, r.trace_id),
      h('td', {}, fmt.time(r.created_at)),
      h('td', { class: 'num' }, r.calls),
      h('td', { class: 'num' }, `${fmt.num(r.budget.used)} / ${fmt.num(r.budget.limit)}`, r.budget.exceeded ? h('span', { class: 'badge bad' }, 'exhausted') : null),
      h('td', { class: 'num' }, fmt.num(r.last_score, 3)),
      h('td', {}, r.last_grader ? `${r.last_grader} ${fmt.short(r.last_grader_version, 8)}` : '–'),
      h('td', {}, flags.map((/** @type {string} */ f) => h('span', { class: 'badge flag' }, f))),
      h('td', {}, r.door),
      h('td', { class: 'mono' }, r.run ?? ''),
    );
  }

  // door and run last: the columns before them keep their places
  /** @type {[string, number?][]} */
  const ROLLOUT_HEAD = [['trace_id'], ['started'], ['calls', 1], ['budget', 1], ['last score', 1], ['grader'], ['integrity'], ['door'], ['run']];

  /** @type {Refresh} */
  async function refreshRollouts(stale) {
    void loadTools().catch(() => {});
    // Only the first page refreshes; pages loaded with "More" stay as they are.
    if ($('rollouts-table').dataset.paged === '1') return;
    const q = filterQuery();
    const filters = q.toString();
    q.set('limit', '50');
    const page = await api(`/v1/rollouts?${q}`);
    if (stale() || $('rollouts-table').dataset.paged === '1') return;
    noteRuns(page.rollouts.map((/** @type {Reply} */ r) => r.run));
    table($('rollouts-table'), ROLLOUT_HEAD, page.rollouts.map(rolloutRow));
    $('rollouts-table').dataset.filters = filters;
    $('rollouts-table').dataset.count = String(page.rollouts.length);
    $('more').hidden = !page.next_cursor;
    $('more').dataset.cursor = page.next_cursor ?? '';
  }

  async function more() {
    const q = filterQuery();
    q.set('limit', '50');
    q.set('cursor', $('more').dataset.cursor ?? '');
    const page = await api(`/v1/rollouts?${q}`);
    $('rollouts-table').dataset.paged = '1';
    /** @type {HTMLElement} */ ($('rollouts-table').querySelector('tbody')).append(...page.rollouts.map(rolloutRow));
    $('more').hidden = !page.next_cursor;
    $('more').dataset.cursor = page.next_cursor ?? '';
  }

  function applyFilters() {
    $('rollouts-table').dataset.paged = '';
    const q = filterQuery().toString();
    location.hash = `#/rollouts${q ? `?${q}` : ''}`;
  }

  // ---- one rollout ----------------------------------------------------------------------------

  /** @type {(text: string | null | undefined) => HTMLElement} */
  const pre = (text) => h('pre', { class: 'mono' }, text ?? '');
  /** Most characters of one text shown; a row, an answer or an argument can be megabytes. */
  const CLIP = 10_000;
  /** Most fields of a row shown. */
  const MAX_FIELDS = 30;

  /** A text as shown: its first CLIP characters, and a note saying how much was left out. */
  /**
   * @param {string | null | undefined} text
   * @returns {HTMLElement[]}
   */
  function clipped(text) {
    const s = text ?? '';
    if (s.length <= CLIP) return [pre(s)];
    const note = `… ${(s.length - CLIP).toLocaleString()} more characters not shown (the whole record: GET /v1/rollouts/{trace_id}, or export)`;
    return [pre(s.slice(0, CLIP)), h('div', { class: 'clipped' }, note)];
  }
  /** @type {(label: string, text: string | null | undefined) => HTMLElement} */
  const fold = (label, text) => (text && text.length > 160 ? h('details', {}, h('summary', {}, label), ...clipped(text)) : pre(text));
  /** @type {(name: string, text: string, attrs?: Record<string, string>) => HTMLElement} */
  const field = (name, text, attrs = {}) => h('div', { class: 'field', ...attrs }, h('div', { class: 'name' }, name), ...clipped(text));
  /** @type {(v: unknown) => string} */
  const asText = (v) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));

  /** The row: its prompt (the messages), then its other fields, which the grader reads as `item`. */
  /**
   * @param {Record<string, any> | null} item
   * @returns {HTMLElement[]}
   */
  function renderRow(item) {
    if (!item || Object.keys(item).length === 0) return [h('p', { class: 'muted' }, 'no row recorded (the trainer sent an empty item)')];
    const out = [];
    if (Array.isArray(item.messages)) {
      const text = item.messages.map((/** @type {any} */ m) => `${m && m.role ? m.role : '?'}: ${asText(m && m.content !== undefined ? m.content : m)}`).join('\n\n');
      out.push(field('prompt (messages)', text, { 'data-field': 'messages' }));
    }
    const fields = Object.entries(item).filter(([k]) => k !== 'messages' && k !== 'tools');
    for (const [k, v] of fields.slice(0, MAX_FIELDS)) out.push(field(k, asText(v), { 'data-field': k }));
    if (fields.length > MAX_FIELDS) out.push(h('div', { class: 'clipped' }, `… ${fields.length - MAX_FIELDS} more fields not shown`));
    if (Array.isArray(item.tools)) {
      const names = item.tools.map((/** @type {any} */ t) => (t && (t.name || (t.function && t.function.name))) || '?');
      out.push(field('tools offered', names.join(', ')));
    }
    return out;
  }

  /** The final answer as the trainer's last grade (else the last grade) received it, with its score. */
  /**
   * @param {Reply[]} grades
   * @returns {HTMLElement[]}
   */
  function renderAnswer(grades) {
    const newestFirst = [...grades].reverse();
    const g = newestFirst.find((x) => x.source === 'endpoint') ?? newestFirst[0];
    if (!g) return [h('p', { class: 'muted' }, 'not graded yet: the final answer comes with the grade')];
    const sample = g.sample && typeof g.sample === 'object' ? g.sample : {};
    const answer = typeof sample.output_text === 'string' ? sample.output_text : asText(g.sample ?? null);
    const ok = g.status === 'ok';
    return [
      field('final answer (sample.output_text)', answer, { 'data-field': 'answer' }),
      h(
        'div',
        { class: 'field' },
        h('div', { class: 'name' }, `score, by ${g.grader} ${fmt.short(g.grader_version, 8)}`),
        ok ? h('span', { class: 'score', 'data-score': g.score }, fmt.num(g.score, 4)) : h('span', { class: 'badge bad' }, 'error: not scored'),
        ' ',
        Object.entries(g.subscores || {}).map(([k, v]) => h('span', { class: 'badge' }, `${k} ${fmt.num(v, 3)}`)),
      ),
      field(ok ? 'explanation' : 'error', (ok ? g.explanation : g.error) ?? '–', { 'data-field': ok ? 'explanation' : 'error' }),
    ];
  }

  /**
   * Empties the rollout view before another rollout loads, so the previous one's row, answer and
   * score never stand under the new address while its request is in flight.
   * @param {string} traceId
   */
  function clearRollout(traceId) {
    delete $('rollout').dataset.traceId;
    $('rollout-title').replaceChildren('Rollout ', h('span', { class: 'mono' }, traceId), ' (loading)');
    for (const id of ['rollout-cards', 'rollout-row', 'rollout-answer', 'rollout-flags', 'grades-table', 'calls-table']) $(id).replaceChildren();
  }

  /**
   * @param {string} traceId
   * @param {() => boolean} stale
   */
  async function refreshRollout(traceId, stale) {
    const r = await api(`/v1/rollouts/${encodeURIComponent(traceId)}`);
    if (stale()) return;
    const snapshot = JSON.stringify(r);
    if (snapshot === state.lastRollout) return; // unchanged: keep open <details> as they are
    state.lastRollout = snapshot;
    $('rollout').dataset.traceId = traceId;
    $('rollout-title').replaceChildren('Rollout ', h('span', { class: 'mono' }, r.trace_id));
    const lastOk = [...r.grades].reverse().find((g) => g.status === 'ok');
    $('rollout-cards').replaceChildren(
      card('started', fmt.time(r.created_at)),
      card('last activity', fmt.time(r.updated_at)),
      card('tool calls', r.calls.length),
      card('budget used', `${fmt.num(r.budget.used)} / ${fmt.num(r.budget.limit)}${r.budget.exceeded ? ' (exhausted)' : ''}`, r.budget.exceeded),
      card('score', lastOk ? fmt.num(lastOk.score, 4) : 'not graded'),
      card('run', r.run ?? 'none'),
    );
    $('rollout-row').replaceChildren(...renderRow(r.item));
    $('rollout-answer').replaceChildren(...renderAnswer(r.grades));
    $('rollout-flags').replaceChildren(
      ...r.integrity_flags.map((/** @type {Reply} */ f) =>
        h(
          'div',
          { class: 'flagbox' },
          h('span', { class: 'badge flag' }, f.kind),
          ` ${f.events} event${f.events === 1 ? '' : 's'}, first ${fmt.time(f.first_at)}${f.call_id ? ` (call ${f.call_id})` : ''}: `,
          h('span', { class: 'mono' }, f.detail),
        ),
      ),
    );
    table(
      $('grades-table'),
      [['at'], ['grader'], ['version'], ['source'], ['score', 1], ['subscores'], ['explanation or error']],
      r.grades.map((/** @type {Reply} */ g) =>
        h(
          'tr',
          {},
          h('td', {}, fmt.time(g.created_at)),
          h('td', {}, g.grader),
          h('td', { class: 'mono', title: g.grader_version }, fmt.short(g.grader_version, 12)),
          h('td', {}, g.source),
          h('td', { class: 'num' }, g.status === 'ok' ? fmt.num(g.score, 4) : h('span', { class: 'badge bad' }, 'error')),
          h('td', {}, Object.entries(g.subscores || {}).map(([k, v]) => h('span', { class: 'badge' }, `${k} ${fmt.num(v, 3)}`))),
          h('td', {}, fold('show', g.status === 'ok' ? g.explanation : g.error)),
        ),
      ),
    );
    table(
      $('calls-table'),
      [['seq', 1], ['tool'], ['outcome'], ['started'], ['ms', 1], ['cost', 1], ['arguments'], ['output']],
      r.calls.map((/** @type {Reply} */ c) =>
        h(
          'tr',
          {},
          h('td', { class: 'num' }, c.seq),
          h('td', { class: 'mono' }, c.tool),
          h('td', {}, h('span', { class: c.status === 'ok' ? 'badge good' : 'badge bad' }, c.status === 'budget_exceeded' ? 'budget_exhausted' : c.status)),
          h('td', {}, fmt.time(c.started_at)),
          h('td', { class: 'num' }, fmt.num(c.duration_ms, 1)),
          h('td', { class: 'num' }, c.cost),
          h('td', {}, fold('arguments', c.arguments)),
          h('td', {}, fold(`output${c.truncated ? ' (truncated)' : ''}`, c.output)),
        ),
      ),
    );
  }

  // ---- wiring ---------------------------------------------------------------------------------

  $('signin-button').addEventListener('click', () => void signIn());
  $('key').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') void signIn();
  });
  $('signout').addEventListener('click', () => signOut());
  $('curve-window').addEventListener('change', () => route());
  $('run').addEventListener('change', () => {
    setRun($field('run').value);
    // The list's URL carries its filters (the run too); the other views read it from the tab.
    if ($('rollouts').hidden) route();
    else applyFilters();
  });
  for (const name of FILTERS) filterField(name).addEventListener('change', applyFilters);
  $('filter-clear').addEventListener('click', () => {
    for (const name of FILTERS) filterField(name).value = '';
    applyFilters();
  });
  $('more').addEventListener('click', () => void more().catch((e) => setStatus(e.message, true)));
  window.addEventListener('hashchange', () => {
    $('rollouts-table').dataset.paged = '';
    route();
  });
  route();
})();
