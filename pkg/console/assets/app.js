// schemaq console: one module, no dependencies. Every view is a path
// (History API, plain links), every datum comes from the HTTP API with
// the token the user typed, and everything users wrote (doc sections,
// comments, SQL, names) is put in the page as text, never as markup.

const view = document.getElementById('view');
const crumbs = document.getElementById('crumbs');
const tokenKey = 'schemaq.token';
const historyKey = (db) => 'schemaq.questions.' + db;

// h builds an element: attrs are properties set on it (never HTML), and
// children are nodes or strings, which become text.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'for') el.htmlFor = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k.startsWith('aria-') || k.startsWith('data-') || k === 'role') el.setAttribute(k, v);
    else el[k] = v;
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// link is an internal link the router follows.
const link = (path, text, attrs) => h('a', { href: path, ...attrs }, text);
const dbPath = (db, ...rest) => '/db/' + [db, ...rest].map(encodeURIComponent).join('/');

// api calls the HTTP API with the token, and turns an error reply into
// a thrown Error naming its code.
async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  const token = sessionStorage.getItem(tokenKey);
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit' });
  let data;
  try {
    data = await resp.json();
  } catch {
    throw new Error(`${resp.status} ${resp.statusText}: the reply is not JSON`);
  }
  if (data && data.error) {
    const e = new Error(data.error.message);
    e.code = data.error.code;
    throw e;
  }
  if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
  return data;
}

function setCrumbs(...parts) {
  crumbs.replaceChildren(...parts.flatMap((p, i) => (i ? [h('span', { 'aria-hidden': 'true' }, ' / '), p] : [p])));
}

// show puts nodes in the view; arrays among them are spread, as h does
// with children (replaceChildren would print an array as text).
function show(...nodes) {
  view.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== undefined && n !== null && n !== false));
  view.focus({ preventScroll: true });
}

function failure(err) {
  const hint = err.code === 'unauthorized' || err.code === 'forbidden' ? ' Type a token for this database above.' : '';
  return h('p', { class: 'error', role: 'alert' }, (err.code ? err.code + ': ' : '') + err.message + hint);
}

// ---- views ----

async function home() {
  setCrumbs();
  document.title = 'schemaq';
  const { databases } = await api('GET', '/v1/databases');
  if (!databases.length) {
    return show(h('h1', {}, 'Databases'), h('p', {}, 'No database yet: publish migrations (schemaq publish migrations --db NAME DIR).'));
  }
  show(h('h1', {}, 'Databases'),
    h('p', {}, link('/operations', 'Operations'), h('span', { class: 'muted' }, ': the stream, the daemons and the dead letters (an admin token)')),
    h('ul', { class: 'list' }, databases.map((d) => h('li', {}, link(dbPath(d.name), d.name), h('span', { class: 'muted' }, ` version ${d.version}`)))));
}

function questionForm(db, mode, q) {
  const input = h('input', { id: 'q', type: 'search', name: 'q', value: q || '', required: true, placeholder: 'Which customers have unpaid orders?' });
  const select = h('select', { id: 'mode', name: 'mode' },
    h('option', { value: 'search', selected: mode !== 'ask' }, 'Search'),
    h('option', { value: 'ask', selected: mode === 'ask' }, 'Ask (writes SQL)'));
  return h('form', {
    class: 'ask', role: 'search',
    onsubmit: (ev) => {
      ev.preventDefault();
      go(dbPath(db, select.value) + '?q=' + encodeURIComponent(input.value));
    },
  }, h('label', { for: 'q' }, 'Question'), input, h('label', { for: 'mode', class: 'sr' }, 'What to do'), select, h('button', { type: 'submit' }, 'Go'));
}

function remember(db, mode, q) {
  const list = JSON.parse(sessionStorage.getItem(historyKey(db)) || '[]').filter((e) => !(e.q === q && e.mode === mode));
  list.unshift({ q, mode });
  sessionStorage.setItem(historyKey(db), JSON.stringify(list.slice(0, 20)));
}

