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
  // Rule 1: a whole key, not the end of a longer name or a validation figure (as metrics.read tests it).
  function wholeKey(line, start) {
    if (!start) return true;
    var before = line.charCodeAt(start - 1);
    if (before < 128 && keyChar[before]) return false;
    if (before !== 32) return true;
    for (var w = 0; w < notAfter.length; w++) if (line.endsWith(notAfter[w], start)) return false;
    return true;
  }
  // How a number ends: nan, inf and Infinity end with a letter.
  function finite(number) {
    var last = number.charCodeAt(number.length - 1);
    return (last >= 48 && last <= 57) || last === 46;
  }
  return function read(name, line) {
    var rx = compiled[name];
    var m, last = null;
    rx.lastIndex = 0;
    while ((m = rx.exec(line)) !== null) {  // rule 4: the last reading of the line
      if (wholeKey(line, m.index)) { last = m; rx.lastIndex = m.index + m[0].length; }
      else rx.lastIndex = m.index + 1;
    }
    if (last === null) return null;
    var key = last[1], number = last[2], unit = last[3];
    var value = null;
    if (finite(number)) {
      value = parseFloat(number);
      if (unit) value *= rules.units[rules.kinds[name]][unit] || 1;
      if (Object.prototype.hasOwnProperty.call(rules.key_scale, key)) value *= rules.key_scale[key];
    }
    return { value: value, start: last.index, end: last.index + last[0].length };
  };
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
