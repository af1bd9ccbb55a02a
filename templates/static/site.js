// Progressive enhancement only: every page reads fine without this file.
(function () {
  "use strict";
  var root = document.documentElement;

  // Dark-mode toggle that remembers the choice.
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
      try { localStorage.setItem("failpedia-theme", next); } catch (e) { /* ignore */ }
      label();
    });
  }

  // Copy buttons on code blocks.
  document.querySelectorAll("pre.highlight").forEach(function (pre) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy code to clipboard");
    button.addEventListener("click", function () {
      var text = pre.innerText;
      var done = function () { button.textContent = "Copied"; setTimeout(function () { button.textContent = "Copy"; }, 1500); };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(done, function () { button.textContent = "Copy failed"; });
      }
    });
    var wrap = document.createElement("div");
    wrap.className = "code-wrap";
    pre.parentNode.insertBefore(wrap, pre);
    wrap.appendChild(pre);
    wrap.appendChild(button);
  });

  // Code examples become tabs (without JS they show one after another).
  document.querySelectorAll(".code-tabs").forEach(function (box, n) {
    var panels = box.querySelectorAll(".code-example");
    if (panels.length < 2) return;
    var list = document.createElement("div");
    list.setAttribute("role", "tablist");
    list.className = "tablist";
    var tabs = [];
    var select = function (i, focus) {
      tabs.forEach(function (t, j) {
        t.setAttribute("aria-selected", i === j ? "true" : "false");
        t.tabIndex = i === j ? 0 : -1;
        panels[j].hidden = i !== j;
      });
      if (focus) tabs[i].focus();
    };
    panels.forEach(function (panel, i) {
      var heading = panel.querySelector("h3");
      var tab = document.createElement("button");
      tab.type = "button";
      tab.setAttribute("role", "tab");
      tab.id = "tab-" + n + "-" + i;
      tab.textContent = heading ? heading.textContent : "Example " + (i + 1);
      panel.setAttribute("role", "tabpanel");
      panel.setAttribute("aria-labelledby", tab.id);
      if (heading) heading.classList.add("visually-hidden");
      tab.addEventListener("click", function () { select(i, false); });
      tab.addEventListener("keydown", function (ev) {
        if (ev.key === "ArrowRight") select((i + 1) % tabs.length, true);
        if (ev.key === "ArrowLeft") select((i - 1 + tabs.length) % tabs.length, true);
      });
      tabs.push(tab);
      list.appendChild(tab);
    });
    box.insertBefore(list, box.firstChild);
    select(0, false);
  });
})();