async function database(db, params) {
  if (params.get('q')) {
    // The question form, submitted without its script's handler (a
    // browser's own submit), lands here: on to the view it asks for.
    const mode = params.get('mode') === 'ask' ? 'ask' : 'search';
    history.replaceState(null, '', dbPath(db, mode) + '?q=' + encodeURIComponent(params.get('q')));
    return render();
  }
  setCrumbs(link(dbPath(db), db));
  document.title = db + ' · schemaq';
  const past = JSON.parse(sessionStorage.getItem(historyKey(db)) || '[]');
  const filter = h('input', { id: 'filter', type: 'search', placeholder: 'a table, or a name it had', value: params.get('table') || '' });
  const tableForm = h('form', {
    class: 'filter',
    onsubmit: (ev) => {
      ev.preventDefault();
      if (filter.value.trim()) go(dbPath(db, 'tables', filter.value.trim()));
    },
  }, h('label', { for: 'filter' }, 'Find a table'), filter, h('button', { type: 'submit' }, 'Open'));
  const list = h('ul', { class: 'list tables' });
  const more = h('p', {});
  // Typing narrows the tables listed to those whose name holds the text;
  // Open goes to the table of that name, current or former.
  const narrow = () => {
    const want = filter.value.trim().toLowerCase();
    for (const li of list.children) li.hidden = want !== '' && !li.dataset.name.includes(want);
  };
  filter.addEventListener('input', narrow);
  show(h('h1', {}, db), sectionNav(db, ''), questionForm(db, 'search', ''),
    past.length ? h('section', {}, h('h2', {}, 'Asked in this session'),
      h('ul', { class: 'list' }, past.map((e) => h('li', {}, link(dbPath(db, e.mode) + '?q=' + encodeURIComponent(e.q), e.q), h('span', { class: 'muted' }, ' ' + e.mode))))) : '',
    h('section', {}, h('h2', {}, 'Tables and views'), tableForm, list, more));
  const page = async (after) => {
    const r = await api('POST', '/v1/tables', { database: db, limit: 200, after });
    for (const t of r.tables) {
      const li = h('li', {}, link(dbPath(db, 'tables', t.name), t.name), h('span', { class: 'muted' }, ` ${t.view ? 'view, ' : ''}${t.columns} columns`), t.comment ? h('span', { class: 'comment' }, ' — ' + t.comment) : '');
      li.dataset.name = t.name.toLowerCase();
      list.append(li);
    }
    narrow();
    more.replaceChildren(`${list.children.length} of ${r.total} (catalog version ${r.version}, index at ${r.indexed})`);
    if (r.next) more.append(' ', h('button', { type: 'button', onclick: () => page(r.next) }, 'More'));
    if (r.drift_total) more.append(h('p', { class: 'warning' }, `${r.drift_total} statement(s) of the history the catalog could not follow: see a table's page for its notes.`));
  };
  await page('');
}

// stages are the ranks an explain record carries, in pipeline order.
const stages = [
  ['bm25_rank', 'BM25'], ['knn_rank', 'vector'], ['hint_rank', 'hints'], ['identifier_rank', 'identifier'],
  ['example_rank', 'examples'], ['doc_rank', 'docs'], ['schema_route_rank', 'schema routing'],
  ['fused_rank', 'fused'], ['schema_rank', 'rescored'], ['final_rank', 'final'],
];

// explainPicture draws each result's way through the stages: one bar a
// stage, longer for a better rank, labelled with the rank.
function explainPicture(results, explain) {
  if (!Array.isArray(explain) || !explain.length) return '';
  const byName = new Map(explain.map((e) => [e.kind + '\u0000' + e.name, e]));
  const rows = results.map((r) => {
    const e = byName.get(r.kind + '\u0000' + r.name);
    if (!e) return null;
    const cells = stages.map(([key]) => {
      const rank = e[key];
      const bar = h('div', { class: 'bar' + (rank ? '' : ' none') });
      bar.style.width = rank ? Math.max(8, 100 / Math.sqrt(rank)) + '%' : '0';
      return h('td', {}, bar, h('span', { class: 'rank' }, rank ? String(rank) : '–'));
    });
    const why = [];
    if (e.identifier) why.push('named as ' + e.identifier);
    if (e.example) why.push('voted by example ' + e.example);
    if (e.doc) why.push('named by doc ' + e.doc);
    if (e.lifted_to) why.push('lifted by a join');
    if (e.bridge) why.push(e.bridge);
    if (e.placed) why.push(e.placed);
    return h('tr', {}, h('th', { scope: 'row' }, r.name, why.length ? h('div', { class: 'muted' }, why.join('; ')) : ''), cells);
  }).filter(Boolean);
  return h('section', {}, h('h2', {}, 'Why each result, stage by stage'),
    h('div', { class: 'scroll' }, h('table', { class: 'explain' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'result'), stages.map(([, label]) => h('th', { scope: 'col' }, label)))),
      h('tbody', {}, rows))),
    h('p', { class: 'muted' }, 'Each bar is a rank: the longer, the better; – the stage did not rank it.'));
}

function resultList(db, results) {
  return h('ol', { class: 'results' }, results.map((r) => h('li', {},
    h('div', { class: 'head' },
      h('span', { class: 'kind' }, r.kind),
      r.kind === 'table' || r.kind === 'view' ? link(dbPath(db, 'tables', r.name), r.name) : h('span', {}, r.title || r.name),
      r.bridge ? h('span', { class: 'bridge' }, r.bridge) : h('span', { class: 'muted' }, ' score ' + Number(r.score).toFixed(3)),
      r.placed ? h('span', { class: 'muted placed' }, ' · ' + r.placed) : ''),
    r.text ? h('details', {}, h('summary', {}, 'DDL and text'), h('pre', {}, r.text)) : '')));
}

function notes(reply) {
  const out = [];
  for (const w of reply.warnings || []) out.push(h('p', { class: 'warning' }, w));
  if (reply.ambiguous && reply.schemas) {
    out.push(h('p', { class: 'warning' }, 'The question fits several schemas: ' + reply.schemas.map((s) => `${s.schema} (${Math.round(s.share * 100)}%)`).join(', ')));
  }
  return out;
}

