// Several log files (one per rank or node) -> one log in time order, each line with its origin:
// the browser side of generator/logmerge.py, rule for rule, with the patterns it ships in the
// matcher definition (spec.rules.ranks.merge); tests/test_multifile_browser.py checks both engines agree.
/* exported mergeLogs, remapEvidence, logIdentity, naturalCompare */
"use strict";

// Rule 1: digit runs compare as numbers, the rest as text.
function naturalCompare(a, b) {
  var pa = a.split(/(\d+)/), pb = b.split(/(\d+)/);
  for (var i = 0; i < Math.min(pa.length, pb.length); i++) {
    if (i % 2) {  // as numbers, exactly (a run of 20 digits is past a double): length, then digits
      var na = pa[i].replace(/^0+/, ""), nb = pb[i].replace(/^0+/, "");
      if (na.length !== nb.length) return na.length - nb.length;
      if (na !== nb) return na < nb ? -1 : 1;
    } else if (pa[i] !== pb[i]) return pa[i] < pb[i] ? -1 : 1;
  }
  return pa.length - pb.length;
}

// Rule 2: a file's rank, node or host from its path.
function logIdentity(M, name) {
  var path = name.replace(/\\/g, "/");
  for (var k = 0; k < M.paths.length; k++) {
    var rule = M.paths[k];
    var m = new RegExp(rule.pattern).exec(path);
    if (!m) continue;
    if (rule.kind === "host") return { name: name, rank: null, label: rule.label + " " + m[1], host: m[1] };
    var n = parseInt(m[1], 10);
    return { name: name, rank: rule.kind === "rank" ? n : null, label: rule.label + " " + n, host: null };
  }
  return { name: name, rank: null, label: null, host: null };
}

// Several texts -> { text, sources, file, line }: the merged log, each file's identity, and the
// file index and line number of each merged line.
function mergeLogs(spec, files) {
  var M = spec.rules.ranks.merge;
  var stampRx = new RegExp(M.timestamps.map(function (p) { return "(?:" + p + ")"; }).join("|"));
  var months = {};
  M.months.forEach(function (name, n) { months[name] = n + 1; });
  // Rule 3: a line's time in microseconds from 1 January (31-day months), or null.
  function stamp(line) {
    var m = stampRx.exec(line.slice(0, M.stamp_chars));
    if (!m) return null;
    var k = 0;
    while (m[k + 3] === undefined) k += 6;
    var mon = months.hasOwnProperty(m[k + 1]) ? months[m[k + 1]] : parseInt(m[k + 1], 10);
    var frac = ((m[k + 6] || "") + "000000").slice(0, 6);
    return ((((mon - 1) * 31 + parseInt(m[k + 2], 10) - 1) * 24 + parseInt(m[k + 3], 10)) * 60 + parseInt(m[k + 4], 10)) * 60 * 1000000 +
      parseInt(m[k + 5], 10) * 1000000 + parseInt(frac, 10);
  }
  var order = files.map(function (f, i) { return i; });
  order.sort(function (a, b) { return naturalCompare(files[a].name, files[b].name) || a - b; });
  var sorted = order.map(function (i) { return files[i]; });
  var sources = sorted.map(function (f) { return logIdentity(M, f.name); });
  var lines = sorted.map(function (f) {
    var ls = f.text.split("\n");
    if (ls.length && ls[ls.length - 1] === "") ls.pop();
    return ls;
  });
  // Rule 4: repeatedly take the next line with the smallest (time, file order); a heap of files.
  var pos = lines.map(function () { return 0; }), times = lines.map(function () { return -1; }), heap = [];
  function less(a, b) { return times[a] !== times[b] ? times[a] < times[b] : a < b; }
  function push(i) {
    if (pos[i] >= lines[i].length) return;
    var t = stamp(lines[i][pos[i]]);
    if (t !== null) times[i] = t;
    heap.push(i);
    for (var c = heap.length - 1; c > 0;) {
      var p = (c - 1) >> 1;
      if (!less(heap[c], heap[p])) break;
      var x = heap[c]; heap[c] = heap[p]; heap[p] = x; c = p;
    }
  }
  function pop() {
    var top = heap[0], last = heap.pop();
    if (heap.length) {
      heap[0] = last;
      for (var c = 0; ;) {
        var l = 2 * c + 1, r = l + 1, s = c;
        if (l < heap.length && less(heap[l], heap[s])) s = l;
        if (r < heap.length && less(heap[r], heap[s])) s = r;
        if (s === c) break;
        var x = heap[c]; heap[c] = heap[s]; heap[s] = x; c = s;
      }
    }
    return top;
  }
  var total = lines.reduce(function (n, ls) { return n + ls.length; }, 0);
  var fileOf = new Int32Array(total), lineOf = new Int32Array(total), out = new Array(total);
  lines.forEach(function (ls, i) { push(i); });
  for (var n = 0; heap.length; n++) {
    var i = pop();
    out[n] = lines[i][pos[i]];
    fileOf[n] = i;
    lineOf[n] = pos[i] + 1;
    pos[i] += 1;
    push(i);
  }
  return { text: total ? out.join("\n") + "\n" : "", sources: sources, file: fileOf, line: lineOf,
           seen: lines.map(function (ls) { return ls.length > 0; }) };
}

// The matches of the merged text, each evidence line at its own file and line (and the file's
// rank where the line names none), as logmerge.MergedLog.result does.
function remapEvidence(merged, matches) {
  matches.forEach(function (m) {
    m.evidence = m.evidence.map(function (e) {
      var src = merged.sources[merged.file[e.line - 1]];
      return { file: src.name, line: merged.line[e.line - 1], rank: e.rank !== null ? e.rank : src.rank, text: e.text, matched: e.matched };
    });
    // A series read from one file is told in that file's lines; one that spans several keeps the
    // merged log's (logmerge.py: MergedLog.result).
    m.series = (m.series || []).map(function (s) {
      var all = s.points.concat(s.fired);
      var file = merged.file[all[0][0] - 1];
      if (!all.every(function (p) { return merged.file[p[0] - 1] === file; })) return s;
      function here(p) { return [merged.line[p[0] - 1], p[1]]; }
      var out = {};
      Object.keys(s).forEach(function (k) { out[k] = s[k]; });
      out.file = merged.sources[file].name;
      out.points = s.points.map(here);
      out.fired = s.fired.map(here);
      return out;
    });
  });
  return matches;
}

if (typeof module !== "undefined") module.exports = { mergeLogs: mergeLogs, remapEvidence: remapEvidence, naturalCompare: naturalCompare };
