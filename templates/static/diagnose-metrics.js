// Metrics read from any log format: the browser twin of generator/metrics.py. It follows the
// rules written at the top of that module, step by step, on the patterns the matcher definition
// carries (`rules.metrics`); tests/test_diagnose_browser.py checks both read the same series.
/* exported metricReader, MetricSeries */
"use strict";

// name, line -> {value (null: nan or inf), start, end} of the quantity's last reading, or null.
function metricReader(rules) {
  var compiled = {};
  Object.keys(rules.patterns).forEach(function (name) { compiled[name] = new RegExp(rules.patterns[name], "g"); });
  var keyChar = new Uint8Array(128);
  for (var c = 0; c < rules.key_chars.length; c++) keyChar[rules.key_chars.charCodeAt(c)] = 1;
  var notAfter = rules.not_after;
  // The character before the space of each not_after word that ends with one (the others can
  // never end where a space precedes the key); 0x10000: a word that is a space alone.
  var beforeSpace = new Uint8Array(0x10001);
  notAfter.forEach(function (w) {
    if (w.charCodeAt(w.length - 1) === 32) beforeSpace[w.length > 1 ? w.charCodeAt(w.length - 2) : 0x10000] = 1;
  });
  // Rule 1: a whole key, not the end of a longer name or a validation figure (as metrics.read tests it).
  function wholeKey(line, start) {
    if (!start) return true;
    var before = line.charCodeAt(start - 1);
    if (before < 128 && keyChar[before]) return false;
    if (before !== 32) return true;
    if (!beforeSpace[0x10000] && (start < 2 || !beforeSpace[line.charCodeAt(start - 2)])) return true;
    for (var w = 0; w < notAfter.length; w++) if (line.endsWith(notAfter[w], start)) return false;
    return true;
  }
  // How a number ends: nan, inf and Infinity end with a letter.
  function finite(number) {
    var last = number.charCodeAt(number.length - 1);
    return (last >= 48 && last <= 57) || last === 46;
  }
  function valueOf(name, m) {
    var key = m[1], number = m[2], unit = m[3];
    var value = null;
    if (finite(number)) {
      value = parseFloat(number);
      if (unit) value *= rules.units[rules.kinds[name]][unit] || 1;
      if (Object.prototype.hasOwnProperty.call(rules.key_scale, key)) value *= rules.key_scale[key];
    }
    return value;
  }
  function read(name, line) {
    var rx = compiled[name];
    var m, last = null;
    rx.lastIndex = 0;
    while ((m = rx.exec(line)) !== null) {  // rule 4: the last reading of the line
      if (wholeKey(line, m.index)) { last = m; rx.lastIndex = m.index + m[0].length; }
      else rx.lastIndex = m.index + 1;
    }
    if (last === null) return null;
    return { value: valueOf(name, last), start: last.index, end: last.index + last[0].length };
  }
  // Whether read(name, segment) may be replaced by one search of the whole text (scan below):
  // nothing in the pattern can match or look at a line break, so a match, and the test of what
  // follows it, stay inside one segment (a line's part between \r), and rule 1 finds no key
  // character or not_after word across a break.
  var breakFree = function (s) { return s.indexOf("\n") < 0 && s.indexOf("\r") < 0; };
  read.lineLocal = function (name) {
    var src = rules.patterns[name];
    if (!src || /[\x00-\x1f]/.test(src) || keyChar[10] || keyChar[13] || !notAfter.every(breakFree)) return false;
    if (/\\[sSWDnrxuc0pP]/.test(src)) return false;  // escapes that may stand for a line break
    var bare = src.replace(/\\./g, "e");
    if (/\[\^/.test(bare)) return false;  // a negated class matches line breaks
    return !/[.^$]/.test(bare.replace(/\[[^\]]*\]/g, "e"));
  };
  // Every segment's reading of `name` in the whole text, in text order, one segment per next()
  // (for a lineLocal pattern: the same matches, rule 1 and rule 4 as read() on each segment; V8
  // runs one regex natively over the text instead of twice per line). nl, cr: the positions of
  // every \n and \r. After next() returns true: the segment's line number, line and segment
  // bounds, its last reading's start, end, value (NaN: not finite) and key; after false, seg is
  // Infinity. from, to: a start and an end of lines, where the search is bounded.
  read.cursor = function (name, text, nl, cr, from, to) {
    var rx = new RegExp(rules.patterns[name], "g");  // its own lastIndex
    var part = text.slice(from, to);  // V8 makes no copy of it
    var li = 0, ci = 0, nn = nl.length, nc = cr.length, started = false;
    var c = { line: 0, lineStart: 0, lineEnd: 0, seg: -1, segEnd: 0, start: 0, end: 0, value: NaN, key: "", next: next };
    var pending = null, pLine = 0, pLineStart = 0, pLineEnd = 0, pSeg = 0, pSegEnd = 0;
    function passing() {  // the next match rule 1 keeps, and where its segment lies
      var m;
      while ((m = rx.exec(part)) !== null) {
        if (!wholeKey(part, m.index)) { rx.lastIndex = m.index + 1; continue; }
        rx.lastIndex = m.index + m[0].length;
        var at = m.index + from;
        while (li < nn && nl[li] < at) li++;
        while (ci < nc && cr[ci] < at) ci++;
        pLine = li + 1;
        pLineStart = li ? nl[li - 1] + 1 : 0;
        pLineEnd = li < nn ? nl[li] : text.length;
        pSeg = ci && cr[ci - 1] + 1 > pLineStart ? cr[ci - 1] + 1 : pLineStart;
        pSegEnd = ci < nc && cr[ci] < pLineEnd ? cr[ci] : pLineEnd;
        return m;
      }
      return null;
    }
    function next() {
      if (!started) { started = true; pending = passing(); }
      if (pending === null) { c.seg = Infinity; return false; }
      var last = pending;
      c.line = pLine; c.lineStart = pLineStart; c.lineEnd = pLineEnd; c.seg = pSeg; c.segEnd = pSegEnd;
      while ((pending = passing()) !== null && pSeg === c.seg) last = pending;  // rule 4: the segment's last
      var value = valueOf(name, last);
      c.start = last.index + from; c.end = last.index + from + last[0].length; c.value = value === null ? NaN : value; c.key = last[1];
      return true;
    }
    return c;
  };
  return read;
}

// The readings of one fingerprint: at most `cap` points, thinned as metrics.Series thins them.
function MetricSeries(cap) {
  this.points = [];
  this.fired = [];
  this.stride = 1;
  this.seen = 0;
  this.cap = cap;
}
MetricSeries.prototype.add = function (line, value) {
  if (this.seen % this.stride === 0) {
    this.points.push([line, value]);
    if (this.points.length > this.cap) {
      this.points = this.points.filter(function (_, k) { return k % 2 === 0; });
      this.stride *= 2;
    }
  }
  this.seen += 1;
};
MetricSeries.prototype.fire = function (line, value, limit) {
  if (this.fired.length < limit && (!this.fired.length || this.fired[this.fired.length - 1][0] !== line)) this.fired.push([line, value]);
};

if (typeof module !== "undefined") module.exports = { metricReader: metricReader, MetricSeries: MetricSeries };