// questionPage starts a search or ask page: crumbs, title and the
// question form with busy under it until the reply. It returns the
// question ('' when none: the form alone) and the page's head, to show
// again above the reply.
function questionPage(db, mode, title, busy, params) {
  const q = params.get('q') || '';
  setCrumbs(link(dbPath(db), db), h('span', {}, mode));
  document.title = q + ' · ' + db;
  const head = () => [h('h1', {}, title + ' ' + db), questionForm(db, mode, q)];
  show(...head(), h('p', {}, busy));
  if (q) remember(db, mode, q);
  return { q, head };
}

async function search(db, params) {
  const { q, head } = questionPage(db, 'search', 'Search', 'Searching…', params);
  if (!q) return;
  const k = Math.min(50, Math.max(1, Number(params.get('k')) || 10));
  const r = await api('POST', '/v1/search', { database: db, question: q, k, explain: true });
  show(...head(), notes(r),
    h('section', {}, h('h2', {}, `${r.results.length} result(s)`), resultList(db, r.results)),
    explainPicture(r.results, r.explain),
    r.query_terms ? h('p', { class: 'muted' }, 'Terms searched: ' + r.query_terms.map((t) => t.term + (t.why ? ` (${t.why})` : '')).join(', ')) : '');
}

async function ask(db, params) {
  const { q, head } = questionPage(db, 'ask', 'Ask', 'Asking…', params);
  if (!q) return;
  const r = await api('POST', '/v1/ask', { database: db, question: q, explain: true });
  const parts = [...head(), notes(r)];
  if (r.retrieval_only || !r.sql) {
    parts.push(h('p', { class: 'warning' }, 'No SQL: this daemon has no LLM gateway, so it answers with the context a model would get.'));
  } else {
    parts.push(h('section', { class: 'sql' }, h('h2', {}, 'SQL, checked by the guard'), h('pre', { id: 'sql' }, r.sql),
      r.explanation ? h('p', {}, r.explanation) : '', feedbackForm(db, q, r)));
  }
  if (r.rejected_sql) parts.push(h('details', {}, h('summary', {}, 'SQL the guard refused'), h('pre', {}, r.rejected_sql)));
  parts.push(h('section', {}, h('h2', {}, 'Context'), resultList(db, r.context || [])), explainPicture(r.context || [], r.explain));
  show(...parts);
}

// feedbackForm hands the SQL back as accepted, or corrected, through
// POST /v1/feedback, as `schemaq feedback` does.
function feedbackForm(db, question, reply) {
  const status = h('p', { role: 'status' });
  const edit = h('textarea', { id: 'corrected', rows: 6, value: reply.sql });
  const send = async (corrected) => {
    status.replaceChildren('Sending…');
    try {
      const r = await api('POST', '/v1/feedback', { database: db, question, sql: corrected ? edit.value : reply.sql, ask_id: reply.ask_id, corrected, client: 'console' });
      status.replaceChildren(h('span', { class: 'ok' }, `Stored as example ${r.example}` + (r.duplicate ? ' (already stored)' : '') + `, reading ${(r.tables || []).join(', ')}.`));
    } catch (err) {
      status.replaceChildren(failure(err));
    }
  };
  return h('div', { class: 'feedback' },
    h('button', { type: 'button', id: 'accept', onclick: () => send(false) }, 'Accept as an example'),
    h('details', {}, h('summary', {}, 'Correct it'), h('label', { for: 'corrected' }, 'Corrected SQL'), edit,
      h('button', { type: 'button', id: 'send-corrected', onclick: () => send(true) }, 'Send the correction')),
    status);
}

// refLink links the table a reference names: the right side of
// "customer_id → public.customers.id", the left of
// "public.orders.customer_id → id".
const refLink = (db, text) => {
  const right = text.split('→').pop();
  const m = /[A-Za-z_][\w$]*\.[A-Za-z_][\w$]*/.exec(right.includes('.') ? right : text);
  return m ? h('span', {}, text + ' ', link(dbPath(db, 'tables', m[0]), 'open')) : text;
};

async function table(db, name) {
  setCrumbs(link(dbPath(db), db), h('span', {}, name));
  document.title = name + ' · ' + db;
  const r = await api('POST', '/v1/tables', { database: db, table: name });
  const t = r.tables[0];
  const parts = [];
  if (r.renamed_to) parts.push(h('p', { class: 'warning' }, `${r.renamed_to.from} was renamed to `, link(dbPath(db, 'tables', r.renamed_to.to), r.renamed_to.to), r.renamed_to.source ? ` in ${r.renamed_to.source}` : '', '.'));
  const list = (title, items, f) => (items && items.length ? h('section', {}, h('h2', {}, title), h('ul', { class: 'list' }, items.map((x) => h('li', {}, f ? f(x) : x)))) : '');
  show(h('h1', {}, t.name, t.view ? h('span', { class: 'muted' }, ' (view)') : ''), ...parts,
    t.comment ? h('p', { class: 'comment' }, t.comment) : '',
    t.view ? '' : h('p', {}, link(dbPath(db, 'graph', t.name) + '?hops=2', 'Join graph around ' + t.name)),
    h('section', {}, h('h2', {}, 'DDL'), h('pre', { class: 'ddl' }, t.ddl || '')),
    list('References', t.references, (x) => refLink(db, x)),
    list('Referenced by', t.referenced_by, (x) => refLink(db, x)),
    list('Joins the names imply', t.joins),
    list('Enums', t.enums),
    list('Former names', t.renamed),
    list('History', t.history),
    list('Drift notes (the whole catalog)', (r.drift || []).map((d) => `${d.source} statement ${d.statement} (line ${d.line}): ${d.error}`)));
}

