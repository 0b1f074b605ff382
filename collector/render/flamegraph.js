(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('flame-data').textContent);
  var names = data.names, raw = data.nodes, n = raw.length;
  var parent = new Int32Array(n), depth = new Int32Array(n);
  var total = new Float64Array(n), self = new Float64Array(n);
  var children = [], maxDepth = 0;
  for (var i = 0; i < n; i++) {
    parent[i] = raw[i][0]; total[i] = raw[i][2]; self[i] = raw[i][3];
    children.push([]);
    if (parent[i] >= 0) { children[parent[i]].push(i); depth[i] = depth[parent[i]] + 1; }
    if (depth[i] > maxDepth) maxDepth = depth[i];
  }
  var rootTotal = n > 0 ? total[0] : 0;
  var ROW = 18, canvas = document.getElementById('chart'), ctx = canvas.getContext('2d');
  var tip = document.getElementById('tip'), search = document.getElementById('search');
  var focus = 0, matched = null, rows = [], charWidth = 7;

  function scaled(v, scales) {
    var a = Math.abs(v), s = scales[scales.length - 1];
    for (var k = 0; k < scales.length; k++) if (a >= scales[k][1]) { s = scales[k]; break; }
    var t = (v / s[1]).toFixed(2);
    if (t.slice(-3) === '.00') t = t.slice(0, -3);
    return t + s[0];
  }
  function fmt(v) {
    if (v === 0) return '0';
    if (data.unit === 'nanoseconds') return scaled(v, [['s', 1e9], ['ms', 1e6], ['us', 1e3], ['ns', 1]]);
    if (data.unit === 'bytes') return scaled(v, [['TB', 1099511627776], ['GB', 1073741824], ['MB', 1048576], ['kB', 1024], ['B', 1]]);
    return String(v);
  }
  function pct(v, of) { return of > 0 ? (100 * v / of).toFixed(2) + '%' : '-'; }
  var nameColors = {};
  function hashColor(name) {
    var c = nameColors[name];
    if (c) return c;
    var h = 0;
    for (var k = 0; k < name.length; k++) h = (h * 31 + name.charCodeAt(k)) | 0;
    h = h >>> 0;
    c = 'rgb(' + (205 + (h % 50)) + ',' + (80 + ((h >>> 8) % 150)) + ',' + ((h >>> 16) % 55) + ')';
    nameColors[name] = c;
    return c;
  }
  function colorOf(i) {
    if (matched && matched[i]) return '#e040e0';
    if (data.diff) return raw[i][6];
    return hashColor(names[raw[i][1]]);
  }
  function box(i, x, w, dimmed) {
    var y = depth[i] * ROW;
    ctx.globalAlpha = dimmed ? 0.55 : 1;
    ctx.fillStyle = colorOf(i);
    ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
    if (w > 3 * charWidth) {
      var label = names[raw[i][1]], fit = Math.floor((w - 6) / charWidth);
      if (label.length > fit) label = label.slice(0, Math.max(fit - 1, 0)) + '\u2026';
      ctx.fillStyle = '#000';
      ctx.fillText(label, x + 3, y + ROW / 2);
    }
    ctx.globalAlpha = 1;
    rows[depth[i]].push([x, w, i]);
  }
  function render() {
    var width = canvas.clientWidth || 1000, height = (maxDepth + 1) * ROW;
    var ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio);
    canvas.style.height = height + 'px';
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = '12px monospace'; ctx.textBaseline = 'middle';
    charWidth = ctx.measureText('M').width || 7;
    rows = [];
    for (var d = 0; d <= maxDepth; d++) rows.push([]);
    if (n === 0) return;
    for (var a = parent[focus]; a >= 0; a = parent[a]) box(a, 0, width, true);
    var scale = total[focus] > 0 ? width / total[focus] : 0;
    var stack = [[focus, 0]];
    while (stack.length) {
      var e = stack.pop(), j = e[0], x = e[1], w = total[j] * scale;
      if (w < 0.3) continue;
      box(j, x, w, false);
      var kids = children[j], offset = x;
      for (var k = 0; k < kids.length; k++) { stack.push([kids[k], offset]); offset += total[kids[k]] * scale; }
    }
  }
  function nodeAt(event) {
    var r = canvas.getBoundingClientRect(), x = event.clientX - r.left;
    var row = rows[Math.floor((event.clientY - r.top) / ROW)];
    if (!row) return -1;
    for (var k = 0; k < row.length; k++) if (x >= row[k][0] && x < row[k][0] + row[k][1]) return row[k][2];
    return -1;
  }
  function describe(i) {
    var lines = [names[raw[i][1]],
      'total: ' + fmt(total[i]) + ' (' + pct(total[i], rootTotal) + ' of all)',
      'self:  ' + fmt(self[i]) + ' (' + pct(self[i], rootTotal) + ' of all)'];
    if (focus !== 0) lines.push('       ' + pct(total[i], total[focus]) + ' of the zoomed frame');
    if (data.diff) {
      var baseShare = data.baseTotal > 0 ? raw[i][4] / data.baseTotal : 0;
      var share = rootTotal > 0 ? total[i] / rootTotal : 0;
      var change = (100 * (share - baseShare)).toFixed(2);
      lines.push('base total: ' + fmt(raw[i][4]) + ' (' + pct(raw[i][4], data.baseTotal) + ' of base)',
                 'base self:  ' + fmt(raw[i][5]) + ' (' + pct(raw[i][5], data.baseTotal) + ' of base)',
                 'share change: ' + (change > 0 ? '+' : '') + change + ' percentage points');
    }
    return lines.join('\n');
  }
  canvas.addEventListener('mousemove', function (event) {
    var i = nodeAt(event);
    if (i < 0) { tip.style.display = 'none'; return; }
    tip.textContent = describe(i);
    tip.style.display = 'block';
    var left = event.clientX + 14, top = event.clientY + 14;
    if (left + tip.offsetWidth > window.innerWidth) left = Math.max(0, event.clientX - tip.offsetWidth - 14);
    if (top + tip.offsetHeight > window.innerHeight) top = Math.max(0, event.clientY - tip.offsetHeight - 14);
    tip.style.left = left + 'px'; tip.style.top = top + 'px';
  });
  canvas.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  canvas.addEventListener('click', function (event) {
    var i = nodeAt(event);
    if (i >= 0) { focus = i; render(); }
  });
  function reset() { focus = 0; render(); }
  document.getElementById('reset').addEventListener('click', reset);
  document.addEventListener('keydown', function (event) { if (event.key === 'Escape') reset(); });
  search.addEventListener('input', function () {
    var query = search.value.toLowerCase(), out = document.getElementById('match');
    if (!query) { matched = null; out.textContent = ''; render(); return; }
    matched = new Uint8Array(n);
    var under = new Uint8Array(n), sum = 0;
    for (var i = 0; i < n; i++) {
      if (parent[i] >= 0) under[i] = under[parent[i]] || matched[parent[i]];
      matched[i] = names[raw[i][1]].toLowerCase().indexOf(query) >= 0 ? 1 : 0;
      if (matched[i] && !under[i]) sum += total[i];  // nested matches count once
    }
    out.textContent = 'matched: ' + fmt(sum) + ' (' + pct(sum, rootTotal) + ' of all)';
    render();
  });
  document.title = data.title;
  document.getElementById('title').textContent = data.title;
  var info = (data.type || 'samples') + (data.unit ? ' (' + data.unit + ')' : '') +
      ' \u00b7 total ' + fmt(rootTotal);
  if (data.diff) info += ' \u00b7 base total ' + fmt(data.baseTotal) +
      ' \u00b7 colour: change in each frame\u2019s share of its profile\u2019s total';
  info += ' \u00b7 click a frame to zoom, Esc or Reset to zoom out';
  document.getElementById('info').textContent = info;
  if (data.diff) {
    var legend = document.getElementById('legend');
    [['grew', '#e83030', '#fff'], ['unchanged', '#d0d0d0', '#000'], ['shrank', '#3060e8', '#fff']].forEach(function (l) {
      var s = document.createElement('span');
      s.textContent = l[0]; s.style.background = l[1]; s.style.color = l[2];
      legend.appendChild(s);
    });
  }
  window.addEventListener('resize', render);
  render();
  // A link can carry a search: page.html#search=Parse
  var preset = /^#search=(.*)$/.exec(window.location.hash);
  if (preset) {
    search.value = decodeURIComponent(preset[1]);
    search.dispatchEvent(new Event('input'));
  }
})();
