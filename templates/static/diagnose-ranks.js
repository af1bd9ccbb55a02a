// Which rank started it: the browser side of generator/ranks.py, rule for rule, with the patterns
// it ships in the matcher definition (spec.rules.ranks); tests/test_ranks_browser.py checks that
// both give the same verdict on the same logs.
/* exported initiatingRank */
/* global rankPrefix */
"use strict";

// `merged` (optional): several files merged by diagnose-merge.js; `text` is then its merged text.
function initiatingRank(spec, text, matches, file, merged) {
  var R = spec.rules.ranks;
  var hostPrefix = new RegExp(spec.rules.ranks.merge.host_prefix);
  var single = file === undefined ? "-" : file;
  var src = null, fileHosts = new Map(), seen = new Set();
  var sources = merged ? merged.sources : [];
  var ansi = new RegExp(spec.rules.ansi, "g");
  var rankRes = spec.rules.rank_patterns.map(function (p) { return new RegExp(p); });
  var rx = {};
  ["rank_in_text", "watchdog", "enqueued", "first_dump", "nccl_host", "root_rank", "root_host", "barrier_failed", "horovod_missing",
    "horovod_stalled", "horovod_stalled_rank", "barrier_blames", "world_size", "line_host"].forEach(function (k) { rx[k] = new RegExp(R[k]); });

  function rankOf(line) { return rankPrefix(rankRes, line); }  // diagnose-engine.js, loaded first

  // --- the scanner -----------------------------------------------------------------------
  var ranks = new Map(), hosts = new Map(), world = null, rootCause = null, inRoot = 0, rootHost = null;
  function here() { return src ? src.name : single; }
  // Ranks the software names as not having arrived (monitored barrier, Horovod's stall report):
  // rank -> [times named, first line]; the ranks a barrier's waiters blame; the waiters.
  var named = new Map(), blamed = new Map(), waiters = new Set(), inStalled = 0;
  function name(table, rank, number, line) {
    if (table.has(rank)) table.get(rank)[0] += 1;
    else if (table.size < R.max_ranks) table.set(rank, [1, [here(), number, line.trim().slice(0, R.line_chars)]]);
  }
  function state(rank) {
    if (!ranks.has(rank)) {
      if (ranks.size >= R.max_ranks) return null;
      ranks.set(rank, { timedOut: null, enqueued: null, completed: null, firstDump: false, pg: null, lines: [] });
    }
    return ranks.get(rank);
  }
  function note(st, number, line) {
    if (st.lines.length < R.lines_per_rank) st.lines.push([here(), number, line.trim().slice(0, R.line_chars)]);
  }
  function hasLiteral(line) {
    for (var i = 0; i < R.literals.length; i++) if (line.indexOf(R.literals[i]) >= 0) return true;
    return false;
  }
  function onLine(raw, index) {
    var number = index + 1, m;
    if (merged) {  // each merged line at its own file's line (generator/ranks.py: feed_merged)
      src = merged.sources[merged.file[index]];
      number = merged.line[index];
      seen.add(src.name);
    }
    if (!inRoot && !inStalled && !hasLiteral(raw)) return;
    var line = raw.indexOf("\x1b") >= 0 ? raw.replace(ansi, "") : raw;
    line = line.replace(/\r+$/, "");
    if (inStalled) {
      if ((m = rx.horovod_stalled_rank.exec(line))) { inStalled -= 1; name(named, parseInt(m[1], 10), number, line); return; }
      inStalled = 0;
    }
    if ((m = rx.barrier_failed.exec(line))) { m[1].split(",").forEach(function (r) { name(named, parseInt(r, 10), number, line); }); return; }
    if ((m = rx.horovod_missing.exec(line))) { m[1].split(",").forEach(function (r) { name(named, parseInt(r, 10), number, line); }); return; }
    if (rx.horovod_stalled.test(line)) { inStalled = R.stalled_block_lines; return; }
    if ((m = rx.barrier_blames.exec(line))) {
      if (waiters.size < R.max_ranks) waiters.add(parseInt(m[1], 10));
      name(blamed, parseInt(m[2], 10), number, line);
      return;
    }
    if ((m = rx.world_size.exec(line))) { world = Math.max(world || 0, parseInt(m[1], 10)); return; }
    if (inRoot) {
      inRoot -= 1;
      if ((m = rx.root_host.exec(line))) rootHost = m[1];
      else if ((m = rx.root_rank.exec(line))) { rootCause = [parseInt(m[1], 10), rootHost, here(), number]; inRoot = 0; }
      return;
    }
    if (line.indexOf("Root Cause") >= 0) { inRoot = R.root_block_lines; rootHost = null; return; }
    if ((m = rx.nccl_host.exec(line))) {
      if (hosts.size < R.max_ranks) hosts.set(parseInt(m[2], 10), m[1]);
      world = Math.max(world || 0, parseInt(m[3], 10));
      return;
    }
    var who = rx.rank_in_text.exec(line);
    var prefixed = rankOf(line);
    if (prefixed === null && src !== null) prefixed = src.rank;  // a per-rank file's name is its lines' prefix
    var found = prefixed !== null ? prefixed : who ? parseInt(who[2], 10) : null;
    var pg = who && who[1] !== undefined ? who[1] : null;
    if (found === null) return;
    if (src !== null && !fileHosts.has(found) && fileHosts.size < R.max_ranks) {
      var hp = hostPrefix.exec(line);
      var fh = hp ? hp[1] : src.host;
      if (fh !== null) fileHosts.set(found, fh);
    }
    var st = state(found);
    if (st === null) return;
    if ((m = rx.watchdog.exec(line))) {
      if (st.timedOut === null) { st.timedOut = [parseInt(m[1], 10), m[2]]; if (pg !== null) st.pg = pg; }
      note(st, number, line);
    }
    if ((m = rx.enqueued.exec(line))) {
      st.enqueued = parseInt(m[1], 10); st.completed = parseInt(m[2], 10);
      if (pg !== null) st.pg = pg;
      note(st, number, line);
    }
    if (rx.first_dump.test(line)) { st.firstDump = true; note(st, number, line); }
  }
  // One log: the lines that hold a literal, found by one search over the text (splitting 50 MB
  // into lines costs more), and the lines of a block that a line opened, in order. Merged logs:
  // every line, each of which says which file was seen.
  if (merged) {
    var lines = text.split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    lines.forEach(onLine);
  }
  var anyLiteral = new RegExp(R.literals.map(function (l) { return l.replace(/[.*+?^${}()|[\]\\\/]/g, "\\$&"); }).join("|"), "g");
  var start = 0, index = 0, counted = 0;
  while (!merged && start < text.length) {
    if (!inRoot && !inStalled) {
      anyLiteral.lastIndex = start;
      var hit = anyLiteral.exec(text);
      if (!hit) break;
      start = hit.index === 0 ? 0 : text.lastIndexOf("\n", hit.index - 1) + 1;
    }
    for (var p = text.indexOf("\n", counted); p >= 0 && p < start; p = text.indexOf("\n", p + 1)) index += 1;
    counted = start;
    var end = text.indexOf("\n", start);
    onLine(text.slice(start, end >= 0 ? end : text.length), index);
    if (end < 0) break;
    start = end + 1;
  }

  // --- the verdict -----------------------------------------------------------------------
  function span(list) {
    var sorted = Array.from(new Set(list)).sort(function (a, b) { return a - b; });
    var runs = [];
    sorted.forEach(function (r) {
      if (runs.length && r === runs[runs.length - 1][runs[runs.length - 1].length - 1] + 1) runs[runs.length - 1].push(r);
      else runs.push([r]);
    });
    return runs.map(function (run) { return run.length > 2 ? run[0] + "-" + run[run.length - 1] : run.join(", "); }).join(", ");
  }
  function cmpTuple(a, b) { // (SeqNum, OpType) as Python compares tuples
    if (a[0] !== b[0]) return a[0] - b[0];
    return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
  }
  function byNumber(a, b) { return a - b; }
  function fromWatchdog() {
    var timed = new Map();
    ranks.forEach(function (st, r) { if (st.timedOut) timed.set(r, st); });
    if (!timed.size) return null;
    var groups = new Map();
    timed.forEach(function (st, r) {
      var key = st.pg === null ? "None" : st.pg;
      if (!groups.has(key)) groups.set(key, { pg: st.pg, ranks: [] });
      groups.get(key).ranks.push(r);
    });
    var best = null;
    groups.forEach(function (g, key) {
      if (best === null || g.ranks.length > best.g.ranks.length || (g.ranks.length === best.g.ranks.length && key > best.key)) best = { g: g, key: key };
    });
    var pg = best.g.pg, stuck = best.g.ranks;
    var top = null;
    stuck.forEach(function (r) { var t = timed.get(r).timedOut; if (top === null || cmpTuple(t, top) > 0) top = t; });
    var seq = top[0], op = top[1];
    var waiting = stuck.filter(function (r) { return timed.get(r).timedOut[0] === seq; });
    var where = op + " SeqNum " + seq + (pg !== null ? " of process group " + pg : "");
    var lagging = stuck.filter(function (r) { return timed.get(r).timedOut[0] < seq; }).sort(function (a, b) {
      return cmpTuple(timed.get(a).timedOut, timed.get(b).timedOut) || a - b;
    });
    if (lagging.length) {
      var lr = lagging[0], own = timed.get(lr).timedOut;
      return [lr, "ranks " + span(waiting) + " wait in " + where + "; rank " + lr + " timed out earlier, in " + own[1] + " SeqNum " + own[0] +
        ": it is behind the others (a different code path or a collective it alone skipped)", timed.get(lr).lines];
    }
    var behind = [];
    ranks.forEach(function (st, r) { if (st.enqueued !== null && st.enqueued < seq && st.pg === pg && waiting.indexOf(r) < 0) behind.push(r); });
    behind.sort(function (a, b) { return ((ranks.get(a).enqueued || 0) - (ranks.get(b).enqueued || 0)) || a - b; });
    if (behind.length) {
      var br = behind[0];
      return [br, "ranks " + span(waiting) + " timed out in " + where + "; rank " + br + "'s last enqueued work was " + ranks.get(br).enqueued +
        ": it never entered that collective", ranks.get(br).lines];
    }
    // Per-rank files say how many ranks there are too, and which printed nothing.
    var fileRanks = new Map();
    sources.forEach(function (s) { if (s.rank !== null) fileRanks.set(s.rank, s.name); });
    var expected = world ? world : fileRanks.size >= 2 ? Math.max.apply(null, Array.from(fileRanks.keys())) + 1 : 0;
    var silent = [];
    for (var r = 0; r < expected; r++) if (!timed.has(r)) silent.push(r);
    if (silent.length && waiting.length >= 2 && silent.length <= waiting.length) {
      var others = silent.slice(1).join(", ");
      var why = "";
      if (fileRanks.size && !fileRanks.has(silent[0])) why = " (no log file for it)";
      else if (fileRanks.has(silent[0]) && !seen.has(fileRanks.get(silent[0]))) why = " (its log file " + fileRanks.get(silent[0]) + " is empty)";
      return [silent[0], "ranks " + span(waiting) + " timed out in " + where + "; rank " + silent[0] + " reported no timeout" + why + ": it never entered that " +
        "collective, so look at what it was doing" + (others ? " (also silent: " + others + ")" : ""), []];
    }
    return null;  // the first rank to signal the flight-recorder dump waited longest: a victim
  }

  var verdict = null;
  var ownLines = true; // whether the verdict's lines are the named rank's own
  var top = matches.length ? matches[0] : null;
  var stuckRanks = new Set();
  ranks.forEach(function (st, r) { if (st.timedOut || st.enqueued !== null) stuckRanks.add(r); });
  waiters.forEach(function (r) { stuckRanks.add(r); });
  function mostNamed(table) { // most often named, then the lowest rank
    var best = null;
    table.forEach(function (v, r) { if (best === null || v[0] > table.get(best)[0] || (v[0] === table.get(best)[0] && r < best)) best = r; });
    return best;
  }
  if (named.size) {
    var nr = mostNamed(named);
    ownLines = false;
    var rest = Array.from(named.keys()).filter(function (r) { return r !== nr; });
    verdict = { rank: nr, reason: "the log names rank " + nr + " as the one that never reached the collective the others wait in" +
      (rest.length ? " (also named: " + span(rest) + ")" : ""), lines: [named.get(nr)[1]] };
  }
  if (verdict === null && top && top.role === "initiating") {
    var ranked = top.evidence.filter(function (e) { return e.rank !== null; });
    var own = ranked.filter(function (e) { return !stuckRanks.has(e.rank); });
    if (ranked.length && own.length) {
      var ev = own[0];  // the first (in time, for several files)
      verdict = { rank: ev.rank, reason: "rank " + ev.rank + " printed " + top.title, lines: [[ev.file, ev.line, ev.text]] };
    }
  }
  if (verdict === null && blamed.size) {
    var br2 = mostNamed(blamed);
    if (!waiters.has(br2)) {
      ownLines = false;
      var ws = Array.from(waiters);
      verdict = { rank: br2, reason: "rank" + (ws.length !== 1 ? "s" : "") + " " + span(ws) + " reached the barrier and wait" + (ws.length === 1 ? "s" : "") +
        " for rank " + br2 + ", which printed no error of its own: look at what it was doing", lines: [blamed.get(br2)[1]] };
    }
  }
  if (verdict === null) {
    var w = fromWatchdog();
    if (w) verdict = { rank: w[0], reason: w[1], lines: w[2] };
  }
  if (verdict === null && top && top.role === "initiating") verdict = fromFiles(top);
  if (verdict === null) return null;
  function asJson(v, host, disagrees) {
    return {
      rank: v.rank, host: host, origin: v.origin || null, reason: v.reason,
      lines: v.lines.map(function (l) { return { file: l[0], line: l[1], text: l[2] }; }), root_cause_disagrees: disagrees,
    };
  }
  if (verdict.rank === null) return asJson(verdict, verdict.host, null);
  var host = hosts.has(verdict.rank) ? hosts.get(verdict.rank) : null;
  if (host === null && ownLines) { // the rank's own NCCL line says where it runs
    for (var li = 0; li < verdict.lines.length; li++) {
      var hm = rx.line_host.exec(verdict.lines[li][2]);
      if (hm) { host = hm[1]; break; }
    }
  }
  if (host === null && fileHosts.has(verdict.rank)) host = fileHosts.get(verdict.rank);
  var disagrees = null;
  if (rootCause) {
    if (host === null && rootCause[0] === verdict.rank) host = rootCause[1];
    if (rootCause[0] !== verdict.rank) {
      disagrees = "torchrun's Root Cause (" + (sources.length ? rootCause[2] + ":" + rootCause[3] : "line " + rootCause[3]) + ") names rank " + rootCause[0] +
        ", the first to exit; it exited because of rank " + verdict.rank + "'s failure";
    }
  }
  return asJson(verdict, host, disagrees);

  // Several files whose lines carry no rank: the failure shows in some files only (every evidence
  // row shown, fewer than the cap), and the first is named for what its path says.
  function fromFiles(first) {
    if (!sources.length || first.evidence.length >= spec.rules.evidence_per_entry) return null;
    var byName = new Map();
    sources.forEach(function (s) { byName.set(s.name, s); });
    var files = new Set(first.evidence.map(function (e) { return e.file; }));
    var written = new Set(sources.filter(function (s) { return seen.has(s.name); }).map(function (s) { return s.name; }));
    var ev0 = first.evidence[0], s0 = byName.get(ev0.file);
    var subset = files.size < written.size && Array.from(files).every(function (f) { return written.has(f); });
    if (!s0 || s0.label === null || ev0.rank !== null || !subset) return null;
    return { rank: null, host: s0.host, origin: s0.label + " (" + s0.name + ")", lines: [[ev0.file, ev0.line, ev0.text]],
             reason: s0.label + " printed " + first.title + "; " + (written.size - files.size) + " of the " + written.size + " files do not show it" };
  }
}