// ---- join graph ----

const svgNS = 'http://www.w3.org/2000/svg';

// svg builds an SVG element; attrs are attributes (numbers and names we
// computed), children nodes or text.
function svg(tag, attrs, ...children) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// layout places the table asked about in the middle and each ring of
// tables one join further out on a circle of its own, each table near
// the one that brought it in, so that few joins cross.
function layout(graph) {
  const pos = new Map();
  const parent = new Map();
  for (const j of graph.joins) {
    for (const [a, b] of [[j.from, j.to], [j.to, j.from]]) {
      if (!parent.has(b)) parent.set(b, []);
      parent.get(b).push(a);
    }
  }
  const rings = [];
  for (const t of graph.tables) (rings[t.hops] ||= []).push(t);
  let radius = 0;
  rings.forEach((ring, d) => {
    if (d === 0) {
      pos.set(ring[0].name, { x: 0, y: 0, angle: 0 });
      return;
    }
    radius = Math.max(radius + 130, (ring.length * 26) / (2 * Math.PI));
    const angleOf = (t) => {
      const ps = (parent.get(t.name) || []).map((p) => pos.get(p)).filter(Boolean);
      return ps.length ? ps[0].angle : 0;
    };
    ring.sort((a, b) => angleOf(a) - angleOf(b) || a.name.localeCompare(b.name));
    ring.forEach((t, i) => {
      const angle = (2 * Math.PI * i) / ring.length + (d % 2 ? 0 : Math.PI / ring.length);
      pos.set(t.name, { x: radius * Math.cos(angle), y: radius * Math.sin(angle), angle });
    });
  });
  return { pos, radius };
}

function graphPicture(db, graph) {
  const { pos, radius } = layout(graph);
  const pad = 110;
  const size = 2 * (radius + pad);
  const edges = graph.joins.map((j) => {
    const a = pos.get(j.from);
    const b = pos.get(j.to);
    if (!a || !b) return null;
    return svg('line', { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: j.declared ? 'edge declared' : 'edge inferred' },
      svg('title', {}, `${j.from}(${j.from_columns.join(', ')}) → ${j.to}(${j.to_columns.join(', ')})${j.declared ? '' : ', implied by the names'}`));
  });
  const nodes = graph.tables.map((t) => {
    const p = pos.get(t.name);
    const label = t.name.length > 28 ? t.name.slice(0, 27) + '…' : t.name;
    return svg('a', { href: dbPath(db, 'graph', t.name) + '?hops=' + (new URLSearchParams(location.search).get('hops') || 2), class: 'node hops' + t.hops },
      svg('title', {}, `${t.name}: ${t.columns} columns${t.comment ? ' — ' + t.comment : ''}`),
      svg('circle', { cx: p.x, cy: p.y, r: t.hops ? 7 : 11 }),
      svg('text', { x: p.x, y: p.y - 14, 'text-anchor': 'middle' }, label));
  });
  return svg('svg', { viewBox: `${-size / 2} ${-size / 2} ${size} ${size}`, role: 'img', 'aria-label': `Join graph around ${graph.tables[0].name}`, class: 'graph' },
    svg('g', {}, edges.filter(Boolean)), svg('g', {}, nodes));
}

async function graphView(db, name, params) {
  const hops = Math.min(3, Math.max(1, Number(params.get('hops')) || 2));
  setCrumbs(link(dbPath(db), db), link(dbPath(db, 'tables', name), name), h('span', {}, 'join graph'));
  document.title = 'joins of ' + name + ' · ' + db;
  const r = await api('POST', '/v1/tables', { database: db, table: name, neighbourhood: hops });
  const g = r.graph;
  const center = r.tables[0].name;
  const hopLinks = [1, 2, 3].map((n) => (n === hops ? h('strong', {}, `${n} join${n > 1 ? 's' : ''}`) : link(dbPath(db, 'graph', center) + '?hops=' + n, `${n} join${n > 1 ? 's' : ''}`)));
  const declared = g.joins.filter((j) => j.declared).length;
  show(h('h1', {}, 'Joins around ' + center),
    h('p', {}, 'Out to: ', hopLinks.flatMap((x, i) => (i ? [' · ', x] : [x]))),
    h('p', { class: 'muted' }, `${g.tables.length} tables, ${declared} foreign keys (solid), ${g.joins.length - declared} joins the column names imply (dashed). Select a table to center on it; its page is linked below.`),
    g.truncated ? h('p', { class: 'warning' }, `More tables are that near than the ${g.tables.length} shown: the nearest are kept.`) : '',
    h('div', { class: 'graph-box' }, graphPicture(db, g)),
    h('section', {}, h('h2', {}, 'Joins'),
      h('ul', { class: 'list joins' }, g.joins.map((j) => h('li', { class: j.declared ? '' : 'muted' },
        `${j.from}(${j.from_columns.join(', ')}) → ${j.to}(${j.to_columns.join(', ')})`, j.declared ? '' : ' (implied)')))),
    h('section', {}, h('h2', {}, 'Tables'),
      h('ul', { class: 'list' }, g.tables.map((t) => h('li', {}, link(dbPath(db, 'tables', t.name), t.name), h('span', { class: 'muted' }, ` ${t.hops} join(s) away, ${t.columns} columns`))))));
}

