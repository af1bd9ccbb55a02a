// `failpedia serve` only: the dev server adds this script to the HTML it serves; it is never
// written into the built site. It listens for builds (Server-Sent Events), reloads the page when
// the page or a static asset changed, and shows the errors of a failed build in an overlay.
(function () {
  "use strict";
  var OVERLAY_ID = "failpedia-build-errors";
  var session = null;
  var build = null;

  // The site path of this page: "/x/" → "x/index.html".
  function here() {
    var path = decodeURIComponent(location.pathname).replace(/^\/+/, "");
    return path === "" || path.slice(-1) === "/" ? path + "index.html" : path;
  }

  function hideOverlay() {
    var old = document.getElementById(OVERLAY_ID);
    if (old) old.parentNode.removeChild(old);
  }

  // Styles go through the CSSOM: the pages' CSP forbids inline style attributes and <style>.
  function styled(tag, css) {
    var el = document.createElement(tag);
    for (var k in css) el.style[k] = css[k];
    return el;
  }

  function showOverlay(state) {
    hideOverlay();
    var box = styled("section", {
      position: "fixed", left: "0", right: "0", bottom: "0", maxHeight: "60vh", overflow: "auto",
      zIndex: "2147483647", background: "#2b0d0d", color: "#ffecec", borderTop: "4px solid #e5484d",
      font: "14px/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace", padding: "12px 16px",
      boxShadow: "0 -4px 16px rgba(0,0,0,.4)"
    });
    box.id = OVERLAY_ID;
    box.setAttribute("role", "alert");
    var head = styled("h2", { font: "bold 15px/1.4 system-ui, sans-serif", margin: "0 0 8px", color: "#fff" });
    var n = state.errors;
    head.textContent = "Build failed: " + n + " error" + (n === 1 ? "" : "s") +
      " — fix them and this page reloads";
    var close = styled("button", { float: "right", font: "inherit", cursor: "pointer" });
    close.type = "button";
    close.textContent = "Hide";
    close.addEventListener("click", hideOverlay);
    box.appendChild(close);
    box.appendChild(head);
    var list = styled("ol", { margin: "0", paddingLeft: "20px" });
    state.problems.forEach(function (p) {
      var item = styled("li", { margin: "2px 0", whiteSpace: "pre-wrap", color: p.severity === "error" ? "#ffecec" : "#ffe7a3" });
      item.className = "failpedia-problem";
      item.textContent = p.text;
      list.appendChild(item);
    });
    box.appendChild(list);
    document.body.appendChild(box);
  }

  function sync() {
    fetch("/__failpedia/errors.json", { cache: "no-store" })
      .then(function (r) { return r.json(); })
      .then(function (state) {
        build = state.build;
        if (state.ok) hideOverlay(); else showOverlay(state);
      })
      .catch(function () { /* the server is restarting; the event stream reconnects */ });
  }

  if (!window.EventSource) return;
  var events = new EventSource("/__failpedia/events");
  events.addEventListener("hello", function (e) {
    var data = JSON.parse(e.data);
    // A new server, or builds missed while disconnected: start over from the current site.
    if ((session !== null && data.session !== session) || (build !== null && data.build !== build && data.ok)) {
      location.reload();
      return;
    }
    session = data.session;
    sync();
  });
  events.addEventListener("reload", function (e) {
    var data = JSON.parse(e.data);
    var missed = build !== null && data.build > build + 1;
    build = data.build;
    hideOverlay();
    var mine = here();
    var touched = data.changed.some(function (p) { return p === mine || p.indexOf("static/") === 0; });
    if (touched || missed) location.reload();
  });
  events.addEventListener("failed", function () { sync(); });
})();
