// The browser engine of `failpedia diagnose`. It follows, step by step, the rules written at the
// top of generator/diagnose.py, on the same matcher definition (/api/fingerprints.json);
// tests/test_diagnose_browser.py checks that both engines rank every test log the same way.
/* exported diagnoseText, rankPrefix */
/* global metricReader, MetricSeries */
"use strict";

// The rank a line's prefix names ([rank3]:, [default3]:, "3: ", [1,3]<stdout>:), or null;
// diagnose-ranks.js reads prefixes with it too.
function rankPrefix(rankRes, line) {
  var head = line.slice(0, 120);
  for (var k = 0; k < rankRes.length; k++) {
    var m = rankRes[k].exec(head);
    if (m) return parseInt(m[1], 10);
  }
  return null;
}

function diagnoseText(spec, text, file) {
  var rules = spec.rules;
  var fps = spec.fingerprints;
  if (text.indexOf("\x1b") >= 0) text = text.replace(new RegExp(rules.ansi, "g"), "");
  var rankRes = rules.rank_patterns.map(function (p) { return new RegExp(p); });
  var patterns = fps.map(function (fp) { return new RegExp(fp.pattern); });
  var nears = fps.map(function (fp) { return fp.near ? new RegExp(fp.near) : null; });
  function isNumeric(fp) { return Boolean(fp.rising || fp.share_above || (fp.falls_to !== null && fp.falls_to !== undefined) || fp.nonfinite); }
  var state = fps.map(function (fp) {
    return { count: 0, near: false, evidence: [], lastNear: -1e12, pending: [], previous: null, streak: 0, good: 0,
             series: isNumeric(fp) ? new MetricSeries(rules.metrics.series_cap) : null };
  });
  var readMetric = metricReader(rules.metrics);
  var plainNumber = /^-?\d+(?:\.\d+)?$/;
  function toNumber(text) { return typeof text === "string" && plainNumber.test(text) ? parseFloat(text) : null; }
  // Rule 3b: a numeric fingerprint fires once its readings behave as declared (value: the
  // reading, or the share for share_above; null when it is not finite).
  function onNumeric(i, ev, value, finite) {
    var fp = fps[i], st = state[i], fired = false;
    st.series.add(ev.line, value);
    if (fp.nonfinite) {
      if (finite) st.good += 1;
      fired = !finite && st.good > 0;
    } else if (value === null) {
      return;
    } else if (fp.rising) {
      st.streak = st.previous !== null && value > st.previous ? st.streak + 1 : 1;
      st.previous = value;
      fired = st.streak >= fp.times;
    } else if (fp.falls_to !== null && fp.falls_to !== undefined) {
      if (st.previous !== null && value < st.previous) st.streak += 1;
      st.previous = value;
      fired = st.streak >= fp.times && value <= fp.falls_to;
    } else if (value >= fp.share_above) {
      st.good += 1;
      fired = st.good >= fp.times;
    }
    if (fired) {
      st.series.fire(ev.line, value, rules.evidence_per_fingerprint);
      onHit(i, ev);  // a metric fingerprint may still need its `near`
    }
  }

  // literal -> [[kind, fp index]]
  var literals = new Map();
  fps.forEach(function (fp, i) {
    fp.literals.forEach(function (lit) { if (!literals.has(lit)) literals.set(lit, []); literals.get(lit).push([0, i]); });
    fp.near_literals.forEach(function (lit) { if (!literals.has(lit)) literals.set(lit, []); literals.get(lit).push([1, i]); });
  });

  // Rule 2: candidate lines from a substring search.
  var hits = new Map(); // line start -> Set of "kind:index"
  literals.forEach(function (targets, lit) {
    var pos = text.indexOf(lit);
    while (pos >= 0) {
      var start = pos === 0 ? 0 : text.lastIndexOf("\n", pos - 1) + 1;
      if (!hits.has(start)) hits.set(start, new Set());
      var set = hits.get(start);
      targets.forEach(function (t) { set.add(t[0] + ":" + t[1]); });
      var end = text.indexOf("\n", pos);
      pos = end >= 0 ? text.indexOf(lit, end + 1) : -1;
    }
  });

  function rankOf(line) { return rankPrefix(rankRes, line); }
  // Rule 6: elided in the middle, never where the fingerprint matched.
  function elide(t, start, end) {
    var limit = rules.evidence_chars, context = rules.evidence_context;
    if (t.length <= limit) return t;
    var lo = Math.max(0, start - context), hi = Math.min(t.length, end + context);
    if (hi - lo > limit - 2) hi = lo + limit - 2;
    var tail = hi < t.length ? "\u2026" : "";
    var room = limit - (hi - lo) - tail.length;
    if (lo <= room) {
      if (tail) hi = Math.min(t.length, limit - tail.length);
      return t.slice(0, hi) + tail;
    }
    return t.slice(0, room - 1) + "\u2026" + t.slice(lo, hi) + tail;
  }
  function sameEvidence(a, b) { return a.line === b.line && a.rank === b.rank && a.text === b.text && a.file === b.file; }
  function confirm(i, ev, near) {
    var st = state[i];
    st.count += 1;
    st.near = st.near || near;
    if (st.evidence.length < rules.evidence_per_fingerprint && !st.evidence.some(function (e) { return sameEvidence(e, ev); })) st.evidence.push(ev);
  }
  function onNear(i, number) {
    var st = state[i];
    st.lastNear = number;
    var window = fps[i].window;
    st.pending.forEach(function (ev) { if (ev.line >= number - window) confirm(i, ev, true); });
    st.pending = [];
  }
  function onHit(i, ev) {
    var fp = fps[i], st = state[i];
    if (!fp.near) confirm(i, ev, false);
    else if (ev.line - st.lastNear <= fp.window) confirm(i, ev, true);
    else {
      st.pending = st.pending.filter(function (p) { return p.line >= ev.line - fp.window; });
      if (st.pending.length < rules.pending_limit) st.pending.push(ev);
    }
  }
  function byNumber(a, b) { return a - b; }

  var starts = Array.from(hits.keys()).sort(byNumber);
  var lineNo = 0, prev = 0;
  starts.forEach(function (start) {
    for (var p = text.indexOf("\n", prev); p >= 0 && p < start; p = text.indexOf("\n", p + 1)) lineNo += 1;
    prev = start;
    var end = text.indexOf("\n", start);
    var line = text.slice(start, end >= 0 ? end : text.length);
    var number = lineNo + 1;
    var segments = line.split("\r").map(function (s) { return s.slice(0, rules.max_line); });
    var rank = rankOf(line);
    var targets = Array.from(hits.get(start));
    var nearIdx = targets.filter(function (t) { return t[0] === "1"; }).map(function (t) { return parseInt(t.slice(2), 10); }).sort(byNumber);
    var patIdx = targets.filter(function (t) { return t[0] === "0"; }).map(function (t) { return parseInt(t.slice(2), 10); }).sort(byNumber);
    nearIdx.forEach(function (i) {
      var rx = nears[i];
      if (rx && segments.some(function (s) { return rx.test(s); })) onNear(i, number);
    });
    function evidenceOf(segment, start, end) {
      var lead = segment.length - segment.replace(/^\s+/, "").length;
      var trimmed = segment.trim();
      var from = Math.max(0, start - lead), to = Math.min(trimmed.length, end - lead);
      return { file: file, line: number, rank: rank, text: elide(trimmed, from, to), matched: trimmed.slice(from, to) };
    }
    var readings = new Map();  // a line's readings, shared by its metric fingerprints
    function reading(name, k) {
      var key = name + "\u0000" + k;
      if (!readings.has(key)) readings.set(key, readMetric(name, segments[k]));
      return readings.get(key);
    }
    patIdx.forEach(function (i) {
      var fp = fps[i];
      if (fp.metric) {  // the reading of the first segment that has one
        for (var s = 0; s < segments.length; s++) {
          var got = reading(fp.metric, s);
          if (got === null) continue;
          var mev = evidenceOf(segments[s], got.start, got.end);
          if (fp.of) {
            var whole = reading(fp.of, s);
            if (got.value !== null && whole !== null && whole.value !== null && whole.value > 0) onNumeric(i, mev, got.value / whole.value, true);
          } else {
            onNumeric(i, mev, got.value, got.value !== null);
          }
          return;
        }
        return;
      }
      var found = null;
      for (var k = 0; k < segments.length && !found; k++) found = patterns[i].exec(segments[k]);
      if (!found) return;
      var ev = evidenceOf(found.input, found.index, found.index + found[0].length);
      if (fp.rising || fp.share_above) {
        var first = toNumber(found[1]);
        if (fp.rising) { if (first !== null) onNumeric(i, ev, first, true); }
        else {
          var part = toNumber(found[2]);
          if (first !== null && part !== null && first > 0) onNumeric(i, ev, part / first, true);
        }
      } else onHit(i, ev);
    });
  });

  // Rules 4 and 5: score and rank.
  var score = new Map(), evidence = new Map(), series = new Map();
  var CHECKS = ["rising", "share_above", "falls_to", "nonfinite"];
  fps.forEach(function (fp, i) {
    var st = state[i];
    if (!st.count) return;
    score.set(fp.slug, (score.get(fp.slug) || 0) + fp.score + (st.near ? rules.near_bonus : 0));
    if (!evidence.has(fp.slug)) evidence.set(fp.slug, []);
    Array.prototype.push.apply(evidence.get(fp.slug), st.evidence);
    if (st.series) {  // as diagnose._series_json
      var check = CHECKS.filter(function (c) { return fp[c] !== null && fp[c] !== undefined && fp[c] !== false; })[0];
      var metric = fp.metric || "value";
      if (!series.has(fp.slug)) series.set(fp.slug, []);
      series.get(fp.slug).push({ fingerprint: fp.id, file: file, check: check, metric: fp.of ? metric + " / " + fp.of : metric,
                                 readings: st.series.seen, points: st.series.points, fired: st.series.fired });
    }
  });
  function cmp(a, b) { return a < b ? -1 : a > b ? 1 : 0; }
  // Of two rows of one line, the one whose fingerprint matched more of it.
  function better(a, b) {
    return a.matched.length !== b.matched.length ? a.matched.length > b.matched.length
      : a.matched !== b.matched ? a.matched > b.matched : a.text >= b.text;
  }
  var candidates = [];
  score.forEach(function (total, slug) {
    if (total < rules.min_score) return;
    var rows = new Map();
    evidence.get(slug).forEach(function (e) { if (!rows.has(e.line) || !better(rows.get(e.line), e)) rows.set(e.line, e); });
    var evs = Array.from(rows.values());
    evs.sort(function (a, b) { return a.line - b.line; });
    candidates.push({ slug: slug, score: total, evidence: evs.slice(0, rules.evidence_per_entry), reach: evs[0].matched });
  });
  candidates.sort(function (a, b) {
    return b.score - a.score || a.evidence[0].line - b.evidence[0].line || b.reach.length - a.reach.length || cmp(a.slug, b.slug);
  });
  var entries = spec.entries;
  var caused = new Set();
  candidates.forEach(function (c) { entries[c.slug].often_causes.forEach(function (t) { if (t !== c.slug) caused.add(t); }); });
  var initiating = null;
  for (var k = 0; k < candidates.length; k++) if (!caused.has(candidates[k].slug)) { initiating = candidates[k].slug; break; }
  if (initiating === null && candidates.length) initiating = candidates[0].slug;
  var collateral = new Set(initiating ? entries[initiating].often_causes : []);
  var order = { initiating: 0, candidate: 1, collateral: 2 };
  var out = candidates.map(function (c, n) {
    var role = c.slug === initiating ? "initiating" : collateral.has(c.slug) ? "collateral" : "candidate";
    var e = entries[c.slug];
    var above = n ? candidates[n - 1] : null;
    var tied = above && above.score === c.score && above.evidence[0].line === c.evidence[0].line ? above.slug : null;
    return { slug: c.slug, title: e.title, url: e.url, confidence: Math.round(Math.min(1, c.score / 10) * 100) / 100,
             certainty: c.score >= 10 ? "definitive" : "strong", role: role, score: c.score, tied_with: tied, evidence: c.evidence,
             series: series.get(c.slug) || [], _n: n };
  });
  out.sort(function (a, b) { return order[a.role] - order[b.role] || a._n - b._n; });
  out.forEach(function (m) { delete m._n; });
  return out;
}

if (typeof module !== "undefined") module.exports = { diagnoseText: diagnoseText };