// ---- examples and docs ----

// confirmButton acts on a second press: the first asks, in the button
// itself, so the page needs no dialog (a keyboard and a test drive it
// alike).
function confirmButton(label, ask, act) {
  const b = h('button', {
    type: 'button', class: 'danger', 'aria-label': label,
    onclick: async () => {
      if (b.dataset.armed !== '1') {
        b.dataset.armed = '1';
        b.textContent = ask;
        return;
      }
      b.dataset.armed = '';
      b.textContent = 'Delete';
      await act(b);
    },
  }, 'Delete');
  return b;
}

// sectionNav links a database's pages.
function sectionNav(db, here) {
  const pages = [['', 'Tables'], ['examples', 'Examples'], ['docs', 'Docs'], ['check', 'Check a migration']];
  return h('nav', { class: 'tabs', 'aria-label': db + ' pages' }, pages.map(([p, label]) => (p === here
    ? h('span', { 'aria-current': 'page' }, label)
    : link(p ? dbPath(db, p) : dbPath(db), label))));
}

function exampleItem(db, ex, status) {
  const who = [ex.origin === 'feedback' ? (ex.corrected ? 'corrected feedback' : 'accepted feedback') : 'published',
    ex.author ? 'by ' + ex.author : '', ex.client ? 'through ' + ex.client : '', ex.time ? 'on ' + ex.time.slice(0, 10) : '',
    ex.approved_by ? '· approved by ' + ex.approved_by : ''].filter(Boolean).join(' ');
  // Feedback is a caller's word until a person approves it; then it is
  // the team's own, as a published example is.
  const approve = ex.origin === 'feedback' && !ex.approved_by ? h('button', {
    type: 'button', class: 'approve', 'aria-label': 'Approve example ' + ex.id,
    onclick: async () => {
      approve.disabled = true;
      try {
        const r = await api('POST', '/v1/examples/approve', { database: db, ids: [ex.id] });
        status.replaceChildren(h('span', { class: 'ok' }, `Approved ${r.approved.join(', ')} as ${r.approved_by}: it counts as the team's own now.`));
        approve.replaceWith(h('span', { class: 'ok' }, 'approved by ' + r.approved_by));
      } catch (err) {
        approve.disabled = false;
        status.replaceChildren(failure(err));
      }
    },
  }, 'Approve') : '';
  const del = confirmButton('Delete example ' + ex.id, 'Press again to delete', async (b) => {
    b.disabled = true;
    try {
      const r = await api('POST', '/v1/examples/delete', { database: db, ids: [ex.id] });
      status.replaceChildren(h('span', { class: 'ok' }, `Deleted ${r.deleted.join(', ')} (stream seq ${r.seqs.join(', ')}); retrieval stops showing it once the workers apply the delete.`));
      item.classList.add('gone');
    } catch (err) {
      b.disabled = false;
      status.replaceChildren(failure(err));
    }
  });
  const item = h('li', { class: 'record', 'data-id': ex.id },
    h('div', { class: 'head' }, h('strong', {}, ex.question), ' ', h('span', { class: 'muted' }, ex.id)),
    h('p', { class: 'muted' }, who + `, stream seq ${ex.seq}`),
    ex.stale ? h('p', { class: 'warning' }, 'Stale: ' + ex.stale) : '',
    h('pre', {}, ex.sql), h('div', { class: 'actions' }, approve, del));
  return item;
}

// examples lists a page of examples at a time, as docs does.
async function examples(db, params) {
  setCrumbs(link(dbPath(db), db), h('span', {}, 'examples'));
  document.title = 'examples · ' + db;
  const stale = params.get('stale') === '1';
  const status = h('div', { role: 'status' });
  const version = h('span', { class: 'muted' });
  const list = h('ol', { class: 'records' });
  const more = h('p', { class: 'more' });
  const page = async (afterSeq, afterID) => {
    const r = await api('POST', '/v1/examples', { database: db, stale, after_seq: afterSeq, after_id: afterID });
    version.textContent = ` · catalog version ${r.version}`;
    r.examples.forEach((ex) => list.append(exampleItem(db, ex, status)));
    if (!r.total) {
      more.replaceChildren(stale ? 'No example is stale: each one fits the catalog.' : 'No example yet: publish some (schemaq publish examples) or accept an ask\'s SQL.');
      return;
    }
    more.replaceChildren(`${list.children.length} of ${r.total} ${stale ? 'stale ' : ''}example(s)`);
    if (r.next_id) more.append(' ', h('button', { type: 'button', onclick: () => page(r.next_seq, r.next_id) }, 'More'));
  };
  show(h('h1', {}, 'Examples of ' + db), sectionNav(db, 'examples'),
    h('p', {}, stale ? link(dbPath(db, 'examples'), 'Show every example') : link(dbPath(db, 'examples') + '?stale=1', 'Show only the stale ones'), version),
    status, list, more);
  await page(0, '');
}

