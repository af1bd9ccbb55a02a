// The search page. It ranks with the index the build wrote under search/, by the rules of
// generator/search.py (which states them; keep the two in step): `failpedia search` and this
// page return the same order for the same query, and a test holds them to it.
//   #tag tokens filter (aliases resolve); the free text becomes clauses (identifiers, synonym
//   phrases, stemmed words) that every result matches; a pasted log line is also matched
//   against the fingerprint patterns.
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

  var meta = null; // search/meta.json
  var docs = null; // search/docs.json
  var docsReady = null; // its promise: a query's index files load while it does
  var R = null; // meta.rank: the ranking constants
  var fileCache = {};
  var regexCache = {};
  var seq = 0; // the latest search; older ones drop their results
  var shown = null; // {items, done}
  var state = { q: "", category: [], tag: [] };
  var showAllTags = false;
  var asYouType = false; // the running query comes from typing, not from Enter, a link or a facet

  app.hidden = false;
  document.querySelectorAll(".search-nojs").forEach(function (el) { el.hidden = true; });

  function has(obj, key) { return Object.prototype.hasOwnProperty.call(obj, key); }
  function getJSON(path) {
    if (!fileCache[path]) {
      fileCache[path] = fetch(new URL(path, root).href).then(function (r) {
        if (!r.ok) throw new Error(path + ": HTTP " + r.status);
        return r.json();
      });
    }
    return fileCache[path];
  }

  // --- Words and identifiers (search.py: _clean, is_identifier, stem, edit1) ---------------
  var TOKEN_RE = /[A-Za-z0-9_.:\/=\-]+/g;
  var WORD_RE = /[a-z0-9]+/g;
  var PLURALS = [["ies", "y"], ["sses", "ss"], ["ches", "ch"], ["shes", "sh"], ["xes", "x"], ["zes", "z"]];

  function clean(tok) {
    tok = tok.replace(/[.:\/=\-]+$/, "").replace(/^[.:\/=]+/, "");
    if (tok.charAt(0) === "-" && !/^(-\d|--[A-Za-z])/.test(tok)) tok = tok.replace(/^-+/, "");
    return tok;
  }
  function isIdentifier(tok) {
    if (tok.length < 2 || tok.length > 80 || /^(?:[a-z]+|[A-Z][a-z]*|[A-Z]+|\d+)$/.test(tok) || tok.indexOf("://") >= 0 || !/[A-Za-z0-9]/.test(tok)) return false;
    return tok.indexOf("_") >= 0 || /[A-Za-z0-9][.:\/=]+[A-Za-z0-9]/.test(tok) || /[a-z][A-Z]/.test(tok) ||
      (/[A-Za-z]/.test(tok) && /\d/.test(tok)) || /^-\d+$/.test(tok) || /^--[A-Za-z]/.test(tok);
  }
  function endsWith(s, t) { return s.length >= t.length && s.slice(s.length - t.length) === t; }
  function stem(word) {
    if (word.length <= 3 || !/^[a-z]+$/.test(word)) return word;
    var w = word, i, done = false;
    for (i = 0; i < PLURALS.length; i++) {
      if (endsWith(w, PLURALS[i][0])) { w = w.slice(0, w.length - PLURALS[i][0].length) + PLURALS[i][1]; done = true; break; }
    }
    if (!done && endsWith(w, "s") && !endsWith(w, "ss") && !endsWith(w, "us") && !endsWith(w, "is")) w = w.slice(0, -1);
    var stripped = false;
    var ends = ["ing", "ed"];
    for (i = 0; i < ends.length; i++) {
      if (endsWith(w, ends[i]) && w.length - ends[i].length >= 3) { w = w.slice(0, w.length - ends[i].length); stripped = true; break; }
    }
    if (endsWith(w, "e") && w.length >= 4) w = w.slice(0, -1);
    var last = w.charAt(w.length - 1);
    if (stripped && w.length >= 4 && last === w.charAt(w.length - 2) && "lsz".indexOf(last) < 0 && "aeiou".indexOf(last) < 0) w = w.slice(0, -1);
    return w;
  }
  function wordsIn(text) { return (text.toLowerCase().match(WORD_RE) || []).map(stem); }
  function edit1(a, b) {
    var la = a.length, lb = b.length;
    if (a === b || Math.abs(la - lb) > 1) return false;
    var i = 0;
    while (i < Math.min(la, lb) && a.charAt(i) === b.charAt(i)) i++;
    if (la === lb) {
      if (a.slice(i + 1) === b.slice(i + 1)) return true;
      return i + 1 < la && a.charAt(i) === b.charAt(i + 1) && a.charAt(i + 1) === b.charAt(i) && a.slice(i + 2) === b.slice(i + 2);
    }
    return la > lb ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
  }
  function isAlnum(s) { return /^[A-Za-z0-9]+$/.test(s); }

  // --- The query (search.py: parse_query, query_clauses) -----------------------------------
  function queryClauses(free) {
    var seqc = [];
    var pos = 0, m;
    TOKEN_RE.lastIndex = 0;
    function gap(text) { wordsIn(text).forEach(function (w) { seqc.push(["w", w]); }); }
    while ((m = TOKEN_RE.exec(free))) {
      gap(free.slice(pos, m.index));
      pos = m.index + m[0].length;
      var tok = clean(m[0]);
      if (isIdentifier(tok) && !isAlnum(tok)) seqc.push(["i", "=" + tok.toLowerCase()]);
      else gap(m[0]);
    }
    gap(free.slice(pos));
    seqc = seqc.filter(function (c) { return c[0] === "i" || c[1].length > 1 || /^\d+$/.test(c[1]); });
    var phrases = {};
    meta.synonyms.phrases.forEach(function (p) { phrases[p[0].join(" ")] = p[1]; });
    var out = [];
    var i = 0;
    while (i < seqc.length) {
      var took = false;
      for (var n = Math.min(meta.synonyms.longest, seqc.length - i); n > 1; n--) {
        var part = seqc.slice(i, i + n);
        if (!part.every(function (c) { return c[0] === "w"; })) continue;
        var key = part.map(function (c) { return c[1]; }).join(" ");
        if (has(phrases, key)) { out.push(["p", "^" + key.replace(/ /g, "_")]); i += n; took = true; break; }
      }
      if (!took) { out.push(seqc[i]); i++; }
    }
    var stop = {};
    meta.stop.forEach(function (w) { stop[w] = true; });
    if (out.some(function (c) { return c[0] !== "w" || !stop[c[1]]; })) out = out.filter(function (c) { return c[0] !== "w" || !stop[c[1]]; });
    var seen = {};
    return out.filter(function (c) { var k = c[0] + " " + c[1]; if (seen[k]) return false; seen[k] = true; return true; });
  }

  function parseQuery(text) {
    var q = { text: text, tags: [], unknown: [], free: "", words: [], idents: [], clauses: [] };
    var free = [];
    var tokens = text.split(/\s+/);
    var typing = asYouType && !/\s$/.test(text); // the last token may be half-typed
    tokens.forEach(function (tok, i) {
      if (!tok) return;
      if (tok.charAt(0) === "#" && tok.length > 1) {
        var spelling = tok.replace(/^#+/, "").toLowerCase();
        if (has(meta.aliases, spelling)) {
          if (q.tags.indexOf(meta.aliases[spelling]) < 0) q.tags.push(meta.aliases[spelling]);
        } else if (typing && i === tokens.length - 1 && Object.keys(meta.aliases).some(function (s) { return s.indexOf(spelling) === 0; })) {
          q.partial = spelling; // "#dd" on its way to "#ddp": not an error yet
        } else {
          q.unknown.push(spelling);
        }
      } else {
        free.push(tok);
      }
    });
    q.free = free.join(" ");
    q.clauses = queryClauses(q.free);
    q.clauses.forEach(function (c) {
      if (c[0] === "i") q.idents.push(c[1].slice(1));
      if (c[0] === "w") q.words.push(c[1]);
    });
    return q;
  }

  // --- The index (search.py: vocab_key, alternatives, clause_scores) -----------------------
  function vocabKey(term) {
    if (/^[a-z0-9]/.test(term)) return term.charAt(0);
    return (term.charAt(0) === "=" ? "i" : "g") + term.charCodeAt(1).toString(16);
  }
  function vocabFile(key) {
    return meta.vocab.indexOf(key) >= 0 ? getJSON("search/v/" + key + ".json") : Promise.resolve({ t: [], f: [], c: [] });
  }
  function bisectLeft(list, x) {
    var lo = 0, hi = list.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (list[mid] < x) lo = mid + 1; else hi = mid; }
    return lo;
  }
  // The vocabulary shards a clause needs: its own term's and its synonym group's.
  function shardsOf(clause) {
    var keys = [vocabKey(clause[1])];
    var g = has(meta.synonyms.words, clause[1]) ? meta.synonyms.words[clause[1]] : null;
    if (g && keys.indexOf(vocabKey(g)) < 0) keys.push(vocabKey(g));
    return keys;
  }
  // vocab: key → shard; returns [[term, factor], ...] like search.py's alternatives.
  function alternatives(clause, vocab) {
    function find(term) {
      var v = vocab[vocabKey(term)];
      var i = v ? bisectLeft(v.t, term) : -1;
      return v && v.t[i] === term ? { idf: v.f[i], chunk: v.c[i] } : null;
    }
    var kind = clause[0], term = clause[1];
    var out = find(term) ? [[term, R.exact]] : [];
    var group = has(meta.synonyms.words, term) ? meta.synonyms.words[term] : null;
    if (group && find(group)) out.push([group, R.group]);
    if (kind === "w") {
      var terms = (vocab[vocabKey(term)] || { t: [] }).t;
      if (term.length >= 3) {
        var longer = [];
        for (var i = bisectLeft(terms, term); i < terms.length && terms[i].slice(0, term.length) === term; i++) {
          if (terms[i] !== term) longer.push(terms[i]);
        }
        longer.slice(0, R.prefix_max).forEach(function (t) { out.push([t, R.prefix]); });
      }
      if (!out.length && term.length >= R.typo_min && /^[a-z]+$/.test(term)) {
        terms.filter(function (t) { return t.length >= R.typo_min - 1 && edit1(term, t); }).slice(0, R.prefix_max).forEach(function (t) { out.push([t, R.typo]); });
      }
    }
    // A longer word or a typo's neighbour is worth no more than the word typed; another spelling,
    // the mean of the word's and its group's rarity (search.py: clause_scores).
    var own = find(term);
    return out.map(function (a) {
      var f = find(a[0]);
      var idf = (a[1] === R.prefix || a[1] === R.typo) && own ? Math.min(f.idf, own.idf) : f.idf;
      if (a[1] === R.group && own) idf = Math.floor((f.idf + own.idf) / 2);
      return { term: a[0], factor: a[1], idf: idf, chunk: f.chunk };
    });
  }
  function postingsOf(chunk, term) { return getJSON("search/p/" + chunk + ".json").then(function (c) { return c[term]; }); }

  // Loads what the clauses need; resolves to one {doc: score} map per clause.
  function clauseScores(clauses) {
    var keys = [];
    clauses.forEach(function (c) { shardsOf(c).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
    return Promise.all(keys.map(vocabFile)).then(function (shards) {
      var vocab = {};
      keys.forEach(function (k, i) { vocab[k] = shards[i]; });
      return Promise.all(clauses.map(function (c) {
        var alts = alternatives(c, vocab);
        return Promise.all(alts.map(function (a) { return postingsOf(a.chunk, a.term); })).then(function (lists) {
          var out = {};
          alts.forEach(function (a, n) {
            var p = lists[n], doc = 0;
            for (var i = 0; i < p.length; i += 2) {
              doc += p[i];
              var s = a.factor * p[i + 1] * a.idf;
              if (s > (out[doc] || 0)) out[doc] = s;
            }
          });
          return out;
        });
      }));
    });
  }

  // --- Fingerprints of a pasted line (search.py: fingerprint_scores) -----------------------
  function fnv1a(s) {
    var h = 0x811c9dc5;
    for (var i = 0; i < s.length; i++) { // words of [a-z0-9]: their UTF-8 bytes are their code units
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h >>> 0;
  }
  function wordCount(text) { return (text.match(/[A-Za-z0-9]+/g) || []).length; }
  function looksPasted(free) { return wordCount(free) >= 3 || free.length >= 24; }
  function regex(pattern) {
    if (!has(regexCache, pattern)) {
      try { regexCache[pattern] = new RegExp(pattern); } catch (e) { regexCache[pattern] = null; }
    }
    return regexCache[pattern];
  }
  // Resolves to {doc: {score, confident, patterns}}.
  function fingerprintHits(free) {
    if (!free || !looksPasted(free)) return Promise.resolve({});
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
        list.fingerprints.forEach(function (rec) { // [[doc, ...], pattern, near, window, score]
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
          rec[0].forEach(function (doc) {
            (scores[doc] = scores[doc] || []).push({ score: rec[4] * (near ? 10 : 3), pattern: rec[1] });
          });
        });
      });
      var out = {};
      Object.keys(scores).forEach(function (doc) {
        var s = scores[doc].sort(function (a, b) { return b.score - a.score; });
        var total = 10 * s[0].score + s.slice(1).reduce(function (n, x) { return n + x.score; }, 0);
        out[doc] = { score: total, confident: s[0].score >= 10 * R.confident, patterns: s.map(function (x) { return x.pattern; }) };
      });
      return out;
    });
  }

  // --- Ranking (search.py: rank, search) ---------------------------------------------------
  // found: the clause maps; pool: doc ids allowed; fps: fingerprint hits; tagRank: {doc: n} or null.
  // Returns [{doc, fp, conf, score}] best first.
  function rank(found, pool, fps, tagRank) {
    var allowed = {};
    pool.forEach(function (d) { allowed[d] = true; });
    found = found.filter(function (s) { return Object.keys(s).length > 0; });
    var scores = {};
    if (found.length) {
      var cover = {}, best = 0;
      found.forEach(function (s) {
        Object.keys(s).forEach(function (d) {
          if (!allowed[d]) return;
          cover[d] = (cover[d] || 0) + 1;
          scores[d] = (scores[d] || 0) + s[d];
        });
      });
      Object.keys(cover).forEach(function (d) { if (cover[d] > best) best = cover[d]; });
      // A long query may be missed by one clause in R.slack_per, at the share of the clauses'
      // worth it misses, per mille (search.py: rank).
      var need = best - Math.floor((found.length - 1) / R.slack_per);
      var tops = found.map(function (s) {
        return Object.keys(s).reduce(function (m, d) { return Math.max(m, s[d]); }, 0);
      });
      var total = tops.reduce(function (a, b) { return a + b; }, 0);
      Object.keys(scores).forEach(function (d) {
        if (cover[d] < need) { delete scores[d]; return; }
        var got = 0;
        found.forEach(function (s, k) { if (has(s, d)) got += tops[k]; });
        var share = Math.floor(got * 1000 / total), x = scores[d] * share;
        scores[d] = (x - x % 1000) / 1000;
      });
    } else if (tagRank) {
      pool.forEach(function (d) { scores[d] = tagRank[d]; });
    }
    Object.keys(fps).forEach(function (d) {
      if (allowed[d] && !fps[d].confident) scores[d] = (scores[d] || 0) + fps[d].score * R.weak_nudge;
    });
    var rows = Object.keys(scores).map(function (d) {
      return { doc: +d, conf: has(fps, d) && fps[d].confident ? fps[d].score : 0, score: scores[d] };
    });
    Object.keys(fps).forEach(function (d) {
      if (fps[d].confident && allowed[d] && !has(scores, d)) rows.push({ doc: +d, conf: fps[d].score, score: 0 });
    });
    rows.forEach(function (r) { r.fp = has(fps, r.doc) ? fps[r.doc] : null; });
    return rows.sort(function (a, b) { return b.conf - a.conf || b.score - a.score || a.doc - b.doc; });
  }

  var tagIds = null, catIds = null;
  function poolFor(q, skip) {
    if (!tagIds) {
      tagIds = {}; catIds = {};
      meta.tags.forEach(function (t, i) { tagIds[t[0]] = i; });
      meta.categories.forEach(function (c, i) { catIds[c[0]] = i; });
    }
    var need = q.tags.map(function (t) { return tagIds[t]; });
    var anyTag = skip === "tag" ? [] : state.tag.map(function (t) { return tagIds[t]; });
    var anyCat = skip === "category" ? [] : state.category.map(function (c) { return catIds[c]; });
    var out = [];
    for (var d = 0; d < docs.cat.length; d++) {
      var tags = docs.tags[d];
      if (!need.every(function (t) { return tags.indexOf(t) >= 0; })) continue;
      if (anyTag.length && !anyTag.some(function (t) { return tags.indexOf(t) >= 0; })) continue;
      if (anyCat.length && anyCat.indexOf(docs.cat[d]) < 0) continue;
      out.push(d);
    }
    return out;
  }

  function counted(rows) {
    var counts = { category: {}, tag: {} };
    rows.forEach(function (r) {
      var c = meta.categories[docs.cat[r.doc]];
      if (c) counts.category[c[0]] = (counts.category[c[0]] || 0) + 1;
      docs.tags[r.doc].forEach(function (t) { var name = meta.tags[t][0]; counts.tag[name] = (counts.tag[name] || 0) + 1; });
    });
    return counts;
  }

  function execute(q) {
    var my = ++seq;
    // A short query loads its fingerprint shards and its index files at once; a long paste first
    // learns from the fingerprints whether its words are searched at all.
    var long = wordCount(q.free) >= R.long_paste;
    var early = long ? null : clauseScores(q.clauses);
    return Promise.all([fingerprintHits(q.free), docsReady]).then(function (loaded) {
      var fps = loaded[0];
      var textual = !(long && Object.keys(fps).some(function (d) { return fps[d].confident; }));
      return (early || clauseScores(textual ? q.clauses : [])).then(function (found) {
        function ranked(pool) {
          var tagRank = null;
          if (textual && q.tags.length && !q.clauses.length) {
            tagRank = {};
            pool.forEach(function (d) {
              tagRank[d] = q.tags.reduce(function (n, t) { return n + Math.floor(1000 / (1 + docs.tags[d].indexOf(tagIds[t]))); }, 0);
            });
          }
          return rank(found, pool, fps, tagRank);
        }
        var rows = ranked(poolFor(q, null));
        var counts = {};
        FACETS.forEach(function (f) { counts[f] = (state[f].length ? counted(ranked(poolFor(q, f))) : counted(rows))[f]; });
        return { my: my, items: rows, counts: counts };
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
  // (The title, tags and quick answer are shown already: the text is the rest of the entry.)
  function excerpt(text, q, fp) {
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
    li.setAttribute("data-doc", String(item.doc));
    var h = el("h2", "result-title");
    var a = el("a", "result-link", data.title);
    a.href = new URL(data.slug + "/", root).href;
    h.appendChild(a);
    li.appendChild(h);
    var line = el("p", "result-meta", data.category || "");
    if (item.fp && item.fp.confident) line.appendChild(el("span", "result-why", "the pasted text matches this entry's log fingerprint"));
    li.appendChild(line);
    if (data.summary) li.appendChild(el("p", "result-summary", data.summary));
    var ex = excerpt(data.text || "", q, item.fp);
    if (ex) li.appendChild(ex);
    li.appendChild(chips(data.tags || []));
    return li;
  }

  function showMore(q, my) {
    var batch = shown.items.slice(shown.done, shown.done + PAGE);
    shown.done += batch.length;
    moreEl.hidden = true;
    busy(true);
    // Each result shows as soon as it and those above it have arrived.
    var datas = [], next = 0;
    return Promise.all(batch.map(function (it, i) {
      return getJSON("search/doc/" + it.doc + ".json").then(function (d) {
        datas[i] = d;
        for (; my === seq && next < batch.length && datas[next]; next++) resultsEl.appendChild(renderItem(batch[next], datas[next], q));
      });
    })).then(function () {
      if (my !== seq) return;
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
      app.setAttribute("data-shown", q.text);
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
    }).then(function () {
      if (my === seq) app.setAttribute("data-shown", q.text); // this query's results are on the page
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
  docsReady = getJSON("search/docs.json").then(function (d) { docs = d; });
  docsReady.catch(function () {}); // a failure is reported by the query that waits on it
  getJSON("search/meta.json").then(function (m) {
    meta = m;
    R = meta.rank;
    app.setAttribute("data-ready", "true");
    return run();
  }).catch(function (e) {
    statusEl.textContent = "The search index could not be loaded (" + (e && e.message ? e.message : e) +
      "). Without it, the tag pages below are the search.";
    busy(false);
    browseEl.hidden = false;
  });
})();
