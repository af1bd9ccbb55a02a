// Web Worker: matching runs here so a 50 MB log does not freeze the page.
/* global diagnoseText, initiatingRank */
"use strict";
importScripts("diagnose-metrics.js", "diagnose-engine.js", "diagnose-ranks.js");

async function readText(file) {
  var head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  if (head[0] === 0x1f && head[1] === 0x8b && typeof DecompressionStream !== "undefined") {
    var stream = file.stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  }
  return await file.text();
}

self.onmessage = async function (ev) {
  var msg = ev.data;
  try {
    var text = msg.file ? await readText(msg.file) : msg.text;
    if (text.slice(0, 8192).indexOf("\u0000") >= 0) {
      self.postMessage({ error: "This looks like a binary file, not a text log." });
      return;
    }
    var started = Date.now();
    var matches = diagnoseText(msg.spec, text, msg.name || "-");
    var lines = 0;
    for (var p = text.indexOf("\n"); p >= 0; p = text.indexOf("\n", p + 1)) lines += 1;
    var rank = initiatingRank(msg.spec, text, matches);
    self.postMessage({ matches: matches, rank: rank, lines: lines, ms: Date.now() - started });
  } catch (e) {
    self.postMessage({ error: "Could not read the log: " + (e && e.message ? e.message : e) });
  }
};