function docItem(d) {
  return h('li', { class: 'record' },
    h('h2', {}, d.title || d.doc_id), h('p', { class: 'muted' }, `${d.doc_id}, ${d.bytes} bytes, stream seq ${d.seq}`),
    d.tags ? h('p', { class: 'tags' }, Object.entries(d.tags).map(([k, v]) => h('span', { class: 'tag' }, k + '=' + v))) : '',
    h('details', {}, h('summary', {}, `${d.sections.length} section(s), as retrieval indexes them`),
      d.sections.map((sec) => h('section', { class: 'doc-section' }, h('h3', {}, sec.heading), h('pre', {}, sec.text)))));
}

// docs lists a page of docs at a time: a database's docs may run to
// gigabytes, and the daemon sends them in pages of a few MiB.
async function docs(db) {
  setCrumbs(link(dbPath(db), db), h('span', {}, 'docs'));
  document.title = 'docs · ' + db;
  const list = h('ol', { class: 'records' });
  const more = h('p', { class: 'more' });
  const page = async (after) => {
    const r = await api('POST', '/v1/docs', { database: db, after_seq: after });
    r.docs.forEach((d) => list.append(docItem(d)));
    if (!r.total) {
      more.replaceChildren('No doc yet: publish some (schemaq publish docs).');
      return;
    }
    more.replaceChildren(`${list.children.length} of ${r.total} doc(s)`);
    if (r.next_seq) more.append(' ', h('button', { type: 'button', onclick: () => page(r.next_seq) }, 'More'));
  };
  show(h('h1', {}, 'Docs of ' + db), sectionNav(db, 'docs'), list, more);
  await page(0);
}

// ---- check a migration ----

// A check's URL carries its files (file=NAME&sql=TEXT, in order), so a
// report can be shared; one too large for a link is shown, not linked.
const maxCheckURL = 32000;
// maxCheckBytes is the API's bound on a request: a file over it is not
// read into the page at all.
const maxCheckBytes = 1 << 20;

function checkFiles(params) {
  const names = params.getAll('file');
  const sqls = params.getAll('sql');
  return names.map((name, i) => ({ name, sql: sqls[i] || '' }));
}

let fileSeq = 0;

function fileEditor(list, f) {
  const n = ++fileSeq;
  const name = h('input', { id: 'name-' + n, value: f.name, required: true, placeholder: `000${n}_change.sql`, class: 'file-name' });
  const sql = h('textarea', { id: 'sql-' + n, rows: 8, value: f.sql, required: true, class: 'file-sql', placeholder: 'ALTER TABLE …;' });
  const row = h('fieldset', { class: 'file' }, h('legend', {}, 'Migration file'),
    h('label', { for: 'name-' + n }, 'File name'), name, h('label', { for: 'sql-' + n }, 'SQL'), sql,
    h('button', { type: 'button', class: 'secondary', onclick: () => row.remove() }, 'Remove this file'));
  list.append(row);
}

async function checkPage(db, params) {
  setCrumbs(link(dbPath(db), db), h('span', {}, 'check'));
  document.title = 'check · ' + db;
  const files = checkFiles(params);
  const list = h('div', { class: 'files' });
  for (const f of files.length ? files : [{ name: '', sql: '' }]) fileEditor(list, f);
  const upload = h('input', {
    id: 'upload', type: 'file', multiple: true, accept: '.sql,text/plain',
    onchange: async () => {
      // Files are read here, in the browser, and sorted by name as a
      // migration directory is; nothing is sent until Check.
      const picked = [...upload.files].sort((a, b) => a.name.localeCompare(b.name));
      const tooBig = picked.filter((f) => f.size > maxCheckBytes).map((f) => f.name);
      out.replaceChildren(tooBig.length ? failure(new Error(`${tooBig.join(', ')}: over 1 MiB, which is what one check takes in all; not read.`)) : '');
      for (const file of picked) if (file.size <= maxCheckBytes) fileEditor(list, { name: file.name, sql: await file.text() });
      for (const row of [...list.children]) if (!row.querySelector('.file-sql').value.trim() && list.children.length > 1) row.remove();
    },
  });
  const strict = h('input', { id: 'strict', type: 'checkbox', checked: params.get('strict') === '1' });
  const out = h('div', { id: 'report' });
  const form = h('form', {
    class: 'check',
    onsubmit: (ev) => {
      ev.preventDefault();
      const files = [...list.children].map((row) => ({ name: row.querySelector('.file-name').value, sql: row.querySelector('.file-sql').value }));
      const q = new URLSearchParams();
      for (const f of files) {
        q.append('file', f.name);
        q.append('sql', f.sql);
      }
      if (strict.checked) q.set('strict', '1');
      const url = dbPath(db, 'check') + '?' + q;
      if (url.length <= maxCheckURL) return go(url);
      runCheck(db, files, strict.checked, out, false);
    },
  }, list,
  h('p', {}, h('button', { type: 'button', class: 'secondary', onclick: () => fileEditor(list, { name: '', sql: '' }) }, 'Add a file'), ' ',
    h('label', { for: 'upload' }, 'or upload .sql files'), ' ', upload),
  h('p', {}, strict, ' ', h('label', { for: 'strict' }, 'Strict catalog (as workers with --strict-catalog apply)')),
  h('button', { type: 'submit', id: 'run-check' }, 'Check'));
  show(h('h1', {}, 'Check a migration on ' + db), sectionNav(db, 'check'),
    h('p', { class: 'muted' }, 'What `schemaq check` reports: whether PostgreSQL and the catalog take the files, and the examples, docs and views they break. Nothing is published.'),
    form, out);
  if (files.length) await runCheck(db, files, params.get('strict') === '1', out, true);
}

