// The search page. Pagefind finds entries by their full text; this file adds the query language
// of `failpedia search` (generator/search.py states the rules; keep the two in step):
//   #tag tokens filter (aliases resolve), identifiers are searched whole as the single word the
//   build indexed them as, and a pasted log line is matched against the fingerprint patterns.
// Facets: OR within a facet, AND across facets; each facet's counts ignore its own selection.
// The state lives in the URL (?q=...&category=...&tag=...).
(function () {
  "use strict";
  var app = document.getElementById("search-app");
  var input = document.getElementById("search-q");
  var form = document.getElementById("search-form");
  if (!app || !input || !form) return;

  var root = new URL(app.getAttribute("data-root") || "./", location.href);
  var statusEl = document.getElementById("search-status");
  var resultsEl = document.getElementById("search-results");
  var facetsEl = document.getElementById("search-facets");
  var moreEl = document.getElementById("search-more");
  var browseEl = document.getElementById("search-browse");
  var PAGE = 10;
  var FACETS = ["category", "tag"];
  var MAX_LINE = 4096;
  var LONG_PASTE = 8; // words: a log line rather than a phrase

  var meta = null; // search/meta.json
  var pagefind = null;
  var shardCache = {};
  var regexCache = {};
  var seq = 0; // the latest search; older ones drop their results
  var shown = null; // {items, done}
  var state = { q: "", category: [], tag: [] };
  var showAllTags = false;
  var asYouType = false; // the running query comes from typing, not from Enter, a link or a facet

  app.hidden = false;
  document.querySelectorAll(".search-nojs").forEach(function (el) { el.hidden = true; });

  // --- The query language (mirrors generator/search.py) -----------------------------------
  var TOKEN_RE = /[A-Za-z0-9_.:\/=\-]+/g;
  var ESCAPES = { q: "qq", _: "qu", ".": "qd", "-": "qh", ":": "qc", "/": "qs", "=": "qe" };

  function clean(tok) {
    tok = tok.replace(/[.:\/=\-]+$/, "").replace(/^[.:\/=]+/, "");
    if (tok.charAt(0) === "-" && !/^(-\d|--[A-Za-z])/.test(tok)) tok = tok.replace(/^-+/, "");
    return tok;
  }
  function isIdentifier(tok) {
    if (tok.length < 2 || tok.length > 80 || tok.indexOf("://") >= 0 || !/[A-Za-z0-9]/.test(tok)) return false;
    return tok.indexOf("_") >= 0 || /[A-Za-z0-9][.:\/=]+[A-Za-z0-9]/.test(tok) || /[a-z][A-Z]/.test(tok) ||
      (/[A-Za-z]/.test(tok) && /\d/.test(tok)) || /^-\d+$/.test(tok) || /^--[A-Za-z]/.test(tok);
  }
  // open: the identifier is still being typed, so let it match as a prefix (no end mark).
  function idToken(s, open) {
    var out = "zx";
    s = s.toLowerCase();
    for (var i = 0; i < s.length; i++) out += ESCAPES[s.charAt(i)] || s.charAt(i);
    return open ? out : out + "qz";
  }
  function entryToken(slug) { return idToken("entry:" + slug + ":"); }
  function has(obj, key) { return Object.prototype.hasOwnProperty.call(obj, key); }

  function parseQuery(text) {
    var q = { text: text, tags: [], unknown: [], free: "", words: [], idents: [], term: "" };
    var free = [];
    var tokens = text.split(/\s+/);
    var typing = asYouType && !/\s$/.test(text); // the last token may be half-typed
    tokens.forEach(function (tok, i) {
      if (!tok) return;
      if (tok.charAt(0) === "#") {
        var spelling = tok.replace(/^#+/, "").toLowerCase();
        if (has(meta.aliases, spelling)) {
          if (q.tags.indexOf(meta.aliases[spelling]) < 0) q.tags.push(meta.aliases[spelling]);
        } else if (typing && i === tokens.length - 1 && Object.keys(meta.aliases).some(function (s) { return s.indexOf(spelling) === 0; })) {
          q.partial = spelling; // "#dd" on its way to "#ddp": not an error yet
        } else if (spelling) {
          q.unknown.push(spelling);
        }
      } else {
        free.push(tok);
      }
    });
    q.free = free.join(" ");
    q.term = q.free.replace(TOKEN_RE, function (raw, at) {
      var tok = clean(raw);
      if (!isIdentifier(tok)) return raw;
      if (q.idents.indexOf(tok.toLowerCase()) < 0) q.idents.push(tok.toLowerCase());
      return " " + idToken(tok, typing && at + raw.length === q.free.length) + " ";
    }).replace(/\s+/g, " ").trim();
    var plain = q.free.replace(TOKEN_RE, function (raw) { return isIdentifier(clean(raw)) ? " " : raw; });
    (plain.toLowerCase().match(/[a-z0-9]+/g) || []).forEach(function (w) {
      if ((w.length > 1 || /\d/.test(w)) && q.words.indexOf(w) < 0) q.words.push(w);
    });
    return q;
  }

  // --- Fingerprints of a pasted line ------------------------------------------------------
  function fnv1a(s) {
    var h = 0x811c9dc5;
    for (var i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h >>> 0;
  }
  function wordCount(text) { return (text.match(/[A-Za-z0-9]+/g) || []).length; }
  function looksPasted(free) { return wordCount(free) >= 3 || free.length >= 24; }
  function getJSON(path) {
    if (!shardCache[path]) {
      shardCache[path] = fetch(new URL(path, root).href).then(function (r) {
        if (!r.ok) throw new Error(path + ": HTTP " + r.status);
        return r.json();
      });
    }
    return shardCache[path];
  }
  function regex(pattern) {
    if (!has(regexCache, pattern)) {
      try { regexCache[pattern] = new RegExp(pattern); } catch (e) { regexCache[pattern] = null; }
    }
    return regexCache[pattern];
  }
  function fingerprintHits(free) {
    if (!free || !looksPasted(free)) return Promise.resolve([]);
    var words = (free.toLowerCase().match(/[a-z0-9]+/g) || []);
    var files = ["search/fp/any.json"];
    words.forEach(function (w) {
      var f = "search/fp/" + (fnv1a(w) % meta.fp_shards) + ".json";
      if (files.indexOf(f) < 0) files.push(f);
    });
    var lines = free.split(/\r?\n/).filter(function (l) { return l.trim(); }).map(function (l) { return l.slice(0, MAX_LINE); });
    return Promise.all(files.map(getJSON)).then(function (lists) {
      var seen = {};
      var scores = {};
      lists.forEach(function (list) {
        list.fingerprints.forEach(function (rec) { // [[slug, ...], pattern, near, window, score]
          var key = rec[1] + "\n" + rec[2] + "\n" + rec[3] + "\n" + rec[4];
          if (seen[key]) return;
          seen[key] = true;
          var re = regex(rec[1]);
          if (!re) return;
          var hits = [];
          lines.forEach(function (l, i) { if (re.test(l)) hits.push(i); });
          if (!hits.length) return;
          var near = true;
          if (rec[2]) {
            var nre = regex(rec[2]);
            near = !!nre && lines.some(function (l, i) {
              return nre.test(l) && hits.some(function (h) { return Math.abs(i - h) <= rec[3]; });
            });
          }
          rec[0].forEach(function (slug) {
            (scores[slug] = scores[slug] || []).push({ score: rec[4] * (near ? 1 : 0.3), pattern: rec[1] });
          });
        });
      });
      return Object.keys(scores).map(function (slug) {
        var s = scores[slug].sort(function (a, b) { return b.score - a.score; });
        var total = s[0].score + 0.1 * s.slice(1).reduce(function (n, x) { return n + x.score; }, 0);
        // Confident: strong or definitive with its near evidence; the text names this entry.
        return { slug: slug, score: 10 * total, confident: s[0].score >= 6, patterns: s.map(function (x) { return x.pattern; }) };
      }).sort(function (a, b) { return b.score - a.score || (a.slug < b.slug ? -1 : 1); });
    });
  }

  // --- Running a query --------------------------------------------------------------------
  function filtersFor(q, skip) {
    var all = q.tags.map(function (t) { return { tag: t }; });
    if (skip !== "tag" && state.tag.length) all.push({ tag: { any: state.tag.slice() } });
    if (skip !== "category" && state.category.length) all.push({ category: { any: state.category.slice() } });
    return all.length ? { all: all } : {};
  }

  function addCounts(into, filters) {
    FACETS.forEach(function (f) {
      var src = (filters && filters[f]) || {};
      into[f] = into[f] || {};
      Object.keys(src).forEach(function (v) { into[f][v] = (into[f][v] || 0) + src[v]; });
    });
    return into;
  }

  // One result set: the fingerprint hits, then Pagefind's full-text results, with facet counts.
  // textual=false: a pasted log line named its entries; its words would only add noise.
  function runSet(q, fps, filters, textual) {
    var tagWords = q.tags.join(" ").replace(/-/g, " ");
    var searches = !textual ? [null, null] : [
      q.term ? pagefind.search(q.term, { filters: filters }) : (q.tags.length ? pagefind.search(null, { filters: filters }) : null),
      !q.term && q.tags.length ? pagefind.search(tagWords, { filters: filters }) : null,
    ];
    searches = searches.concat(fps.map(function (h) { return pagefind.search(entryToken(h.slug), { filters: filters }); }));
    return Promise.all(searches).then(function (res) {
      var main = res[0], ranker = res[1], fpRes = res.slice(2);
      var items = [];
      var ids = {};
      var counts = addCounts({}, main && main.filters);
      var mainIds = {};
      (main ? main.results : []).forEach(function (r) { mainIds[r.id] = true; });
      // Confident fingerprint hits first; then the full-text order (weak hits keep their place
      // in it); then weak hits the full text did not find.
      var fpById = {};
      var tail = [];
      fpRes.forEach(function (r, i) {
        r.results.slice(0, 1).forEach(function (x) {
          if (fpById[x.id]) return;
          fpById[x.id] = fps[i];
          if (!mainIds[x.id]) addCounts(counts, r.filters);
          if (fps[i].confident) { ids[x.id] = true; items.push({ result: x, fp: fps[i] }); }
          else if (!mainIds[x.id]) tail.push({ result: x, fp: fps[i] });
        });
      });
      var ordered = (ranker ? ranker.results : []).concat(main ? main.results : []);
      ordered.forEach(function (x) {
        if (ids[x.id] || !mainIds[x.id]) return;
        ids[x.id] = true;
        items.push({ result: x, fp: fpById[x.id] || null });
      });
      tail.forEach(function (it) { if (!ids[it.result.id]) { ids[it.result.id] = true; items.push(it); } });
      return { items: items, counts: counts };
    });
  }

  function execute(q) {
    var my = ++seq;
    return fingerprintHits(q.free).then(function (fps) {
      var textual = !(wordCount(q.free) >= LONG_PASTE && fps.some(function (h) { return h.confident; }));
      var sets = [runSet(q, fps, filtersFor(q, null), textual)];
      FACETS.forEach(function (f) { sets.push(state[f].length ? runSet(q, fps, filtersFor(q, f), textual) : null); });
      return Promise.all(sets).then(function (r) {
        var counts = {};
        FACETS.forEach(function (f, i) { counts[f] = (r[i + 1] || r[0]).counts[f] || {}; });
        return { my: my, items: r[0].items, counts: counts };
      });
    });
  }

  // --- Rendering --------------------------------------------------------------------------
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

  // The passage of the page that best shows the query, with every match marked.
  function excerpt(content, summary, q, fp) {
    var cut = content.indexOf(meta.sentinel);
    var text = cut >= 0 ? content.slice(0, cut) : content;
    // The title, tags and quick answer are shown already: look in the rest of the page.
    var head = summary ? text.indexOf(summary.slice(0, 60)) : -1;
    if (head >= 0) text = text.slice(head + summary.length).replace(/^[\s.]+/, "");
    var lower = text.toLowerCase();
    var spans = [];
    q.idents.forEach(function (id, n) {
      for (var at = lower.indexOf(id); at >= 0; at = lower.indexOf(id, at + 1)) spans.push([at, at + id.length, "i" + n]);
    });
    var words = q.words.length ? q.words : (q.idents.length || fp ? [] : q.tags);
    words.forEach(function (w, n) {
      var re = new RegExp("(^|[^a-z0-9])(" + escapeRe(w) + "[a-z0-9]*)", "g");
      var m;
      while ((m = re.exec(lower))) spans.push([m.index + m[1].length, m.index + m[0].length, "w" + n]);
    });
    (fp ? fp.patterns : []).forEach(function (p, n) {
      var re = regex(p);
      var m = re && re.exec(text);
      if (m && m[0]) spans.push([m.index, m.index + m[0].length, "f" + n]);
    });
    if (!spans.length) return null;
    spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
    var best = 0, bestKinds = -1;
    spans.forEach(function (s, i) {
      var kinds = {};
      spans.forEach(function (t) { if (t[0] >= s[0] && t[0] < s[0] + 220) kinds[t[2]] = true; });
      var n = Object.keys(kinds).length + (s[2].charAt(0) === "f" ? 10 : 0);
      if (n > bestKinds) { bestKinds = n; best = i; }
    });
    var start = Math.max(0, spans[best][0] - 70);
    if (start > 0) { var sp = text.indexOf(" ", start); if (sp >= 0 && sp < spans[best][0]) start = sp + 1; }
    var end = Math.min(text.length, Math.max(start + 260, spans[best][1] + 20));
    if (end < text.length) { var sp2 = text.lastIndexOf(" ", end); if (sp2 > spans[best][1]) end = sp2; }
    var p = el("p", "result-excerpt");
    if (start > 0) p.appendChild(document.createTextNode("… "));
    var pos = start;
    spans.forEach(function (s) {
      if (s[0] < pos || s[1] > end) return;
      p.appendChild(document.createTextNode(text.slice(pos, s[0])));
      p.appendChild(el("mark", null, text.slice(s[0], s[1])));
      pos = s[1];
    });
    p.appendChild(document.createTextNode(text.slice(pos, end) + (end < text.length ? " …" : "")));
    return p;
  }

  function chips(tags) {
    var ul = el("ul", "chips");
    tags.forEach(function (t) {
      var li = el("li");
      var a = el("a", "chip", "#" + t);
      a.href = new URL("tags/" + t + "/", root).href;
      li.appendChild(a);
      ul.appendChild(li);
    });
    return ul;
  }

  function renderItem(item, data, q) {
    var li = el("li", "result");
    var h = el("h2", "result-title");
    var a = el("a", "result-link", data.meta.title || data.url);
    a.href = data.url;
    h.appendChild(a);
    li.appendChild(h);
    var line = el("p", "result-meta", data.meta.category || "");
    if (item.fp && item.fp.confident) line.appendChild(el("span", "result-why", "the pasted text matches this entry's log fingerprint"));
    li.appendChild(line);
    if (data.meta.summary) li.appendChild(el("p", "result-summary", data.meta.summary));
    var ex = excerpt(data.content || "", data.meta.summary || "", q, item.fp);
    if (ex) li.appendChild(ex);
    li.appendChild(chips((data.meta.tags || "").split(" ").filter(Boolean)));
    return li;
  }

  function showMore(q, my) {
    var batch = shown.items.slice(shown.done, shown.done + PAGE);
    shown.done += batch.length;
    moreEl.hidden = true;
    busy(true);
    return Promise.all(batch.map(function (it) { return it.result.data(); })).then(function (datas) {
      if (my !== seq) return;
      datas.forEach(function (d, i) {
        if (batch[i].fp && !d.url.endsWith("/" + batch[i].fp.slug + "/")) return;
        resultsEl.appendChild(renderItem(batch[i], d, q));
      });
      moreEl.hidden = shown.done >= shown.items.length;
      busy(false);
    });
  }

  function facetBox(name, legend, values, counts, labels) {
    var fs = el("fieldset", "facet");
    fs.setAttribute("data-facet", name);
    fs.appendChild(el("legend", null, legend));
    values.forEach(function (v) {
      var label = el("label", "facet-value");
      var box = el("input");
      box.type = "checkbox";
      box.value = v;
      box.name = name;
      box.checked = state[name].indexOf(v) >= 0;
      box.addEventListener("change", function () {
        var list = state[name];
        var i = list.indexOf(v);
        if (box.checked && i < 0) list.push(v);
        if (!box.checked && i >= 0) list.splice(i, 1);
        list.sort();
        commit(true);
      });
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + (labels ? labels[v] || v : "#" + v) + " "));
      label.appendChild(el("span", "count", String(counts[v] || 0)));
      fs.appendChild(label);
    });
    return fs;
  }

  function renderFacets(q, counts) {
    facetsEl.textContent = "";
    var titles = {};
    meta.categories.forEach(function (c) { titles[c[0]] = c[1]; });
    var cats = meta.categories.map(function (c) { return c[0]; }).filter(function (c) {
      return (counts.category[c] || 0) > 0 || state.category.indexOf(c) >= 0;
    });
    if (cats.length) facetsEl.appendChild(facetBox("category", "Category", cats, counts.category, titles));
    var tags = Object.keys(counts.tag).filter(function (t) {
      return ((counts.tag[t] || 0) > 0 && q.tags.indexOf(t) < 0) || state.tag.indexOf(t) >= 0;
    }).sort(function (a, b) { return (counts.tag[b] || 0) - (counts.tag[a] || 0) || (a < b ? -1 : 1); });
    state.tag.forEach(function (t) { if (tags.indexOf(t) < 0) tags.push(t); });
    if (tags.length) {
      var limit = showAllTags ? tags.length : 12;
      var visible = tags.filter(function (t, i) { return i < limit || state.tag.indexOf(t) >= 0; });
      var box = facetBox("tag", "Tags", visible, counts.tag, null);
      if (tags.length > visible.length) {
        var more = el("button", "facet-more", "All " + tags.length + " tags");
        more.type = "button";
        more.addEventListener("click", function () { showAllTags = true; renderFacets(q, counts); });
        box.appendChild(more);
      }
      facetsEl.appendChild(box);
    }
  }

  function suggestTags(q) {
    var names = meta.tags.filter(function (t) { return t[1] > 0; }).map(function (t) { return t[0]; });
    var out = [];
    var words = q.words.concat(q.unknown);
    Object.keys(meta.aliases).forEach(function (spelling) {
      var name = meta.aliases[spelling];
      if (names.indexOf(name) < 0 || out.indexOf(name) >= 0 || q.tags.indexOf(name) >= 0) return;
      if (words.some(function (w) { return w.length > 2 && (spelling.indexOf(w) >= 0 || w.indexOf(spelling) >= 0 || near(w, spelling)); })) out.push(name);
    });
    meta.tags.slice().sort(function (a, b) { return b[1] - a[1]; }).forEach(function (t) {
      if (out.length < 8 && t[1] > 0 && out.indexOf(t[0]) < 0 && q.tags.indexOf(t[0]) < 0) out.push(t[0]);
    });
    return out.slice(0, 8);
  }
  // The tag a mistyped spelling is closest to (edit distance at most 2), or null.
  function closestTag(spelling) {
    var best = null, bestD = 3;
    Object.keys(meta.aliases).sort().forEach(function (s) {
      var d = distance(spelling, s);
      if (d < bestD) { bestD = d; best = meta.aliases[s]; }
    });
    return best;
  }
  function near(a, b) { return distance(a, b) <= 2; }
  function distance(a, b) {
    if (Math.abs(a.length - b.length) > 2) return 3;
    var prev = [], cur, i, j;
    for (j = 0; j <= b.length; j++) prev[j] = j;
    for (i = 1; i <= a.length; i++) {
      cur = [i];
      for (j = 1; j <= b.length; j++) {
        cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a.charAt(i - 1) === b.charAt(j - 1) ? 0 : 1));
      }
      prev = cur;
    }
    return prev[b.length];
  }
  function queryLink(text, label) {
    var a = el("a", "chip", label);
    a.href = "?q=" + encodeURIComponent(text).replace(/%20/g, "+");
    return a;
  }

  function renderEmpty(q) {
    var box = el("div", "search-empty");
    box.id = "search-empty";
    if (q.unknown.length) {
      q.unknown.forEach(function (u) {
        var p = el("p", null, "There is no tag #" + u + ". ");
        var best = closestTag(u);
        if (best) {
          p.appendChild(document.createTextNode("Did you mean "));
          p.appendChild(queryLink(q.text.replace(new RegExp("#+" + escapeRe(u) + "(?=\\s|$)", "i"), "#" + best), "#" + best));
          p.appendChild(document.createTextNode("?"));
        }
        box.appendChild(p);
      });
    } else {
      box.appendChild(el("p", null, "No entries match “" + q.text + "”."));
      if (q.tags.length > 1 || (q.tags.length && q.free)) {
        box.appendChild(el("p", null, "Fewer words or tags find more: every #tag and every word must match."));
      }
    }
    var tags = suggestTags(q);
    if (tags.length) {
      box.appendChild(el("p", null, "Try a tag:"));
      var ul = el("ul", "chips");
      tags.forEach(function (t) { var li = el("li"); li.appendChild(queryLink("#" + t, "#" + t)); ul.appendChild(li); });
      box.appendChild(ul);
    }
    resultsEl.parentNode.insertBefore(box, resultsEl);
  }

  function clear() {
    resultsEl.textContent = "";
    facetsEl.textContent = "";
    moreEl.hidden = true;
    var old = document.getElementById("search-empty");
    if (old) old.parentNode.removeChild(old);
  }

  function busy(on) { resultsEl.setAttribute("aria-busy", on ? "true" : "false"); }

  function run() {
    var q = parseQuery(state.q);
    var my;
    busy(true);
    if (!q.tags.length && !q.free.trim()) {
      seq++;
      clear();
      statusEl.textContent = q.unknown.length ? "" : "Type words, #tags or paste an error line.";
      if (q.unknown.length) renderEmpty(q);
      app.classList.remove("has-results");
      browseEl.hidden = false;
      busy(false);
      return Promise.resolve();
    }
    statusEl.textContent = "Searching…";
    return execute(q).then(function (r) {
      if (r.my !== seq) return;
      my = r.my;
      clear();
      browseEl.hidden = true;
      shown = { items: r.items, done: 0 };
      var n = r.items.length;
      if (q.unknown.length) n = 0;
      statusEl.textContent = n ? n + (n === 1 ? " entry" : " entries") + " for “" + q.text + "”" : "No results";
      app.classList.toggle("has-results", n > 0);
      if (!n) { renderEmpty(q); busy(false); return; }
      renderFacets(q, r.counts);
      return showMore(q, my);
    }).catch(function (e) {
      busy(false);
      statusEl.textContent = "Search failed: " + (e && e.message ? e.message : e) + ". Browse the tags below instead.";
      browseEl.hidden = false;
    });
  }

  // --- State and URL ----------------------------------------------------------------------
  function readURL() {
    var params = new URLSearchParams(location.search);
    state.q = params.get("q") || "";
    FACETS.forEach(function (f) { state[f] = params.getAll(f).filter(Boolean).sort(); });
    input.value = state.q;
  }
  function url() {
    var params = new URLSearchParams();
    if (state.q) params.set("q", state.q);
    FACETS.forEach(function (f) { state[f].forEach(function (v) { params.append(f, v); }); });
    var s = params.toString();
    return location.pathname + (s ? "?" + s : "");
  }
  // push: a step the back button should undo (Enter, a facet); typing only replaces.
  function commit(push) {
    if (push) asYouType = false;
    var next = url();
    if (next !== location.pathname + location.search) {
      if (push) history.pushState(null, "", next); else history.replaceState(null, "", next);
    }
    return run();
  }

  var timer = null;
  input.addEventListener("input", function () {
    clearTimeout(timer);
    busy(true);
    timer = setTimeout(function () {
      if (input.value === state.q) { asYouType = true; run(); return; }
      state.q = input.value;
      FACETS.forEach(function (f) { state[f] = []; });
      showAllTags = false;
      asYouType = true;
      commit(false);
    }, 150);
  });
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    clearTimeout(timer);
    var first = resultsEl.querySelector(".result-link");
    if (input.value === state.q && first && document.activeElement === input && state.q) {
      location.href = first.href; // Enter on a settled query opens the best result
      return;
    }
    if (input.value !== state.q) { state.q = input.value; FACETS.forEach(function (f) { state[f] = []; }); }
    commit(true);
  });
  window.addEventListener("popstate", function () { readURL(); asYouType = false; run(); });

  // Keyboard: arrows move between the box and the results, Enter opens, Escape goes back.
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp" && ev.key !== "Escape") return;
    var links = Array.prototype.slice.call(resultsEl.querySelectorAll(".result-link"));
    var at = links.indexOf(document.activeElement);
    if (document.activeElement !== input && at < 0) return;
    if (ev.key === "Escape") { if (at >= 0) { ev.preventDefault(); input.focus(); } return; }
    if (!links.length) return;
    ev.preventDefault();
    var next = ev.key === "ArrowDown" ? at + 1 : at - 1;
    if (next < 0) { input.focus(); return; }
    if (next >= links.length) {
      if (!moreEl.hidden) moreEl.click();
      return;
    }
    links[next].focus();
  });
  moreEl.addEventListener("click", function () { showMore(parseQuery(state.q), seq); });

  // --- Start ------------------------------------------------------------------------------
  readURL();
  statusEl.textContent = "Loading the search index…";
  Promise.all([
    getJSON("search/meta.json"),
    import(new URL("pagefind/pagefind.js", root).href),
  ]).then(function (loaded) {
    meta = loaded[0];
    pagefind = loaded[1];
    return pagefind.options({ baseUrl: root.pathname });
  }).then(function () {
    return pagefind.filters(); // loads the tag and category indexes that facet counts need
  }).then(function () {
    app.setAttribute("data-ready", "true");
    return run();
  }).catch(function (e) {
    statusEl.textContent = "The search index could not be loaded (" + (e && e.message ? e.message : e) +
      "). Without it, the tag pages below are the search.";
    busy(false);
    browseEl.hidden = false;
  });
})();
