/* fastprof HTML report: table, callers/callees, icicle flame graph, source.
 * Self-contained: everything comes from the JSON in #fastprof-data. */
(function () {
  'use strict';

  var D = JSON.parse(document.getElementById('fastprof-data').textContent);
  var VIEW = null;        // the selected view: all threads, a thread, a group of threads
  var TOTAL = 0;          // that view's total profiled time
  var ROW = 18;           // px per flame graph row (matches --row in the CSS)
  var MIN_PX = 0.5;       // narrower frames are not drawn
  var TABLE_LIMIT = 500;  // rows drawn before "show all"

  // ------------------------------------------------------------ helpers
  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === 'class') e.className = attrs[k]; else e.setAttribute(k, attrs[k]);
    }
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function fmtTime(s) {
    if (!(s > 0)) return '0 s';
    var v, u;
    if (s < 1e-6) { v = s * 1e9; u = ' ns'; }
    else if (s < 1e-3) { v = s * 1e6; u = ' \u00b5s'; }
    else if (s < 1) { v = s * 1e3; u = ' ms'; }
    else { v = s; u = ' s'; }
    var digits = v >= 100 ? 0 : v >= 10 ? 1 : 2;
    return v.toFixed(digits) + u;
  }
  function fmtPct(s) {
    if (!(TOTAL > 0)) return '';
    var p = 100 * s / TOTAL;
    return (p >= 10 ? p.toFixed(1) : p.toFixed(2)) + '%';
  }
  function fmtBytes(n) {
    var units = [' B', ' KiB', ' MiB', ' GiB', ' TiB'], v = Math.abs(n), u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    var sign = n < 0 ? '-' : '';
    return sign + (u === 0 ? String(Math.round(v)) : v.toFixed(v < 100 ? 1 : 0)) + units[u];
  }
  // the flame graph's values: seconds, or bytes when drawn by memory (FLAME_BY)
  var FLAME_BY = 'time';
  function fmtFlame(v) { return FLAME_BY === 'time' ? fmtTime(v) : fmtBytes(v); }
  function fmtFlamePct(v) {
    if (FLAME_BY === 'time') return fmtPct(v);
    if (!(ROOT_TOTAL > 0)) return '';
    var p = 100 * v / ROOT_TOTAL;
    return (p >= 10 ? p.toFixed(1) : p.toFixed(2)) + '%';
  }
  function fmtInt(n) {
    n = Math.round(n);
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }
  function fmtCalls(f) {
    return f.nc !== f.cc ? fmtInt(f.nc) + '/' + fmtInt(f.cc) : fmtInt(f.nc);
  }
  // text that may wrap only after '/', '.', ':' or '_' (never inside a word)
  function breakable(tag, attrs, text) {
    var e = el(tag, attrs);
    var parts = String(text).replace(/([\/.:_])/g, '$1\u0000').split('\u0000');
    parts.forEach(function (p, i) {
      if (i) e.appendChild(document.createElement('wbr'));
      e.appendChild(document.createTextNode(p));
    });
    return e;
  }
  function makeRegex(text) {
    if (!text) return null;
    try { return new RegExp(text, 'i'); }
    catch (e) {
      var esc = text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      return new RegExp(esc, 'i');
    }
  }

  // ------------------------------------------------------------ functions
  // Names are shared by every view; numbers, callers and callees are the
  // selected view's (loadView), F lists the functions of that view.
  var ALL = D.functions.map(function (r, i) {
    var f = { i: i, name: r[0], file: r[1], short: r[2], line: r[3], cc: 0, nc: 0, tt: 0, ct: 0,
              callers: [], callees: [] };
    f.where = f.file ? f.short + ':' + f.line : 'built-in';
    f.search = (f.name + ' ' + f.file + ':' + f.line).toLowerCase();
    return f;
  });
  var F = [];

  // ------------------------------------------------------------ summary
  $('title').textContent = D.title;
  function drawSummary() {
    var s = $('summary');
    s.textContent = '';
    function add(label, value, title) {
      if (s.childNodes.length) s.appendChild(document.createTextNode(' \u00b7 '));
      s.appendChild(document.createTextNode(label + ' '));
      var b = el('b', null, value);
      if (title) b.title = title;
      s.appendChild(b);
    }
    var several = VIEW.threads > 1;
    add(several ? 'total profiled time (thread-seconds)' : 'total profiled time', fmtTime(TOTAL),
        several ? 'the sum of the times of ' + VIEW.threads + ' threads, which may have run at the same time' : '');
    add('functions', fmtInt(F.length));
    add('calls', fmtInt(VIEW.total_calls) + (VIEW.primitive_calls !== VIEW.total_calls ?
        ' (' + fmtInt(VIEW.primitive_calls) + ' primitive)' : ''));
    if (D.request) {
      var R = D.request, spent = [];
      // where the request's time went (files of older versions: the duration only)
      if (R.recorded != null) spent.push(fmtTime(R.recorded) + ' in recorded frames');
      if (R.cpu != null) spent.push(fmtTime(R.cpu) + ' CPU');
      if (R.suspended != null) spent.push('suspended ' + fmtTime(R.suspended));
      add('request', R.method + ' ' + R.path + ' \u2192 ' + (R.status || 'no response') + ' in ' +
        fmtTime(R.duration) + (spent.length ? ' (' + spent.join(', ') + ')' : ''),
        spent.length ? 'wall time; the time in its recorded frames (every thread), its threads\' ' +
          'CPU time while on it' + (R.suspended != null ? ', and how long its asyncio task ' +
          'was suspended (awaiting I/O, timers, worker threads or other tasks)' : '') : '');
    }
    if (D.memory) add('memory peak', fmtBytes((D.memory.totals || {}).peak || 0),
        "the most bytes Python's allocators held at once while profiled");
    if (D.clock) add('clock', D.clock);
    if (D.only) add('only', D.only.join(', '), "calls into other Python code are not recorded; their time is in the calling function's own time");
    if (D.fast) add('mode', 'fast', "Python functions only; the time of C functions is in their callers' own time");
    if (D.cost) add('profiler cost', D.cost.replace(/^profiler cost removed: /, 'removed: '), "the profiler's own time, taken out of every time (or not: raw times)");
    if (VIEW.threads) add('threads', fmtInt(VIEW.threads));
    add('written', D.created);
  }

  // ------------------------------------------------------------ flame graph
  // Node 0 is a synthetic root ("all"); tree node k is node k + 1.
  var T, NN, nFunc, nParent, nDepth, nSelf, nFolded, nTotal, nCalls, kids, ROOT_TOTAL;
  function loadTree(t) {
    T = t;
    NN = T.func.length + 1;
    nFunc = new Int32Array(NN); nParent = new Int32Array(NN); nDepth = new Int32Array(NN);
    nSelf = new Float64Array(NN); nFolded = new Float64Array(NN); nTotal = new Float64Array(NN);
    nCalls = new Float64Array(NN);
    kids = [[]];
    nFunc[0] = -1; nParent[0] = -1;
    for (var k = 0; k < T.func.length; k++) {
      var n = k + 1, p = T.parent[k] + 1;
      nFunc[n] = T.func[k]; nParent[n] = p; nSelf[n] = T.self[k]; nFolded[n] = T.folded[k];
      nCalls[n] = T.calls[k]; nDepth[n] = nDepth[p] + 1; kids.push([]);
      kids[p].push(n);
    }
    for (var m = NN - 1; m >= 0; m--) {   // children come after parents
      nTotal[m] += nSelf[m] + nFolded[m];
      if (m > 0) nTotal[nParent[m]] += nTotal[m];
    }
    kids.forEach(function (list) { list.sort(function (a, b) { return nTotal[b] - nTotal[a]; }); });
    ROOT_TOTAL = nTotal[0];
  }

  var flame = $('flame'), tip = $('flame-tip');
  var zoom = 0, selectedFunc = -1, searchRe = null;
  function drawFlameNote() {
    var note = $('flame-note'), parts = [];
    if (!T.exact) {
      note.className = 'note warn';
      parts.push(D.views.length > 1 && VIEW !== D.views[0] && D.views[0].tree.exact ?
        'estimated from this selection\'s caller graph: call paths are recorded for all threads together' :
        'estimated from the caller graph: this profile has no call paths ' +
        '(record them with fastprof --callpaths for exact ones)');
    } else {
      note.className = 'note';
      parts.push('width = ' + FLAME_WIDTH[FLAME_BY] + ' (self + callees); click a frame to zoom, the root to reset');
    }
    if (T.min_percent > 0) parts.push('paths below ' + T.min_percent + '% of the total are folded into their callers');
    // the call paths and the function table should add up to the same time
    if (FLAME_BY === 'time' && TOTAL > 0 && Math.abs(ROOT_TOTAL - TOTAL) > 0.001 * TOTAL) {
      parts.push('the call paths add up to ' + fmtTime(ROOT_TOTAL) + ', the functions\' own times to ' + fmtTime(TOTAL));
    }
    note.textContent = parts.join('; ');
  }

  function nodeLabel(n) { return n === 0 ? 'all' : ALL[nFunc[n]].name; }
  function hash(s) {
    var h = 0;
    for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
    return Math.abs(h);
  }
  // warm hues per file, lightness per function: neighbours stay distinguishable
  function hue(f) {
    var l = 60 + hash(f.name) % 14;
    if (!f.file) return 'hsl(205, 55%, ' + (l + 6) + '%)';   // C functions: blue
    var h = hash(f.file);
    return 'hsl(' + (12 + h % 38) + ', ' + (72 + (h >> 8) % 18) + '%, ' + l + '%)';
  }

  function drawFlame() {
    var W = flame.clientWidth || 800;
    var frag = document.createDocumentFragment();
    var ancestors = [];
    for (var a = zoom; a >= 0; a = nParent[a]) ancestors.unshift(a);
    var base = ancestors.length - 1;       // depth of the zoomed node's row
    var rows = 0, matched = 0;
    function put(n, x, w, row, cls) {
      var f = n === 0 ? null : ALL[nFunc[n]];
      var d = el('div', { 'class': 'frame' + (cls ? ' ' + cls : ''), 'data-node': String(n) });
      d.style.left = x + 'px'; d.style.top = (row * ROW) + 'px'; d.style.width = Math.max(w, 1) + 'px';
      d.style.background = f ? hue(f) : '';
      if (n === 0) d.className += ' root';
      if (f && f.i === selectedFunc) d.className += ' selected';
      if (searchRe && f) {
        if (searchRe.test(f.name) || searchRe.test(f.file)) d.className += ' match';
        else d.className += ' dim';
      }
      if (w > 28) d.textContent = n === 0 ? 'all (' + fmtFlame(ROOT_TOTAL) + ')' : f.name;
      frag.appendChild(d);
      if (row + 1 > rows) rows = row + 1;
    }
    for (var i = 0; i < base; i++) put(ancestors[i], 0, W, i, 'ancestor');
    var scale = nTotal[zoom] > 0 ? W / nTotal[zoom] : 0;
    // explicit stack: [node, x, row]
    var stack = [[zoom, 0, base]];
    var matchedTime = 0;
    while (stack.length) {
      var it = stack.pop(), n = it[0], x = it[1], row = it[2];
      var w = nTotal[n] * scale;
      if (n !== zoom && w < MIN_PX) continue;
      put(n, x, n === zoom ? W : w, row, '');
      if (searchRe && n !== 0 && isMatchRoot(n)) matchedTime += nTotal[n];
      var cx = x, list = kids[n];
      for (var c = 0; c < list.length; c++) {
        stack.push([list[c], cx, row + 1]);
        cx += nTotal[list[c]] * scale;
      }
    }
    flame.textContent = '';
    flame.appendChild(frag);
    flame.style.height = (rows * ROW) + 'px';
    flame.setAttribute('data-zoom', String(zoom));
    drawCrumbs(ancestors);
    if (searchRe) {
      $('flame-match').textContent = 'matched: ' + fmtFlamePct(matchedTime) + ' (' + fmtFlame(matchedTime) + ')';
    } else {
      $('flame-match').textContent = '';
    }
  }
  // a matching frame with no matching ancestor (so nested matches count once)
  function isMatchRoot(n) {
    var f = ALL[nFunc[n]];
    if (!(searchRe.test(f.name) || searchRe.test(f.file))) return false;
    for (var a = nParent[n]; a > 0; a = nParent[a]) {
      var g = ALL[nFunc[a]];
      if (searchRe.test(g.name) || searchRe.test(g.file)) return false;
    }
    return true;
  }
  function drawCrumbs(ancestors) {
    var c = $('flame-crumbs');
    c.textContent = '';
    ancestors.forEach(function (n, i) {
      if (i) c.appendChild(document.createTextNode(' \u203a '));
      var a = el('a', { 'data-node': String(n) }, nodeLabel(n));
      a.addEventListener('click', function () { setZoom(n); });
      c.appendChild(a);
    });
    if (zoom !== 0) {
      c.appendChild(document.createTextNode('  \u2014 ' + fmtFlame(nTotal[zoom]) + ', ' +
        fmtFlamePct(nTotal[zoom]) + ' of the total'));
    }
  }
  function setZoom(n) {
    zoom = n;
    drawFlame();
  }
  flame.addEventListener('click', function (ev) {
    var d = ev.target.closest('.frame');
    if (!d) return;
    var n = +d.getAttribute('data-node');
    setZoom(n);
    if (n !== 0) select(nFunc[n], false);
  });
  flame.addEventListener('mousemove', function (ev) {
    var d = ev.target.closest('.frame');
    if (!d) { tip.hidden = true; return; }
    var n = +d.getAttribute('data-node');
    tip.textContent = '';
    if (n === 0) {
      tip.appendChild(el('div', { 'class': 't-name' }, 'all call paths'));
      tip.appendChild(el('div', null, fmtFlame(ROOT_TOTAL)));
    } else {
      var f = ALL[nFunc[n]];
      tip.appendChild(el('div', { 'class': 't-name' }, f.name));
      tip.appendChild(el('div', { 'class': 't-file' }, f.file ? f.file + ':' + f.line : 'built-in'));
      tip.appendChild(el('div', null, 'total ' + fmtFlame(nTotal[n]) + ' (' + fmtFlamePct(nTotal[n]) + ') \u00b7 self ' +
        fmtFlame(nSelf[n]) + ' \u00b7 calls ' + fmtInt(nCalls[n])));
      if (nFolded[n] > 0) {
        tip.appendChild(el('div', null, '+ ' + fmtFlame(nFolded[n]) + ' in callees below ' + T.min_percent +
          '% of the total (not drawn)'));
      }
    }
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) x = Math.max(0, ev.clientX - tip.offsetWidth - 8);
    if (y + tip.offsetHeight > window.innerHeight) y = Math.max(0, ev.clientY - tip.offsetHeight - 8);
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  });
  flame.addEventListener('mouseleave', function () { tip.hidden = true; });
  $('flame-reset').addEventListener('click', function () { setZoom(0); });
  $('flame-search').addEventListener('input', function () {
    searchRe = makeRegex(this.value.trim());
    drawFlame();
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.key === 'Escape' && zoom !== 0) setZoom(0);
  });
  var resizeTimer = 0;
  window.addEventListener('resize', function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(drawFlame, 100);
  });

  // ------------------------------------------------------------ table
  var COLS = [
    { key: 'name', label: 'function', num: false, get: function (f) { return f.name.toLowerCase(); } },
    { key: 'nc', label: 'calls', num: true, get: function (f) { return f.nc; } },
    { key: 'tt', label: 'tottime', num: true, get: function (f) { return f.tt; } },
    { key: 'ttpct', label: '% tot', num: true, get: function (f) { return f.tt; } },
    { key: 'ttper', label: 'tot/call', title: 'tottime per call', num: true,
      get: function (f) { return f.nc ? f.tt / f.nc : 0; } },
    { key: 'ct', label: 'cumtime', num: true, get: function (f) { return f.ct; } },
    { key: 'ctpct', label: '% cum', num: true, get: function (f) { return f.ct; } },
    { key: 'ctper', label: 'cum/call', title: 'cumtime per primitive call', num: true,
      get: function (f) { return f.cc ? f.ct / f.cc : 0; } }
  ];
  var sortCol = COLS[2], sortDesc = true, filterRe = null, showAll = false;
  var headRow = document.querySelector('#functions thead tr');
  COLS.forEach(function (c) {
    var th = el('th', { 'data-key': c.key, scope: 'col' }, c.label);
    if (c.title) th.title = c.title;
    th.addEventListener('click', function () {
      if (sortCol === c) sortDesc = !sortDesc;
      else { sortCol = c; sortDesc = c.num; }
      drawTable();
    });
    headRow.appendChild(th);
  });
  $('filter').addEventListener('input', function () {
    filterRe = makeRegex(this.value.trim());
    drawTable();
  });

  function drawTable() {
    Array.prototype.forEach.call(headRow.children, function (th) {
      if (th.getAttribute('data-key') === sortCol.key) th.setAttribute('aria-sort', sortDesc ? 'descending' : 'ascending');
      else th.removeAttribute('aria-sort');
    });
    var rows = F.filter(function (f) { return !filterRe || filterRe.test(f.name) || filterRe.test(f.file + ':' + f.line); });
    var get = sortCol.get, dir = sortDesc ? -1 : 1;
    rows.sort(function (a, b) {
      var x = get(a), y = get(b);
      if (x < y) return -dir;
      if (x > y) return dir;
      return a.i - b.i;
    });
    var shown = showAll ? rows : rows.slice(0, TABLE_LIMIT);
    var tbody = document.querySelector('#functions tbody');
    var frag = document.createDocumentFragment();
    shown.forEach(function (f) {
      var tr = el('tr', { 'data-func': String(f.i) });
      if (f.i === selectedFunc) tr.className = 'selected';
      var td = el('td', { 'class': 'fn' });
      td.appendChild(breakable('div', null, f.name));
      td.appendChild(breakable('div', { 'class': 'file' }, f.where));
      tr.appendChild(td);
      tr.appendChild(el('td', { 'data-value': String(f.nc) }, fmtCalls(f)));
      tr.appendChild(el('td', { 'data-value': String(f.tt) }, fmtTime(f.tt)));
      var pct = el('td', { 'class': 'pct' });
      var bar = el('span', { 'class': 'bar' });
      bar.style.width = Math.round(TOTAL > 0 ? 40 * f.tt / TOTAL : 0) + 'px';
      pct.appendChild(bar);
      pct.appendChild(document.createTextNode(fmtPct(f.tt)));
      tr.appendChild(pct);
      tr.appendChild(el('td', null, fmtTime(f.nc ? f.tt / f.nc : 0)));
      tr.appendChild(el('td', { 'data-value': String(f.ct) }, fmtTime(f.ct)));
      tr.appendChild(el('td', { 'class': 'pct' }, fmtPct(f.ct)));
      tr.appendChild(el('td', null, fmtTime(f.cc ? f.ct / f.cc : 0)));
      frag.appendChild(tr);
    });
    tbody.textContent = '';
    tbody.appendChild(frag);
    $('filter-count').textContent = filterRe ? rows.length + ' of ' + F.length : F.length + ' functions';
    var more = $('table-more');
    more.textContent = '';
    if (shown.length < rows.length) {
      var b = el('button', { type: 'button' }, 'show all ' + rows.length + ' rows');
      b.addEventListener('click', function () { showAll = true; drawTable(); });
      more.appendChild(el('span', { 'class': 'note' }, 'first ' + shown.length + ' rows shown '));
      more.appendChild(b);
    }
  }
  document.querySelector('#functions tbody').addEventListener('click', function (ev) {
    var tr = ev.target.closest('tr');
    if (tr) select(+tr.getAttribute('data-func'), true);
  });

  // ------------------------------------------------------------ detail
  function fnLink(i) {
    var f = ALL[i];
    var a = el('a', { 'class': 'fnlink', 'data-func': String(i), title: f.file ? f.file + ':' + f.line : 'built-in' }, f.name);
    return a;
  }
  function edgeTable(title, edges, emptyText) {
    var box = el('div', { 'class': title.toLowerCase() });
    box.appendChild(el('h4', null, title + ' (' + edges.length + ')'));
    if (!edges.length) { box.appendChild(el('p', { 'class': 'note' }, emptyText)); return box; }
    var t = el('table');
    var hr = el('tr');
    ['function', 'calls', 'tottime', 'cumtime'].forEach(function (h) { hr.appendChild(el('th', null, h)); });
    t.appendChild(el('thead')).appendChild(hr);
    var tb = el('tbody');
    edges.slice().sort(function (a, b) { return b.ct - a.ct || b.nc - a.nc; }).forEach(function (e) {
      var tr = el('tr', { 'data-func': String(e.f) });
      var td = el('td');
      td.appendChild(fnLink(e.f));
      var f = ALL[e.f];
      td.appendChild(breakable('div', { 'class': 'note' }, f.where));
      tr.appendChild(td);
      tr.appendChild(el('td', null, e.nc !== e.cc ? fmtInt(e.nc) + '/' + fmtInt(e.cc) : fmtInt(e.nc)));
      tr.appendChild(el('td', null, fmtTime(e.tt)));
      tr.appendChild(el('td', null, fmtTime(e.ct)));
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    box.appendChild(t);
    return box;
  }
  // a function's line stats (--lines): hits, time, % of the function and
  // a bar of it per line, the hottest lines marked; with memory, bytes
  function lineTable(L) {
    var wrap = el('div', { 'class': 'lines-box' });
    var t = el('table', { 'class': 'linestats' });
    var hr = el('tr');
    var heads = ['line', 'hits', 'time'].concat(L.own ? ['own'] : [], ['% func'],
      L.bytes ? ['alloc', 'net'].concat(L.own_bytes ? ['own alloc'] : []) : [], ['', 'source']);
    heads.forEach(function (h) { hr.appendChild(el('th', null, h)); });
    t.appendChild(el('thead')).appendChild(hr);
    var tb = el('tbody');
    L.rows.forEach(function (r) {
      var hot = L.hot.indexOf(r[0]) >= 0;
      var tr = el('tr', { 'data-line': String(r[0]), 'class': hot ? 'hot' : '' });
      var share = L.total > 0 && r[1] !== null ? r[2] / L.total : 0;
      tr.appendChild(el('td', { 'class': 'ln' }, String(r[0])));
      tr.appendChild(el('td', { 'class': 'hits' }, r[1] === null ? '' : fmtInt(r[1])));
      tr.appendChild(el('td', { 'class': 'time' }, r[1] === null ? '' : fmtTime(r[2])));
      if (L.own) tr.appendChild(el('td', { 'class': 'own' }, r[1] === null ? '' : fmtTime(r[4])));
      tr.appendChild(el('td', { 'class': 'pct' }, r[1] === null ? '' : (100 * share).toFixed(1)));
      if (L.bytes) {
        var b = r[5] || [0, 0, 0];
        var cells = [['alloc', b[0]], ['net', b[1]]].concat(L.own_bytes ? [['ownalloc', b[2]]] : []);
        cells.forEach(function (c) {
          tr.appendChild(el('td', { 'class': c[0] }, r[1] === null || !c[1] ? '' : fmtBytes(c[1])));
        });
      }
      var bar = el('td', { 'class': 'heat' });
      if (r[1] !== null) {
        bar.appendChild(el('span', { 'class': 'track' })).appendChild(
          el('span', { 'class': 'bar', style: 'width:' + (100 * Math.min(share, 1)).toFixed(1) + '%' }));
      }
      tr.appendChild(bar);
      tr.appendChild(el('td', { 'class': 'code' }, r[3]));
      tb.appendChild(tr);
    });
    t.appendChild(tb);
    wrap.appendChild(t);
    wrap.appendChild(el('p', { 'class': 'note' }, 'time of a line: from its start to the next line or the ' +
      'exit, its calls included' + (L.own ? '; own: less those calls' : '') +
      (L.bytes ? '; alloc: bytes allocated meanwhile, its calls included; net: the change of live bytes' +
        (L.own_bytes ? '; own alloc: less its calls\' bytes' : '') : '') +
      '; % of the function\'s cumtime; hottest lines marked' +
      (L.readable ? '' : '; source not readable when the report was written: line numbers only')));
    return wrap;
  }
  function select(i) {
    selectedFunc = i;
    var f = ALL[i];
    var box = $('detail');
    box.textContent = '';
    box.setAttribute('data-func', String(i));
    box.appendChild(breakable('h3', null, f.name));
    box.appendChild(breakable('div', { 'class': 'file' }, f.file ? f.file + ':' + f.line : 'built-in (C) function'));
    var dl = el('dl');
    function row(k, v) { dl.appendChild(el('dt', null, k)); dl.appendChild(el('dd', null, v)); }
    row('calls', fmtCalls(f) + (f.nc !== f.cc ? '  (all / primitive)' : ''));
    row('tottime', fmtTime(f.tt) + '  (' + fmtPct(f.tt) + ')');
    row('cumtime', fmtTime(f.ct) + '  (' + fmtPct(f.ct) + ')');
    row('per call', fmtTime(f.nc ? f.tt / f.nc : 0) + ' self, ' + fmtTime(f.cc ? f.ct / f.cc : 0) + ' cumulative');
    var paths = 0;
    for (var n = 1; n < NN; n++) if (nFunc[n] === i) { paths++; }
    row('call paths', paths + (T.exact ? '' : ' (estimated)'));
    box.appendChild(dl);
    var hb = el('button', { type: 'button' }, 'highlight in flame graph');
    hb.addEventListener('click', function () {
      var q = '^' + f.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';
      $('flame-search').value = q;
      searchRe = new RegExp(q);
      drawFlame();
      $('flame-section').scrollIntoView({ behavior: 'smooth' });
    });
    box.appendChild(hb);
    box.appendChild(edgeTable('Callers', f.callers, 'nobody: a root of the profile'));
    box.appendChild(edgeTable('Callees', f.callees, 'none'));
    var src = D.sources[String(i)];
    var lines = (D.lines || {})[String(i)];
    box.appendChild(el('h4', null, lines ? 'Source, line by line' : 'Source'));
    if (lines) {
      box.appendChild(lineTable(lines));
    } else if (src) {
      var pre = el('pre', { 'class': 'source' });
      src.lines.forEach(function (text, j) {
        var line = el('div', j === 0 ? { 'class': 'first' } : null);
        line.appendChild(el('span', { 'class': 'ln' }, String(src.start + j)));
        line.appendChild(document.createTextNode(text));
        pre.appendChild(line);
      });
      box.appendChild(pre);
      box.appendChild(el('p', { 'class': 'note' }, 'source as read when the report was written' +
        (src.truncated ? ' (first lines only)' : '')));
    } else {
      box.appendChild(el('p', { 'class': 'note' }, f.file ? 'source not embedded (the file was not readable ' +
        'when the report was written, or the function takes too little time)' : 'C function: no Python source'));
    }
    Array.prototype.forEach.call(document.querySelectorAll('#functions tbody tr'), function (tr) {
      tr.className = +tr.getAttribute('data-func') === i ? 'selected' : '';
    });
    Array.prototype.forEach.call(flame.querySelectorAll('.frame'), function (d) {
      var n = +d.getAttribute('data-node');
      d.classList.toggle('selected', n > 0 && nFunc[n] === i);
    });
  }
  $('detail').addEventListener('click', function (ev) {
    var a = ev.target.closest('a.fnlink');
    if (a) select(+a.getAttribute('data-func'), false);
  });

  // ------------------------------------------------------------ views (threads)
  function loadView(v) {
    VIEW = D.views[v];
    TOTAL = VIEW.total || 0;
    ALL.forEach(function (f) { f.cc = f.nc = f.tt = f.ct = 0; f.callers = []; f.callees = []; });
    F = VIEW.rows.map(function (r, j) {
      var f = ALL[r[0]];
      f.cc = r[1]; f.nc = r[2]; f.tt = r[3]; f.ct = r[4];
      return f;
    });
    VIEW.rows.forEach(function (r, j) {
      VIEW.callers[j].forEach(function (e) {
        var edge = { nc: e[1], cc: e[2], tt: e[3], ct: e[4] };
        ALL[r[0]].callers.push({ f: e[0], nc: edge.nc, cc: edge.cc, tt: edge.tt, ct: edge.ct });
        ALL[e[0]].callees.push({ f: r[0], nc: edge.nc, cc: edge.cc, tt: edge.tt, ct: edge.ct });
      });
    });
    // (the flame by bytes is of all threads together: another view draws time)
    if (v !== 0) FLAME_BY = 'time';
    $('flame-by').value = FLAME_BY;
    $('flame-by').disabled = v !== 0;
    loadTree(FLAME_BY === 'time' ? VIEW.tree : D.flames[FLAME_BY]);
    zoom = 0;
    $('thread').value = String(v);
    drawSummary();
    drawFlameNote();
    drawTable();
    drawMemory();
    drawFlame();
    if (selectedFunc >= 0) select(selectedFunc);
  }
  (function threadSelector() {
    var sel = $('thread');
    D.views.forEach(function (v, i) {
      var text = v.label + (i > 0 ? ' \u2014 ' + fmtTime(v.total) : '');
      sel.appendChild(el('option', { value: String(i) }, text));
    });
    $('thread-box').hidden = D.views.length < 2;
    sel.addEventListener('change', function () { loadView(+sel.value); });
  })();

  // ------------------------------------------------------------ memory
  // (a profile made with --memory: the table; with call paths, the flame by bytes)
  var FLAME_WIDTH = { time: 'time', allocated: 'bytes allocated', held: 'bytes held at the peak' };
  function setFlameBy(by) {
    FLAME_BY = by;
    $('flame-by').value = by;
    loadTree(by === 'time' ? VIEW.tree : D.flames[by]);
    zoom = 0;
    drawFlameNote();
    drawFlame();
  }
  (function flameBySelector() {
    var sel = $('flame-by'), weights = Object.keys(D.flames || {});
    if (!weights.length) return;
    ['time'].concat(weights).forEach(function (w) {
      sel.appendChild(el('option', { value: w }, FLAME_WIDTH[w] || w));
    });
    $('flame-by-box').hidden = false;
    sel.addEventListener('change', function () { setFlameBy(sel.value); });
  })();
  // the selected view's rows: its threads' own when the file keeps them
  function drawMemory() {
    var M = D.memory;
    if (!M) return;
    var own = VIEW.memory !== undefined;
    var t = M.totals || {};
    $('memory-note').textContent = (own ? 'the bytes of ' + VIEW.label + '; ' : '') +
      'the process\'s traced bytes: ' + fmtBytes(t.peak || 0) +
      ' at the peak, ' + fmtBytes(t.current || 0) + ' alive at the end; allocated: bytes a function ' +
      'allocated itself, incl: with its callees, net: still alive at the end, peak: the most one ' +
      'call rose, held: alive at the process\'s peak';
    var body = $('memory').tBodies[0], frag = document.createDocumentFragment();
    while (body.firstChild) body.removeChild(body.firstChild);
    (own ? VIEW.memory : M.rows).slice(0, TABLE_LIMIT).forEach(function (r) {
      var f = ALL[r[0]], tr = el('tr', { 'data-func': String(r[0]) });
      var name = el('td', { 'class': 'fn' });
      name.appendChild(el('a', { 'class': 'fnlink', 'data-func': String(r[0]) }, f.name));
      name.appendChild(breakable('div', { 'class': 'file' }, f.where));
      tr.appendChild(name);
      r.slice(1, 6).forEach(function (v) { tr.appendChild(el('td', { 'data-value': String(v) }, fmtBytes(v))); });
      tr.appendChild(el('td', { 'data-value': String(r[6]) }, fmtInt(r[6])));
      frag.appendChild(tr);
    });
    body.appendChild(frag);
  }
  (function memoryTable() {
    if (!D.memory) return;
    $('memory-section').hidden = false;
    $('memory').addEventListener('click', function (ev) {
      var a = ev.target.closest('a.fnlink');
      if (a) select(+a.getAttribute('data-func'), false);
    });
  })();

  // ------------------------------------------------------------ start
  loadView(0);
  // A small hook for tests and the curious: state, not behaviour.
  window.fastprofReport = {
    data: D,
    view: function () { return D.views.indexOf(VIEW); },
    tree: function () { return T; },
    zoom: function () { return zoom; },
    selected: function () { return selectedFunc; },
    nodeTotal: function (n) { return nTotal[n]; },
    loadView: loadView,
    flameBy: function () { return FLAME_BY; },
    setFlameBy: setFlameBy
  };
  document.body.setAttribute('data-ready', '1');
})();
