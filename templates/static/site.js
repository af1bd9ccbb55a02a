// Progressive enhancement only: every page reads fine without this file.
(function () {
  "use strict";
  var root = document.documentElement;
  var store = {
    get: function (k) { try { return localStorage.getItem(k); } catch (e) { return null; } },
    set: function (k, v) { try { localStorage.setItem(k, v); } catch (e) { /* storage may be blocked */ } }
  };

  // file://: a folder link opens its index.html, not a folder listing.
  if (location.protocol === "file:") {
    document.querySelectorAll("a[href]").forEach(function (a) {
      var m = /^([^?#]*)(.*)$/.exec(a.getAttribute("href")), path = m[1];
      if (path === "" || /^[a-z][a-z0-9+.-]*:/i.test(path)) return;
      if (path === "." || path === "..") path += "/";
      if (path.slice(-1) === "/") a.setAttribute("href", path + "index.html" + m[2]);
    });
  }

  // Dark-mode toggle that remembers the choice (theme.js applies it before the first paint).
  var toggle = document.querySelector(".theme-toggle");
  if (toggle) {
    toggle.hidden = false;
    var dark = function () {
      var t = root.getAttribute("data-theme");
      if (t) return t === "dark";
      return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    };
    var label = function () { toggle.setAttribute("aria-pressed", dark() ? "true" : "false"); };
    label();
    toggle.addEventListener("click", function () {
      var next = dark() ? "light" : "dark";
      root.setAttribute("data-theme", next);
      store.set("failpedia-theme", next);
      label();
    });
  }

  // A copy button on every highlighted code block.
  var copyText = function (text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    // file:// and plain http have no clipboard API: copy through a selected, off-screen textarea.
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "visually-hidden";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      area.remove();
      if (ok) resolve(); else reject(new Error("copy failed"));
    });
  };
  document.querySelectorAll("pre.highlight").forEach(function (pre) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    var say = function (text) {
      button.textContent = text;
      setTimeout(function () { button.textContent = "Copy"; }, 1500);
    };
    button.addEventListener("click", function () {
      copyText(pre.innerText).then(function () { say("Copied"); }, function () { say("Copy failed"); });
    });
    var wrap = document.createElement("div");
    wrap.className = "code-wrap";
    pre.parentNode.insertBefore(wrap, pre);
    wrap.appendChild(pre);
    wrap.appendChild(button);
  });

  document.querySelectorAll(".table-scroll").forEach(function (box) {
    if (box.scrollWidth <= box.clientWidth + 1) return;
    var hint = document.createElement("p");
    hint.className = "scroll-hint";
    hint.textContent = "Scroll the table sideways \u2192";
    box.parentNode.insertBefore(hint, box);
  });

  // Code examples become one tab per stack (without JS they show one after another). The chosen
  // stack is remembered, so the next entry opens on it too.
  document.querySelectorAll(".code-tabs").forEach(function (box, n) {
    var panels = box.querySelectorAll(".code-example");
    if (panels.length < 2) return;
    var list = document.createElement("div");
    list.setAttribute("role", "tablist");
    list.setAttribute("aria-label", "Code examples by stack");
    list.className = "tablist";
    var tabs = [];
    var select = function (i, focus, remember) {
      tabs.forEach(function (t, j) {
        t.setAttribute("aria-selected", i === j ? "true" : "false");
        t.tabIndex = i === j ? 0 : -1;
        panels[j].hidden = i !== j;
      });
      if (focus) tabs[i].focus();
      if (remember) store.set("failpedia-stack", panels[i].getAttribute("data-stack"));
    };
    panels.forEach(function (panel, i) {
      var heading = panel.querySelector("h3");
      var tab = document.createElement("button");
      tab.type = "button";
      tab.setAttribute("role", "tab");
      tab.id = "tab-" + n + "-" + i;
      panel.id = "panel-" + n + "-" + i;
      tab.setAttribute("aria-controls", panel.id);
      tab.textContent = heading ? heading.textContent : "Example " + (i + 1);
      panel.setAttribute("role", "tabpanel");
      panel.setAttribute("aria-labelledby", tab.id);
      if (heading) heading.classList.add("visually-hidden");
      tab.addEventListener("click", function () { select(i, false, true); });
      tab.addEventListener("keydown", function (ev) {
        var last = tabs.length - 1;
        var to = { ArrowRight: i === last ? 0 : i + 1, ArrowLeft: i === 0 ? last : i - 1, Home: 0, End: last }[ev.key];
        if (to === undefined) return;
        ev.preventDefault();
        select(to, true, true);
      });
      tabs.push(tab);
      list.appendChild(tab);
    });
    box.insertBefore(list, box.firstChild);
    var saved = store.get("failpedia-stack");
    var start = 0;
    panels.forEach(function (p, i) { if (p.getAttribute("data-stack") === saved) start = i; });
    select(start, false, false);
  });

  // The table of contents marks the section being read.
  var toc = document.querySelector(".toc");
  if (toc && "IntersectionObserver" in window) {
    var links = {};
    toc.querySelectorAll("a[href^='#']").forEach(function (a) { links[a.getAttribute("href").slice(1)] = a; });
    var headings = [];
    Object.keys(links).forEach(function (id) { var h = document.getElementById(id); if (h) headings.push(h); });
    var mark = function (id) {
      Object.keys(links).forEach(function (k) {
        if (k === id) links[k].setAttribute("aria-current", "true"); else links[k].removeAttribute("aria-current");
      });
    };
    var observer = new IntersectionObserver(function () {
      // The current section: the last heading above the upper third of the window.
      var current = null;
      headings.forEach(function (h) { if (h.getBoundingClientRect().top < window.innerHeight / 3) current = h.id; });
      mark(current);
    }, { rootMargin: "0px 0px -66% 0px" });
    headings.forEach(function (h) { observer.observe(h); });
  }
})();
