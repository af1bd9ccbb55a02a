// Every page: "/" focuses the search box (the search page's own, else the one in the header).
(function () {
  "use strict";
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "/" || ev.ctrlKey || ev.metaKey || ev.altKey || ev.defaultPrevented) return;
    var t = ev.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    var box = document.getElementById("search-q") || document.getElementById("site-q");
    if (!box) return;
    ev.preventDefault();
    box.focus();
    box.select();
  });
})();
