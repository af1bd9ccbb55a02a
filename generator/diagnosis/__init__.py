"""Diagnosis: the entries' fingerprints run over logs.

`matcher` compiles the fingerprints (literal prefilter, patterns, metric checks) and streams a log
through them; `ranks` and `rankrules` name the rank, node or host that failed first; `logmerge`
merges a folder of per-rank logs in time order.

An engine: imports `core` only (not `search`, `site` or the surfaces).
"""
