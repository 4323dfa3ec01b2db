// idc-view's page: filters, sorting, pagination and deep links over window.IDC_PAIRS.
// Every text from the data is put on screen with textContent (never parsed as HTML), and the
// page loads nothing but its own files (see the Content-Security-Policy in index.html).
(function () {
  "use strict";
  var SITE = window.IDC_SITE, PAIRS = window.IDC_PAIRS;
  var SHOWN_METRICS = SITE.shown_metrics;  // the papers' columns, then the judge's (written by idc-view from the code)
  var state = { page: 0, focus: null };
  var selected = [];

  function $(id) { return document.getElementById(id); }
  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function x100(v) { return (v === null || v === undefined) ? "n/a" : (100 * v).toFixed(1); }
  function option(select, value, text) { select.appendChild(new Option(text, value)); }

  // ---- idc-eval leaderboard: one row per system, mean (sd) across its runs, sources and caveats ----
  function leaderboard() {
    var board = SITE.leaderboard;
    if (!board) return;
    var table = el("table", null, "leaderboard");
    table.appendChild(el("caption", "Leaderboard: every system re-scored against " + board.references + " (x100; (sd) across runs)"));
    var head = el("tr");
    ["system", "runs", "n"].concat(board.columns.map(function (c) { return board.short[c] || c; }), ["protocol", "sources", "caveats"])
      .forEach(function (h) { head.appendChild(el("th", h)); });
    table.appendChild(head);
    board.rows.forEach(function (row) {
      var tr = el("tr");
      [row.name, row.runs, row.n].forEach(function (v) { tr.appendChild(el("td", v)); });
      board.columns.forEach(function (c) {
        var sd = row.sd[c];
        tr.appendChild(el("td", x100(row.mean[c]) + (sd === null || sd === undefined ? "" : " (" + x100(sd) + ")")));
      });
      tr.appendChild(el("td", row.protocol + (row.presentation ? "; presentation " + row.presentation : "")));
      tr.appendChild(el("td", row.sources.join("; "), "small"));
      tr.appendChild(el("td", row.caveats.join("; "), "caveat"));
      table.appendChild(tr);
    });
    $("tables").appendChild(table);
  }

  // ---- header: the leaderboard, then each evaluation's table (x100, bootstrap intervals where computed) ----
  function tables() {
    leaderboard();
    $("title").textContent = SITE.title;
    document.title = "idc-view: " + SITE.title;
    var sub = SITE.n_pairs + " pairs";
    if (SITE.dataset) sub += " of " + SITE.dataset;
    if (SITE.splits.length && SITE.splits[0]) sub += " (" + SITE.splits.join(", ") + ")";
    sub += "; scores x100, as each evaluation's metrics.json and per_pair.csv hold them";
    $("subtitle").textContent = sub;
    SITE.systems.forEach(function (sys) {
      var metrics = SHOWN_METRICS.filter(function (m) { return sys.metrics.indexOf(m) >= 0; });
      var table = el("table");
      var cap = el("caption", sys.name + (sys.split ? " [" + sys.split + "]" : "") + " (protocol " + sys.protocol +
        (sys.presentation ? ", presentation " + sys.presentation : "") + ")");
      if (!sys.comparable_with_rcc) cap.appendChild(el("span", " not comparable with rcc", "caveat"));
      if (sys.judge_answers) cap.appendChild(el("div", sys.judge_answers, "caveat"));
      if (sys.choice_answers) cap.appendChild(el("div", sys.choice_answers, "caveat"));
      table.appendChild(cap);
      var head = el("tr");
      ["group", "n"].concat(metrics).forEach(function (m) { head.appendChild(el("th", m)); });
      table.appendChild(head);
      Object.keys(sys.rows).forEach(function (group) {
        var row = sys.rows[group], tr = el("tr");
        tr.appendChild(el("td", group));
        tr.appendChild(el("td", row.n));
        metrics.forEach(function (m) {
          var td = el("td", x100(row[m]));
          var ci = (sys.ci[group] || {})[m];
          if (ci) td.appendChild(el("div", "[" + x100(ci[0]) + ", " + x100(ci[1]) + "]", "ci"));
          tr.appendChild(td);
        });
        table.appendChild(tr);
      });
      $("tables").appendChild(table);
    });
  }

  // ---- controls ----
  function distinct(get) {
    var seen = {}, out = [];
    PAIRS.forEach(function (p) { [].concat(get(p)).forEach(function (v) { if (v && !seen[v]) { seen[v] = 1; out.push(v); } }); });
    return out;
  }
  function controls() {
    option($("f-split"), "", "all");
    distinct(function (p) { return p.split; }).forEach(function (s) { option($("f-split"), s, s); });
    option($("f-category"), "", "all");
    distinct(function (p) { return p.category; }).forEach(function (c) { option($("f-category"), c, c); });
    option($("f-group"), "", "all");
    distinct(function (p) { return p.groups; }).forEach(function (g) { option($("f-group"), g, g); });
    option($("s-metric"), "", "dataset order");
    SITE.metrics.forEach(function (m) { option($("s-metric"), m, m); });
    SITE.systems.forEach(function (s, k) { option($("s-a"), String(k), s.name); });
    option($("s-b"), "", "(nothing)");
    SITE.systems.forEach(function (s, k) { option($("s-b"), String(k), s.name); });
    ["f-split", "f-category", "f-group", "s-metric", "s-a", "s-b", "s-order", "page-size"].forEach(function (id) {
      $(id).addEventListener("change", function () { state.page = 0; clearFocus(); render(); });
    });
    $("f-text").addEventListener("input", function () { state.page = 0; clearFocus(); render(); });
  }
  function clearFocus() {
    if (state.focus !== null) { state.focus = null; history.replaceState(null, "", location.pathname + location.search); }
  }

  // ---- filtering and sorting ----
  PAIRS.forEach(function (p, k) {
    p._order = k;
    var texts = [p.id, p.category || ""].concat(p.refs);
    p.sys.forEach(function (s) { if (s) texts.push(s.caption); });
    p._text = texts.join("\n").toLowerCase();
  });
  function score(p, k, metric) {
    var s = p.sys[k];
    return (s && s.scores[metric] !== undefined) ? s.scores[metric] : null;
  }
  function sortValue(p) {
    var metric = $("s-metric").value;
    if (!metric) return null;
    var a = score(p, Number($("s-a").value), metric);
    if ($("s-b").value === "") return a;
    var b = score(p, Number($("s-b").value), metric);
    return (a === null || b === null) ? null : a - b;
  }
  function visible() {
    if (state.focus !== null) return PAIRS.filter(function (p) { return p.key === state.focus || p.id === state.focus; }).slice(0, 1);
    var split = $("f-split").value, cat = $("f-category").value, group = $("f-group").value;
    var text = $("f-text").value.trim().toLowerCase();
    var out = PAIRS.filter(function (p) {
      return (!split || p.split === split) && (!cat || p.category === cat) && (!group || p.groups.indexOf(group) >= 0)
        && (!text || p._text.indexOf(text) >= 0);
    });
    if ($("s-metric").value) {
      var sign = $("s-order").value === "asc" ? 1 : -1;
      out = out.map(function (p) { return [sortValue(p), p]; });
      out.sort(function (x, y) {
        if (x[0] === null || y[0] === null) return (x[0] === null) - (y[0] === null) || x[1]._order - y[1]._order;
        return sign * (x[0] - y[0]) || x[1]._order - y[1]._order;
      });
      out = out.map(function (x) { return x[1]; });
    }
    return out;
  }

  // ---- a pair's card ----
  function picture(src, label) {
    var fig = el("figure"), img = el("img");
    img.loading = "lazy";
    img.alt = label;
    img.src = src;
    fig.appendChild(img);
    fig.appendChild(el("figcaption", label));
    return fig;
  }
  function card(p) {
    var box = el("article", null, "pair" + (state.focus !== null ? " focus" : ""));
    box.dataset.key = p.key;
    var h = el("h3");
    var link = el("a", p.id);
    link.href = "#pair=" + encodeURIComponent(p.key);
    h.appendChild(link);
    if (p.split) h.appendChild(el("span", p.split, "tag"));
    if (p.category) h.appendChild(el("span", p.category, "tag category"));
    p.groups.forEach(function (g) { h.appendChild(el("span", g, "tag group")); });
    var pick = el("label", null, "pick"), box2 = el("input");
    box2.type = "checkbox";
    box2.checked = selected.indexOf(p.id) >= 0;
    box2.addEventListener("change", function () {
      if (box2.checked) { if (selected.indexOf(p.id) < 0) selected.push(p.id); }
      else selected = selected.filter(function (i) { return i !== p.id; });
      figureCommand();
    });
    pick.appendChild(box2);
    pick.appendChild(document.createTextNode(" figure"));
    h.appendChild(pick);
    box.appendChild(h);
    if (p.img) {
      var images = el("div", null, "images");
      images.appendChild(picture(p.img.before, "before"));
      images.appendChild(picture(p.img.after, "after"));
      images.appendChild(picture(p.img.diff, "difference, change mask outlined"));
      Object.keys(p.att).forEach(function (k) { images.appendChild(picture(p.att[k], "attention: " + SITE.systems[Number(k)].name)); });
      box.appendChild(images);
    }
    box.appendChild(el("div", "References"));
    var refs = el("ul", null, "refs");
    p.refs.forEach(function (r) { refs.appendChild(el("li", r)); });
    box.appendChild(refs);
    if (SITE.systems.length) {
      var metrics = SHOWN_METRICS.filter(function (m) { return SITE.metrics.indexOf(m) >= 0; });
      var table = el("table", null, "systems"), head = el("tr");
      ["system", "caption"].concat(metrics).forEach(function (m) { head.appendChild(el("th", m)); });
      table.appendChild(head);
      p.sys.forEach(function (s, k) {
        if (!s) return;
        var tr = el("tr");
        tr.appendChild(el("td", SITE.systems[k].name, "text"));
        var cell = el("td", s.caption, "text caption");
        if (s.judgement) cell.appendChild(el("div", "judge: " + s.judgement, "judgement"));
        if (s.choice) cell.appendChild(el("div", "multiple choice: " + s.choice, "judgement"));
        tr.appendChild(cell);
        metrics.forEach(function (m) { tr.appendChild(el("td", x100(s.scores[m]))); });
        table.appendChild(tr);
      });
      box.appendChild(table);
    }
    if (p.fields.length) {
      var dl = el("dl", null, "fields");
      p.fields.forEach(function (f) { dl.appendChild(el("dt", f[0])); dl.appendChild(el("dd", f[1])); });
      box.appendChild(dl);
    }
    return box;
  }

  // ---- pages ----
  function pager(node, total, size) {
    node.textContent = "";
    var pages = Math.max(1, Math.ceil(total / size));
    function button(text, page, disabled) {
      var b = el("button", text);
      b.disabled = disabled;
      b.addEventListener("click", function () { state.page = page; render(); window.scrollTo(0, 0); });
      node.appendChild(b);
    }
    button("first", 0, state.page === 0);
    button("previous", state.page - 1, state.page === 0);
    node.appendChild(el("span", " page " + (state.page + 1) + " of " + pages + " "));
    button("next", state.page + 1, state.page >= pages - 1);
    button("last", pages - 1, state.page >= pages - 1);
  }
  function render() {
    var list = visible(), size = Number($("page-size").value);
    state.page = Math.min(state.page, Math.max(0, Math.ceil(list.length / size) - 1));
    var shown = list.slice(state.page * size, (state.page + 1) * size);
    var main = $("pairs");
    main.textContent = "";
    shown.forEach(function (p) { main.appendChild(card(p)); });
    var status = state.focus !== null
      ? (shown.length ? "One pair (deep link). " : "No pair " + state.focus + " on this page. ")
      : "Showing " + (list.length ? state.page * size + 1 : 0) + "-" + (state.page * size + shown.length) + " of " + list.length
        + " pair(s)" + (list.length !== PAIRS.length ? " (filtered from " + PAIRS.length + ")" : "") + ".";
    $("status").textContent = status;
    if (state.focus !== null) {
      var all = el("button", "show all pairs");
      all.addEventListener("click", function () { clearFocus(); render(); });
      $("status").appendChild(all);
    }
    pager($("pager-top"), list.length, size);
    pager($("pager-bottom"), list.length, size);
    if (window.IDC_FIRST_RENDER_MS === undefined) window.IDC_FIRST_RENDER_MS = performance.now();  // benchmarks read it
    document.body.dataset.rendered = String(Date.now());
  }
  function figureCommand() {
    $("fig-count").textContent = String(selected.length);
    var quote = function (s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; };
    $("fig-command").textContent = selected.length
      ? "idc-view figure --pairs " + quote(selected.join(",")) + " --dataset DATASET" +
        SITE.systems.map(function () { return " --eval EVAL_FOLDER"; }).join("") + " --out figure"
      : "";
  }
  function fromHash() {
    var m = /^#pair=(.*)$/.exec(location.hash);
    state.focus = m ? decodeURIComponent(m[1]) : null;
    state.page = 0;
    render();
  }

  tables();
  controls();
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
