// Runs before first paint (loaded synchronously in <head>): apply the saved theme, no flash.
(function () {
  try {
    var t = localStorage.getItem("failpedia-theme");
    if (t === "dark" || t === "light") document.documentElement.setAttribute("data-theme", t);
  } catch (e) { /* storage may be blocked */ }
})();