async function runCheck(db, files, strict, out, linked) {
  out.replaceChildren(h('p', {}, 'Checking…'));
  try {
    const r = await api('POST', '/v1/check', { database: db, migrations: files, strict });
    out.replaceChildren(checkReport(r, linked));
  } catch (err) {
    out.replaceChildren(failure(err));
  }
}

function checkReport(r, linked) {
  const items = (title, list, f) => (list && list.length ? h('section', {}, h('h3', {}, title), h('ul', { class: 'list' }, list.map((x) => h('li', {}, f(x))))) : '');
  const f = r.refused;
  return h('section', { class: 'report' },
    h('h2', {}, 'Report'),
    h('p', { class: r.breaks ? 'error' : 'ok', id: 'verdict' }, r.breaks
      ? 'Breaks: publishing these would break what depends on the schema (check exits 3).'
      : 'Passes: nothing that depends on the schema breaks.'),
    h('p', {}, `${r.pending.length} migration(s) would take ${r.database} from version ${r.version} to ${r.after}.`),
    f ? h('p', { class: 'error', id: 'refused' }, f.postgres
      ? `PostgreSQL will refuse migration ${f.seq} (${f.source}), and schemaq would dead-letter it: ${f.error}`
      : `Migration ${f.seq} (${f.source}) would be dead-lettered: ${f.error}`) : '',
    items('Drops', r.dropped, (x) => x),
    items('Renames', r.renamed, (x) => x),
    items('Examples that would go stale', r.examples, (x) => `${x.id} (${x.question}): ${x.reason}`),
    items('Examples that follow a rename', r.followed, (x) => `${x.id} (${x.question}): ${x.reason}`),
    items('Doc sections naming what is dropped', r.docs, (x) => `${x.doc_id}${x.section ? ' § ' + x.section : ''}: ${x.names.join(', ')}`),
    items('Views that would not resolve', r.views, (x) => `${x.view}: ${x.reason}`),
    items('Drift', r.drift, (x) => `${x.source} statement ${x.statement} (line ${x.line}): ${x.error}`),
    linked ? h('p', { class: 'muted' }, 'This page\'s address holds the files: share it to share the report.') : h('p', { class: 'muted' }, 'The files are too large to hold in a link; this report is not shareable.'));
}

// ---- operations ----

function letterRow(l, status) {
  const act = async (what) => {
    for (const b of row.querySelectorAll('button')) b.disabled = true;
    try {
      const r = await api('POST', '/v1/deadletters/' + what, { seq: l.seq });
      status.replaceChildren(h('span', { class: 'ok' }, r.retried ? `Letter ${l.seq} re-sent to ${r.retried}.` : `Letter ${l.seq} deleted${r.event_deleted ? ', and its event from the stream' : ''}.`));
      row.classList.add('gone');
    } catch (err) {
      for (const b of row.querySelectorAll('button')) b.disabled = false;
      status.replaceChildren(failure(err));
    }
  };
  const row = h('tr', { 'data-seq': String(l.seq) },
    h('td', {}, String(l.seq)), h('td', {}, l.database), h('td', {}, l.kind || ''), h('td', {}, l.source || l.subject),
    h('td', { class: 'reason' }, l.reason), h('td', {}, (l.time || '').replace('T', ' ').slice(0, 19)),
    h('td', {}, h('button', { type: 'button', 'aria-label': 'Retry dead letter ' + l.seq, onclick: () => act('retry') }, 'Retry'), ' ',
      confirmButton('Delete dead letter ' + l.seq, 'Press again: its event is never applied', () => act('delete'))));
  return row;
}

function grid(caption, head, rows) {
  return h('table', { class: 'grid' }, h('caption', {}, caption), h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))), h('tbody', {}, rows));
}

