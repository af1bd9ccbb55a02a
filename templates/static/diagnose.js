// The /diagnose/ page: paste or drop a log; matching runs in a Web Worker, nothing is uploaded.
// Everything from the log is shown with textContent, never as HTML.
(function () {
  "use strict";
  var form = document.getElementById("diagnose-form");
  if (!form) return;
  var root = form.getAttribute("data-root");
  var input = document.getElementById("log-text");
  var fileInput = document.getElementById("log-file");
  var drop = document.getElementById("drop-zone");
  var status = document.getElementById("diagnose-status");
  var results = document.getElementById("diagnose-results");
  var spec = null;
  if (location.protocol === "file:") {  // browsers refuse workers and fetch() to a page opened from a file
    document.querySelector("#diagnose-nojs p").textContent = "Opened from a file, this page cannot load its matcher (the browser blocks it). " +
      "Serve the site (make serve, or python3 -m http.server -d site), or run the same matcher in a terminal:";
    return;
  }
  var worker = new Worker(root + "static/diagnose-worker.js");
  document.getElementById("diagnose-ui").hidden = false;
  document.getElementById("diagnose-nojs").hidden = true;

  // Everything the page needs is fetched now, on load; diagnosing makes no request.
  var ready = fetch(root + "api/fingerprints.json").then(function (r) { return r.json(); }).then(function (s) {
    spec = s;
    status.textContent = "Ready: " + s.fingerprints.length + " fingerprints from " + Object.keys(s.entries).length + " entries. Nothing leaves your browser.";
    form.setAttribute("data-ready", "true");
  }, function () { status.textContent = "Could not load the fingerprints."; });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  var CERTAINTY = {
    definitive: "definitive: a line names this failure outright",
    strong: "strong: the log shows this failure's usual error text, which a related failure may share"
  };

  var several = false;  // several files: evidence says file:line, not "line N"
  function where(file, line) { return several ? file + ":" + line : "line " + line; }

  function evidenceBlock(m) {
    var pre = el("pre", "log evidence");
    m.evidence.forEach(function (e) {
      var row = el("span", "evidence-line");
      row.appendChild(el("span", "lineno", where(e.file, e.line) + (e.rank !== null ? " [rank " + e.rank + "]" : "") + "  "));
      row.appendChild(document.createTextNode(e.text + "\n"));
      pre.appendChild(row);
    });
    return pre;
  }

  // A fired numeric fingerprint's readings (m.series, the same from both engines) as an inline
  // SVG chart: values over log lines, min/max on the axes, the lines that fired marked, non-finite
  // readings (nan, inf) as marks along the top. Colours come from the site's CSS variables.
  var SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmt(v) { return v === null ? "nan/inf" : String(Number(v.toPrecision(6))); }
  function seriesChart(s) {
    var W = 320, H = 132, left = 46, right = 8, top = 12, bottom = 28;
    var pts = s.points;
    var finite = pts.filter(function (p) { return p[1] !== null; }).map(function (p) { return p[1]; });
    var lo = finite.length ? Math.min.apply(null, finite) : 0, hi = finite.length ? Math.max.apply(null, finite) : 1;
    var x0 = pts[0][0], x1 = pts[pts.length - 1][0];
    var logScale = lo > 0 && hi / lo >= 100;  // a loss scale halving from 65536 to 1 reads on a log axis
    function t(v) { return logScale ? Math.log(v) : v; }
    function x(line) { return left + (x1 === x0 ? 0.5 : (line - x0) / (x1 - x0)) * (W - left - right); }
    function y(v) { return v === null ? top - 6 : top + (hi === lo ? 0.5 : (t(hi) - t(v)) / (t(hi) - t(lo))) * (H - top - bottom); }
    var fired = s.fired.map(function (p) { return p[0]; });
    var label = s.metric + " over " + (!several ? "log" : s.file === "merged" ? "merged log" : s.file) + " lines " + x0 + " to " + x1 + " (" + s.readings + " readings): first " + fmt(pts[0][1]) +
      ", last " + fmt(pts[pts.length - 1][1]) + ", min " + fmt(lo) + ", max " + fmt(hi) + "; " + s.check + " fired at line" +
      (fired.length > 1 ? "s " : " ") + fired.join(", ") + (logScale ? "; logarithmic value axis" : "");
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, class: "series-chart", role: "img", "aria-label": label, "data-fingerprint": s.fingerprint });
    root.appendChild(svg("title", {}, label));
    root.appendChild(svg("line", { class: "axis", x1: left, y1: top, x2: left, y2: H - bottom }));
    root.appendChild(svg("line", { class: "axis", x1: left, y1: H - bottom, x2: W - right, y2: H - bottom }));
    root.appendChild(svg("text", { x: left - 4, y: top + 4, "text-anchor": "end" }, fmt(hi)));
    root.appendChild(svg("text", { x: left - 4, y: H - bottom, "text-anchor": "end" }, fmt(lo)));
    root.appendChild(svg("text", { x: left, y: H - bottom + 12, "text-anchor": "start" }, "line " + x0));
    root.appendChild(svg("text", { x: W - right, y: H - bottom + 12, "text-anchor": "end" }, "line " + x1));
    root.appendChild(svg("text", { x: (left + W - right) / 2, y: H - 4, "text-anchor": "middle", class: "chart-name" }, s.metric + (logScale ? " (log scale)" : "")));
    var path = "";
    pts.forEach(function (p) {
      if (p[1] === null) { path += " "; return; }
      path += (path === "" || path.slice(-1) === " " ? "M" : "L") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1);
    });
    root.appendChild(svg("path", { class: "series", d: path.trim().replace(/ +/g, " ") }));
    var nonfinite = pts.filter(function (p) { return p[1] === null; });
    nonfinite.forEach(function (p) {
      root.appendChild(svg("path", { class: "nonfinite", d: "M" + (x(p[0]) - 3).toFixed(1) + "," + (top - 10) + "l3,5l3,-5z" }));
    });
    if (nonfinite.length) root.appendChild(svg("text", { x: x(nonfinite[0][0]) - 6, y: top - 3, "text-anchor": "end" }, "nan/inf"));
    s.fired.forEach(function (p) {
      var c = svg("circle", { class: "fired", cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 3.5 });
      c.appendChild(svg("title", {}, "fired at line " + p[0] + ": " + fmt(p[1])));
      root.appendChild(c);
    });
    return root;
  }
  function seriesBlock(m) {
    var box = el("div", "series-charts");
    m.series.slice(0, 3).forEach(function (s) { box.appendChild(seriesChart(s)); });
    return box;
  }

  function matchItem(m, label) {
    var li = el("li", "match");
    li.setAttribute("data-slug", m.slug);
    li.setAttribute("data-role", m.role);
    var title = el("h3");
    var link = el("a", null, m.title); link.href = root + m.url;
    title.appendChild(link);
    li.appendChild(title);
    var meta = el("p", "meta", label + " · " + m.certainty + " match");
    meta.title = CERTAINTY[m.certainty];
    li.appendChild(meta);
    li.appendChild(evidenceBlock(m));
    if (m.series.length) li.appendChild(seriesBlock(m));
    return li;
  }

  // The answer (with its quick answer, fix and first steps), the failures it caused under it as
  // consequences, then the other possible causes: the order `failpedia diagnose` prints.
  // "Started on rank 3 on node-1: why." with the lines that show it (diagnose-ranks.js).
  function startedRank(box, v, evidence) {
    var p = el("p", "started-rank");
    var who = (v.rank !== null ? "rank " + v.rank : v.origin) + (v.host ? " on " + v.host : "");
    p.appendChild(el("strong", null, "Started on " + who + ": "));
    p.appendChild(document.createTextNode(v.reason + "."));
    box.appendChild(p);
    var shownAlready = new Set((evidence || []).map(function (e) { return e.file + ":" + e.line; }));
    var own = v.lines.filter(function (l) { return !shownAlready.has(l.file + ":" + l.line); });  // not twice: the evidence shows them
    if (own.length) {
      var pre = el("pre", "log rank-lines");
      own.forEach(function (l) {
        var row = el("span", "evidence-line");
        row.appendChild(el("span", "lineno", where(l.file, l.line) + "  "));
        row.appendChild(document.createTextNode(l.text + "\n"));
        pre.appendChild(row);
      });
      box.appendChild(pre);
    }
    if (v.root_cause_disagrees) box.appendChild(el("p", "root-cause-note", "Note: " + v.root_cause_disagrees + "."));
  }

  function render(msg) {
    results.textContent = "";
    if (msg.error) { status.textContent = msg.error; return; }
    var matches = msg.matches;
    several = Boolean(msg.files);
    var what = several ? msg.lines + " lines of " + msg.files.length + " files merged in time order" : msg.lines + " lines";
    status.textContent = matches.length
      ? "Matched " + matches.length + " " + (matches.length === 1 ? "entry" : "entries") + " in " + what + " (" + msg.ms + " ms)."
      : "No known failure matched this log (" + what + "). Try the search, or add an entry.";
    if (!matches.length) {
      if (msg.rank) {  // no entry matched, but the log says which rank the others waited for
        var alone = el("section", "answer started-rank-only");
        startedRank(alone, msg.rank);
        results.appendChild(alone);
      }
      form.setAttribute("data-done", String(Number(form.getAttribute("data-done") || 0) + 1));
      return;
    }
    var top = matches[0];
    var info = spec.entries[top.slug];
    var box = el("section", "answer top-match match");
    box.setAttribute("aria-labelledby", "top-match-title");
    box.setAttribute("data-slug", top.slug);
    box.setAttribute("data-role", top.role);
    box.tabIndex = -1;
    var h = el("h2"); h.id = "top-match-title";
    var a = el("a", null, top.title); a.href = root + top.url; h.appendChild(a);
    box.appendChild(h);
    var meta = el("p", "meta certainty", (top.role === "initiating" ? "The answer" : top.role) + " · " + CERTAINTY[top.certainty]);
    box.appendChild(meta);
    if (msg.rank) startedRank(box, msg.rank, top.evidence);  // which rank started it
    box.appendChild(el("p", null, info.summary));
    var fix = el("p", "fix-line"); fix.appendChild(el("strong", null, "Recommended fix: ")); fix.appendChild(document.createTextNode(info.fix));
    box.appendChild(fix);
    if (info.steps && info.steps.length) {
      box.appendChild(el("p", "steps-title", "First steps"));
      var steps = el("ol", "first-steps");
      info.steps.forEach(function (t) { steps.appendChild(el("li", null, t)); });
      box.appendChild(steps);
    }
    box.appendChild(el("p", "evidence-title", "Evidence"));
    box.appendChild(evidenceBlock(top));
    if (top.series.length) box.appendChild(seriesBlock(top));
    matches.slice(1).forEach(function (m) {
      if (m.tied_with !== top.slug) return;
      box.appendChild(el("p", "tie", "Why not " + m.title + "? It matches the same " + where(top.evidence[0].file, top.evidence[0].line) +
        " as strongly; this answer's fingerprint matched more of it: \u201c" + top.evidence[0].matched + "\u201d against \u201c" + m.evidence[0].matched + "\u201d."));
    });
    var consequences = matches.filter(function (m) { return m.role === "collateral"; });
    if (consequences.length) {
      box.appendChild(el("h3", "consequences-title", "Consequences (caused by it; not separate problems)"));
      var cl = el("ul", "matches consequences");
      consequences.forEach(function (m) { cl.appendChild(matchItem(m, "consequence")); });
      box.appendChild(cl);
    }
    results.appendChild(box);
    var others = matches.slice(1).filter(function (m) { return m.role !== "collateral"; });
    if (others.length) {
      results.appendChild(el("h2", "others-title", "Other possible causes"));
      var list = el("ol", "matches others");
      list.start = 2;
      others.forEach(function (m) { list.appendChild(matchItem(m, "also possible")); });
      results.appendChild(list);
    }
    box.focus({ preventScroll: true });
    box.scrollIntoView({ block: "start" });  // on a phone the result starts below the fold
    form.setAttribute("data-done", String(Number(form.getAttribute("data-done") || 0) + 1));
  }
  worker.onmessage = function (ev) { render(ev.data); };

  function run(payload) {
    ready.then(function () {
      if (!spec) return;
      status.textContent = "Matching…";
      payload.spec = spec;
      worker.postMessage(payload);
    });
  }
  // One file or several (one per rank or node: merged in time order); a folder's files are
  // named by their path in it, so torchrun's attempt_0/<local_rank>/stderr.log layout reads.
  function runFiles(list, folder) {
    ready.then(function () {
      if (!spec) return;
      var skip = new RegExp(spec.rules.ranks.merge.skip_names, "i");  // a folder's non-logs, as the terminal skips them
      var files = folder ? list.filter(function (f) { return !skip.test(f.name.split("/").pop()); }) : list;
      if (files.length) run({ files: files, folder: Boolean(folder) });
      else status.textContent = "No log files in what was dropped.";
    });
  }
  function picked() {
    return Array.from(fileInput.files).map(function (f) { return { file: f, name: f.webkitRelativePath || f.name }; });
  }
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (fileInput.files && fileInput.files.length) runFiles(picked());
    else run({ text: input.value, name: "pasted" });
  });
  fileInput.addEventListener("change", function () {
    if (fileInput.files.length) runFiles(picked());
  });
  // A dropped folder: its files, read through the entries API, with their paths in it.
  function entryFiles(entry, path, out) {
    if (entry.isFile) return new Promise(function (ok) { entry.file(function (f) { out.push({ file: f, name: path + f.name }); ok(); }, function () { ok(); }); });
    if (!entry.isDirectory) return Promise.resolve();
    var reader = entry.createReader();
    return new Promise(function (ok) {
      var all = [];
      (function more() {
        reader.readEntries(function (batch) {
          if (!batch.length) {
            Promise.all(all.filter(function (e) { return e.name.charAt(0) !== "."; }).map(function (e) { return entryFiles(e, path + entry.name + "/", out); })).then(ok);
            return;
          }
          all = all.concat(Array.from(batch));
          more();
        }, function () { ok(); });
      })();
    });
  }
  ["dragenter", "dragover"].forEach(function (t) {
    drop.addEventListener(t, function (ev) { ev.preventDefault(); drop.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (t) {
    drop.addEventListener(t, function () { drop.classList.remove("over"); });
  });
  drop.addEventListener("drop", function (ev) {
    ev.preventDefault();
    var items = ev.dataTransfer.items ? Array.from(ev.dataTransfer.items) : [];
    var entries = items.map(function (it) { return it.webkitGetAsEntry ? it.webkitGetAsEntry() : null; });
    if (entries.length && entries.every(Boolean) && entries.some(function (e) { return e.isDirectory; })) {
      var out = [];
      Promise.all(entries.map(function (e) { return entryFiles(e, "", out); })).then(function () { runFiles(out, true); });
      return;
    }
    runFiles(Array.from(ev.dataTransfer.files).map(function (f) { return { file: f, name: f.name }; }));
  });
})();
