// The 404 page: the entries whose slug and tags share the most words with the address asked
// for (/cuda-oom/ → CUDA out of memory), and a search for those words.
(function () {
  "use strict";
  var box = document.getElementById("not-found-suggest");
  if (!box) return;
  var root = box.getAttribute("data-root");
  var path = decodeURIComponent(location.pathname);
  if (path.indexOf(root) === 0) path = path.slice(root.length);
  var words = path.toLowerCase().split(/[^a-z0-9]+/).filter(function (w) { return w && w !== "index" && w !== "html"; });
  if (!words.length) return;
  box.querySelector(".search-for").href = root + "search/?q=" + encodeURIComponent(words.join(" "));
  box.querySelector(".search-for").textContent = "Search for \u201c" + words.join(" ") + "\u201d";
  box.hidden = false;
  fetch(root + "api/entries.json").then(function (r) { return r.json(); }).then(function (data) {
    var scored = data.entries.map(function (e) {
      var own = e.slug.split("-").concat(e.tags.join("-").split("-"));
      var score = words.filter(function (w) { return own.some(function (t) { return t === w || (w.length > 2 && t.indexOf(w) === 0); }); }).length;
      return { e: e, score: score };
    }).filter(function (x) { return x.score > 0; });
    scored.sort(function (a, b) { return b.score - a.score || a.e.slug.length - b.e.slug.length; });
    var list = box.querySelector("ul");
    scored.slice(0, 3).forEach(function (x) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = root + x.e.url;
      a.textContent = x.e.title;
      li.appendChild(a);
      list.appendChild(li);
    });
  }, function () { /* offline or from a file: the search link stays */ });
})();