// boundLines say how many events the stream keeps of one database, who
// holds the most, and who nears the bound (their publishes are refused
// past it). An admin token sees only its own databases here.
function boundLines(r) {
  const bound = r.stream.max_events_per_database;
  const held = Object.entries(r.events_by_database || {}).sort(([a, x], [b, y]) => y - x || a.localeCompare(b)).slice(0, 5);
  const near = Object.entries(r.near_bound || {}).sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([db, kinds]) => Object.entries(kinds).sort().map(([kind, n]) =>
      h('p', { class: 'warning' }, `Database ${db} holds ${n} ${kind} events of the ${bound} the stream keeps of one database: past it its ${kind} publishes are refused.`)));
  return [
    h('p', {}, bound ? `Events per database: at most ${bound} of each kind (schema, docs, examples).` : 'Events per database: no bound.'),
    held.length ? grid('Databases holding the most events', ['database', 'events'], held.map(([db, n]) => h('tr', {}, h('td', {}, link(dbPath(db), db)), h('td', {}, String(n))))) : [],
    near,
  ];
}

async function operations() {
  setCrumbs(h('span', {}, 'operations'));
  document.title = 'operations · schemaq';
  const r = await api('POST', '/v1/operations', {});
  const status = h('div', { role: 'status' });
  const cats = Object.entries(r.catalogs || {}).sort(([a], [b]) => a.localeCompare(b));
  show(h('h1', {}, 'Operations'),
    h('p', {}, `Stream: ${r.stream.messages} events (${r.stream.bytes} bytes), last seq ${r.stream.last_seq}. Object store: ${r.object_bytes} bytes.`),
    boundLines(r),
    grid('Consumers: how far behind each is', ['consumer', 'pending', 'in flight', 'redelivered', 'delivered up to'],
      r.consumers.map((c) => h('tr', {}, h('td', {}, c.name), h('td', { class: c.pending ? 'warn' : '' }, String(c.pending)), h('td', {}, String(c.ack_pending)), h('td', {}, String(c.redelivered)), h('td', {}, String(c.delivered_seq))))),
    grid('Daemons answering', ['id', 'version', 'gateway', 'store', 'system catalogs'],
      r.daemons.map((d) => h('tr', {}, h('td', {}, d.id), h('td', {}, d.version), h('td', {}, d.gateway || '?'), h('td', {}, d.store || '?'), h('td', {}, d.allow_system_catalogs || '?')))),
    (r.warnings || []).map((w) => h('p', { class: 'warning' }, w)),
    grid('Catalogs', ['database', 'version', 'drift'],
      cats.map(([db, v]) => h('tr', {}, h('td', {}, link(dbPath(db), db)), h('td', {}, String(v)), h('td', {}, String((r.drift || {})[db] || 0))))),
    Object.entries(r.unreadable || {}).map(([db, why]) => h('p', { class: 'error' }, `Catalog ${db} does not decode: ${why}`)),
    h('h2', {}, `Dead letters: ${r.dead_letters}`), status,
    r.letters.length
      ? grid('Dead letters and why', ['seq', 'database', 'kind', 'source', 'reason', 'when', 'action'], r.letters.map((l) => letterRow(l, status)))
      : h('p', {}, 'No dead letter.'));
}

// ---- router ----

const routes = [
  [/^\/$/, () => home()],
  [/^\/db\/([^/]+)\/?$/, (m, p) => database(m[1], p)],
  [/^\/db\/([^/]+)\/search$/, (m, p) => search(m[1], p)],
  [/^\/db\/([^/]+)\/ask$/, (m, p) => ask(m[1], p)],
  [/^\/db\/([^/]+)\/tables\/(.+)$/, (m) => table(m[1], m[2])],
  [/^\/db\/([^/]+)\/graph\/(.+)$/, (m, p) => graphView(m[1], m[2], p)],
  [/^\/db\/([^/]+)\/examples$/, (m, p) => examples(m[1], p)],
  [/^\/db\/([^/]+)\/docs$/, (m) => docs(m[1])],
  [/^\/db\/([^/]+)\/check$/, (m, p) => checkPage(m[1], p)],
  [/^\/operations$/, () => operations()],
];

async function render() {
  const path = location.pathname;
  for (const [re, f] of routes) {
    const m = re.exec(path);
    if (!m) continue;
    const args = m.map((s, i) => (i ? decodeURIComponent(s) : s));
    try {
      await f(args, new URLSearchParams(location.search));
    } catch (err) {
      show(h('h1', {}, 'schemaq'), failure(err));
    }
    return;
  }
  setCrumbs();
  show(h('h1', {}, 'Not found'), h('p', {}, 'No view at ' + path + '. '), link('/', 'Databases'));
}

function go(path) {
  history.pushState(null, '', path);
  render();
}

document.addEventListener('click', (ev) => {
  const a = ev.target.closest('a');
  if (!a || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button !== 0) return;
  // An SVG link (the join graph's tables) has its href as an attribute.
  const url = new URL(a instanceof SVGElement ? a.getAttribute('href') : a.href, location.href);
  if (url.origin !== location.origin) return;
  ev.preventDefault();
  go(url.pathname + url.search);
});
window.addEventListener('popstate', render);

const tokenInput = document.getElementById('token');
tokenInput.value = sessionStorage.getItem(tokenKey) || '';
document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  if (tokenInput.value) sessionStorage.setItem(tokenKey, tokenInput.value);
  else sessionStorage.removeItem(tokenKey);
  render();
});

render();
