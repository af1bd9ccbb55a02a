// Web Worker: matching runs here so a 50 MB log does not freeze the page.
/* global diagnoseText, initiatingRank, mergeLogs, remapEvidence */
"use strict";
importScripts("diagnose-metrics.js", "diagnose-engine.js", "diagnose-ranks.js", "diagnose-merge.js");

// A NUL in a log's first 8192 characters: a binary file (diagnose.py: looks_binary).
function looksBinary(text) { return text.slice(0, 8192).indexOf("\u0000") >= 0; }

async function readText(file) {
  var head = new Uint8Array(await file.slice(0, 2).arrayBuffer());
  if (head[0] === 0x1f && head[1] === 0x8b && typeof DecompressionStream !== "undefined") {
    var stream = file.stream().pipeThrough(new DecompressionStream("gzip"));
    return await new Response(stream).text();
  }
  return await file.text();
}

function lineCount(text) {
  var lines = 0;
  for (var p = text.indexOf("\n"); p >= 0; p = text.indexOf("\n", p + 1)) lines += 1;
  return lines;
}

// Several files (one per rank or node): merged in time order by diagnose-merge.js, the rules of
// generator/logmerge.py; the evidence keeps each line's own file and line.
function diagnoseFiles(spec, files) {
  var merged = mergeLogs(spec, files);
  var matches = remapEvidence(merged, diagnoseText(spec, merged.text, "merged"));
  var rank = initiatingRank(spec, merged.text, matches, "merged", merged);
  var sources = merged.sources.map(function (s) { return { file: s.name, rank: s.rank, label: s.label, host: s.host }; });
  return { matches: matches, rank: rank, lines: merged.file.length, files: sources };
}

self.onmessage = async function (ev) {
  var msg = ev.data;
  try {
    var started = Date.now();
    if (msg.files && msg.files.length > 1) {
      var max = msg.spec.rules.ranks.merge.max_files;
      if (msg.files.length > max) {
        self.postMessage({ error: msg.files.length + " files: more than the " + max + " one diagnosis merges. Choose the files of one job." });
        return;
      }
      var texts = [];
      for (var i = 0; i < msg.files.length; i++) {
        var f = msg.files[i];
        var t = await readText(f.file);
        if (looksBinary(t)) {
          if (msg.folder) continue;  // a folder's binary files are passed over, as in the terminal
          self.postMessage({ error: f.name + " looks like a binary file, not a text log. Leave it out." });
          return;
        }
        texts.push({ name: f.name, text: t });
      }
      if (!texts.length) { self.postMessage({ error: "No text logs in the folder." }); return; }
      var out = diagnoseFiles(msg.spec, texts);
      out.ms = Date.now() - started;
      self.postMessage(out);
      return;
    }
    var one = msg.files ? msg.files[0] : null;
    var text = one ? await readText(one.file) : msg.text;
    var name = one ? one.name : msg.name || "-";
    if (looksBinary(text)) {
      self.postMessage({ error: "This looks like a binary file, not a text log." });
      return;
    }
    var matches = diagnoseText(msg.spec, text, name);
    var rank = initiatingRank(msg.spec, text, matches, name);
    self.postMessage({ matches: matches, rank: rank, lines: lineCount(text), ms: Date.now() - started });
  } catch (e) {
    self.postMessage({ error: "Could not read the log: " + (e && e.message ? e.message : e) });
  }
};
