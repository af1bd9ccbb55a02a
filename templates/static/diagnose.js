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

  function render(msg) {
    results.textContent = "";
    if (msg.error) { status.textContent = msg.error; return; }
    var matches = msg.matches;
    status.textContent = matches.length
      ? "Matched " + matches.length + " " + (matches.length === 1 ? "entry" : "entries") + " in " + msg.lines + " lines (" + msg.ms + " ms)."
      : "No known failure matched this log (" + msg.lines + " lines). Try the search, or add an entry.";
    if (!matches.length) return;
    var top = matches[0];
    var info = spec.entries[top.slug];
    var box = el("section", "answer top-match");
    box.setAttribute("aria-labelledby", "top-match-title");
    var h = el("h2"); h.id = "top-match-title";
    var a = el("a", null, top.title); a.href = root + top.url; h.appendChild(a);
    box.appendChild(h);
    box.appendChild(el("p", null, info.summary));
    var fix = el("p", "fix-line"); fix.appendChild(el("strong", null, "Recommended fix: ")); fix.appendChild(document.createTextNode(info.fix));
    box.appendChild(fix);
    results.appendChild(box);
    var list = el("ol", "matches");
    matches.forEach(function (m) {
      var li = el("li", "match");
      li.setAttribute("data-slug", m.slug);
      li.setAttribute("data-role", m.role);
      var title = el("h3");
      var link = el("a", null, m.title); link.href = root + m.url;
      title.appendChild(link);
      li.appendChild(title);
      li.appendChild(el("p", "meta", m.role + " · confidence " + m.confidence.toFixed(2)));
      var pre = el("pre", "log evidence");
      m.evidence.forEach(function (e) {
        var row = el("span", "evidence-line");
        row.appendChild(el("span", "lineno", "line " + e.line + (e.rank !== null ? " [rank " + e.rank + "]" : "") + "  "));
        row.appendChild(document.createTextNode(e.text + "\n"));
        pre.appendChild(row);
      });
      li.appendChild(pre);
      list.appendChild(li);
    });
    results.appendChild(list);
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
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (fileInput.files && fileInput.files.length) run({ file: fileInput.files[0], name: fileInput.files[0].name });
    else run({ text: input.value, name: "pasted" });
  });
  fileInput.addEventListener("change", function () {
    if (fileInput.files.length) run({ file: fileInput.files[0], name: fileInput.files[0].name });
  });
  ["dragenter", "dragover"].forEach(function (t) {
    drop.addEventListener(t, function (ev) { ev.preventDefault(); drop.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (t) {
    drop.addEventListener(t, function () { drop.classList.remove("over"); });
  });
  drop.addEventListener("drop", function (ev) {
    ev.preventDefault();
    var f = ev.dataTransfer.files[0];
    if (f) run({ file: f, name: f.name });
  });
})();
