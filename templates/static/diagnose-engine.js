// The browser engine of `failpedia diagnose`. It follows, step by step, the rules written at the
// top of generator/diagnose.py, on the same matcher definition (/api/fingerprints.json);
// tests/test_diagnose_browser.py checks that both engines rank every test log the same way.
/* exported diagnoseText, rankPrefix, literalScanner */
/* global metricReader, MetricSeries */
"use strict";

// Rule 2's substring search for every literal at once: an Aho-Corasick automaton over the UTF-16
// code units of the literals, run in one pass over the text (generator/diagnose.py does the same
// with a Rust one over UTF-8 bytes). scan(text, found) calls found(literal index, start) for every
// occurrence, overlapping ones too, in the order they end.
function literalScanner(literals) {
  var classOf = new Uint16Array(65536), classes = 1, size = 1;
  literals.forEach(function (lit) {
    size += lit.length;
    for (var k = 0; k < lit.length; k++) if (!classOf[lit.charCodeAt(k)]) classOf[lit.charCodeAt(k)] = classes++;
  });
  // The trie, then its states renumbered breadth first: the shallow states, where the scan spends
  // most of its time, then lie together in the table (it is large: states x classes).
  var trie = new Int32Array(size * classes), ends = new Int32Array(size).fill(-1), count = 1;
  literals.forEach(function (lit, li) {
    var s = 0;
    for (var k = 0; k < lit.length; k++) {
      var e = s * classes + classOf[lit.charCodeAt(k)];
      if (!trie[e]) trie[e] = count++;
      s = trie[e];
    }
    ends[s] = li;
  });
  var order = new Int32Array(count), id = new Int32Array(count), head = 0, tail = 1;
  while (head < tail) {
    var s = order[head++];
    for (var c = 0; c < classes; c++) if (trie[s * classes + c]) { id[trie[s * classes + c]] = tail; order[tail++] = trie[s * classes + c]; }
  }
  var delta = new Int32Array(count * classes), fail = new Int32Array(count), outHead = new Int32Array(count).fill(-1);
  var outLit = [], outNext = [], lens = literals.map(function (lit) { return lit.length; });
  // In breadth-first order: failure links, outputs inherited from them, missing edges filled in.
  for (var q = 0; q < count; q++) {
    var old = order[q], f = fail[q];
    if (ends[old] >= 0) { outLit.push(ends[old]); outNext.push(q ? outHead[f] : -1); outHead[q] = outLit.length - 1; }
    else if (q) outHead[q] = outHead[f];
    for (c = 0; c < classes; c++) {
      var t = trie[old * classes + c];
      if (t) { delta[q * classes + c] = id[t]; fail[id[t]] = q ? delta[f * classes + c] : 0; }
      else delta[q * classes + c] = q ? delta[f * classes + c] : 0;
    }
  }
  // The scan reads one table entry per character: each entry is the next state's row offset
  // (state x classes), complemented where that state has outputs.
  for (var x = 0; x < delta.length; x++) { var to = delta[x]; delta[x] = outHead[to] >= 0 ? ~(to * classes) : to * classes; }
  return {
    scan: function (text, found) {
      var row = 0;
      for (var p = 0, n = text.length; p < n; p++) {
        row = delta[row + classOf[text.charCodeAt(p)]];
        if (row < 0) {
          row = ~row;
          for (var k = outHead[row / classes]; k >= 0; k = outNext[k]) found(outLit[k], p + 1 - lens[outLit[k]]);
        }
      }
    }
  };
}

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
  // reading, or the share for share_above; null when it is not finite). True when it fired: the
  // caller then makes the evidence and calls onHit (a metric fingerprint may still need its `near`).
  function onNumeric(i, number, value, finite) {
    var fp = fps[i], st = state[i], fired = false;
    st.series.add(number, value);
    if (fp.nonfinite) {
      if (finite) st.good += 1;
      fired = !finite && st.good > 0;
    } else if (value === null) {
      return false;
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
    if (fired) st.series.fire(number, value, rules.evidence_per_fingerprint);
    return fired;
  }

  // literal -> its targets: fingerprint i's pattern is target i, its `near` pattern n + i
  var n = fps.length, literalList = [], targetsOf = [], spotsOf = [], literalIndex = new Map();
  function literalAt(lit) {
    var k = literalIndex.get(lit);
    if (k === undefined) { k = literalList.length; literalIndex.set(lit, k); literalList.push(lit); targetsOf.push([]); spotsOf.push(null); }
    return k;
  }
  function addLiteral(lit, target) {
    var k = literalAt(lit);
    if (targetsOf[k].indexOf(target) < 0) targetsOf[k].push(target);
  }
  // A metric fingerprint's literals are its quantity's spellings: where its pattern is lineLocal,
  // its lines are found by one search for readings (metricLines below) instead of by the literal
  // scan, where every spelling would make each line a candidate; the scan only notes where its
  // first and last literal lie, which bound that search (firstAt, lastAt).
  var wholeText = fps.map(function (fp) {
    return Boolean(fp.metric) && readMetric.lineLocal(fp.metric) && (!fp.of || readMetric.lineLocal(fp.of)) &&
      fp.literals.every(function (lit) { return lit.indexOf("\n") < 0; });
  });
  var firstAt = new Float64Array(n).fill(-1), lastAt = new Float64Array(n).fill(-1);
  fps.forEach(function (fp, i) {
    if (wholeText[i]) fp.literals.forEach(function (lit) { var k = literalAt(lit); (spotsOf[k] = spotsOf[k] || []).push(i); });
    else fp.literals.forEach(function (lit) { addLiteral(lit, i); });
    fp.near_literals.forEach(function (lit) { addLiteral(lit, n + i); });
  });

  // Rule 2: candidate lines from a substring search.
  // Matches come in the order they end, so without a literal that holds a newline their lines
  // come in order too, and a line is new when it is not the current one.
  var starts = [], ends = [], targets = [], lineOf = new Map(), ordered = true, current = -1;
  var inOrder = literalList.every(function (lit) { return lit.indexOf("\n") < 0; });
  if (literalList.length) literalScanner(literalList).scan(text, function (k, pos) {
    var spots = spotsOf[k];
    if (spots !== null) {
      for (var j = 0; j < spots.length; j++) { if (firstAt[spots[j]] < 0) firstAt[spots[j]] = pos; lastAt[spots[j]] = pos; }
      if (!targetsOf[k].length) return;
    }
    if (current < 0 || pos < starts[current] || pos >= ends[current]) {
      var start = pos === 0 ? 0 : text.lastIndexOf("\n", pos - 1) + 1;
      current = inOrder ? undefined : lineOf.get(start);
      if (current === undefined) {
        var end = text.indexOf("\n", pos);
        if (starts.length && start < starts[starts.length - 1]) ordered = false;  // a literal that holds a newline
        current = starts.length;
        if (!inOrder) lineOf.set(start, current);
        starts.push(start); ends.push(end >= 0 ? end : text.length); targets.push([]);
      }
    }
    var into = targets[current], add = targetsOf[k];
    for (j = 0; j < add.length; j++) if (into.indexOf(add[j]) < 0) into.push(add[j]);
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
  function evidenceIn(number, rank, segment, start, end) {
    var lead = segment.length - segment.replace(/^\s+/, "").length;
    var trimmed = segment.trim();
    var from = Math.max(0, start - lead), to = Math.min(trimmed.length, end - lead);
    return { file: file, line: number, rank: rank, text: elide(trimmed, from, to), matched: trimmed.slice(from, to) };
  }

  // The lines of fingerprint i (wholeText) and what the loop below does on each: its quantity's
  // reading of the line's first segment that has one, on the lines that hold one of its literals.
  // Lines longer than max_line are read as the loop reads them (segments cut at max_line).
  var breaks = null;
  function lineBreaks() {
    if (breaks) return breaks;
    var nl = [], cr = [], long = [];
    for (var p = text.indexOf("\n"); p >= 0; p = text.indexOf("\n", p + 1)) nl.push(p);
    for (p = text.indexOf("\r"); p >= 0; p = text.indexOf("\r", p + 1)) cr.push(p);
    for (var k = 0, from = 0; k <= nl.length; k++) {  // [line number, start, end] of each long line
      var to = k < nl.length ? nl[k] : text.length;
      if (to - from > rules.max_line) long.push([k + 1, from, to]);
      from = to + 1;
    }
    breaks = { nl: nl, cr: cr, long: long };
    return breaks;
  }
  function metricLines(i) {
    if (firstAt[i] < 0) return;  // none of its literals in the text: no line of it
    var from = text.lastIndexOf("\n", firstAt[i]) + 1, to = text.indexOf("\n", lastAt[i]);
    if (to < 0) to = text.length;
    var fp = fps[i], b = lineBreaks(), long = b.long, q = readMetric.cursor(fp.metric, text, b.nl, b.cr, from, to), o = null;
    var lits = fp.literals, isLiteral = new Map(), near = nearLines[i], ni = 0, gi = 0, lastLine = -1;
    function hasLiteral(line) { return lits.some(function (lit) { return line.indexOf(lit) >= 0; }); }
    function keyIsLiteral(key) {  // a spelling that holds one of the literals (the spellings are the literals)
      if (!isLiteral.has(key)) isLiteral.set(key, hasLiteral(key));
      return isLiteral.get(key);
    }
    function nearUpTo(number) { while (near && ni < near.length && near[ni] <= number) onNear(i, near[ni++]); }
    function longLine(g) {  // as the loop below: the line's segments cut at max_line
      var number = long[g][0], line = text.slice(long[g][1], long[g][2]);
      if (!hasLiteral(line)) return;
      nearUpTo(number);
      var segments = line.split("\r").map(function (s) { return s.slice(0, maxLine); });
      for (var s = 0; s < segments.length; s++) {
        var got = readMetric(fp.metric, segments[s]);
        if (got === null) continue;
        var fired = false;
        if (fp.of) {
          var whole = readMetric(fp.of, segments[s]);
          if (got.value !== null && whole !== null && whole.value !== null && whole.value > 0) fired = onNumeric(i, number, got.value / whole.value, true);
        } else fired = onNumeric(i, number, got.value, got.value !== null);
        if (fired) onHit(i, evidenceIn(number, rankOf(line), segments[s], got.start, got.end));
        return;
      }
    }
    while (q.next()) {
      var number = q.line;
      if (number === lastLine) continue;  // a later segment of a line already read
      lastLine = number;
      var lineStart = q.lineStart, lineEnd = q.lineEnd, seg = q.seg;
      if (lineEnd - lineStart > maxLine) continue;  // a long line: longLine
      while (gi < long.length && long[gi][0] < number) longLine(gi++);
      if (!keyIsLiteral(q.key) && !hasLiteral(text.slice(lineStart, lineEnd))) continue;
      nearUpTo(number);
      var value = q.value, fired = false, finite = value === value;
      if (fp.of) {  // the reading of the same segment
        if (o === null) o = readMetric.cursor(fp.of, text, b.nl, b.cr, from, to);
        while (o.seg < seg) o.next();
        var whole = o.seg === seg ? o.value : NaN;
        if (finite && whole === whole && whole > 0) fired = onNumeric(i, number, value / whole, true);
      } else fired = onNumeric(i, number, finite ? value : null, finite);
      if (fired) onHit(i, evidenceIn(number, rankOf(text.slice(lineStart, lineEnd)), text.slice(seg, q.segEnd), q.start - seg, q.end - seg));
    }
    while (gi < long.length) longLine(gi++);
    nearUpTo(Infinity);
  }

  var order = starts.map(function (_, k) { return k; });
  if (!ordered) order.sort(function (a, b) { return starts[a] - starts[b]; });
  // A `near` line only matters to a fingerprint whose pattern has a candidate line somewhere.
  // One read over the whole text has its `near` lines kept (nearLines) and replayed in line
  // order with its readings (metricLines): each fingerprint's state is its own, so that is the
  // order of the rules.
  var hasCandidate = new Uint8Array(n), nearLines = fps.map(function () { return null; });
  targets.forEach(function (ts) { for (var t = 0; t < ts.length; t++) if (ts[t] < n) hasCandidate[ts[t]] = 1; });
  fps.forEach(function (fp, i) { if (wholeText[i] && firstAt[i] >= 0) { hasCandidate[i] = 1; if (fp.near) nearLines[i] = []; } });
  var lineNo = 0, prev = 0, maxLine = rules.max_line, nl = wholeText.some(function (w, i) { return w && firstAt[i] >= 0; }) ? lineBreaks().nl : null;
  order.forEach(function (k) {
    var found = targets[k].filter(function (t) { return t < n || hasCandidate[t - n]; });
    if (!found.length) return;
    found.sort(byNumber);
    var start = starts[k];
    if (nl) { while (lineNo < nl.length && nl[lineNo] < start) lineNo += 1; }  // the line breaks before it
    else for (var p = text.indexOf("\n", prev); p >= 0 && p < start; p = text.indexOf("\n", p + 1)) lineNo += 1;
    prev = start;
    var line = text.slice(start, ends[k]);
    var number = lineNo + 1;
    var segments = line.indexOf("\r") >= 0 ? line.split("\r").map(function (s) { return s.slice(0, maxLine); })
      : [line.length > maxLine ? line.slice(0, maxLine) : line];
    for (var t = 0; t < found.length; t++) {  // on one line, `near` patterns first, then patterns
      if (found[t] >= n) {
        var j = found[t] - n, rx = nears[j];
        if (rx && segments.some(function (s) { return rx.test(s); })) {
          if (nearLines[j]) nearLines[j].push(number);
          else onNear(j, number);
        }
      }
    }
    var rank;  // read once, when the line gives evidence
    function evidenceOf(segment, start, end) {
      if (rank === undefined) rank = rankOf(line);
      return evidenceIn(number, rank, segment, start, end);
    }
    var readings = null;  // a line's readings, shared by its metric fingerprints (made on first use)
    function reading(name, k) {
      var key = k ? name + "\u0000" + k : name;
      if (readings === null) readings = new Map();
      else if (readings.has(key)) return readings.get(key);
      var got = readMetric(name, segments[k]);
      readings.set(key, got);
      return got;
    }
    for (t = 0; t < found.length && found[t] < n; t++) {
      var i = found[t], fp = fps[i];
      if (fp.metric) {  // the reading of the first segment that has one
        for (var s = 0; s < segments.length; s++) {
          var got = reading(fp.metric, s);
          if (got === null) continue;
          var fired = false;
          if (fp.of) {
            var whole = reading(fp.of, s);
            if (got.value !== null && whole !== null && whole.value !== null && whole.value > 0) fired = onNumeric(i, number, got.value / whole.value, true);
          } else {
            fired = onNumeric(i, number, got.value, got.value !== null);
          }
          if (fired) onHit(i, evidenceOf(segments[s], got.start, got.end));
          break;
        }
        continue;
      }
      var m = null;
      for (var g = 0; g < segments.length && !m; g++) m = patterns[i].exec(segments[g]);
      if (!m) continue;
      var ev = evidenceOf.bind(null, m.input, m.index, m.index + m[0].length);
      if (fp.rising || fp.share_above) {
        var first = toNumber(m[1]);
        if (fp.rising) { if (first !== null && onNumeric(i, number, first, true)) onHit(i, ev()); }
        else {
          var part = toNumber(m[2]);
          if (first !== null && part !== null && first > 0 && onNumeric(i, number, part / first, true)) onHit(i, ev());
        }
      } else onHit(i, ev());
    }
  });

  fps.forEach(function (fp, i) { if (wholeText[i]) metricLines(i); });

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
