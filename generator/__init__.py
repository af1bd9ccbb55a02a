"""Failpedia: the encyclopedia's tools, in four rooms whose imports point one way (surfaces → engines
→ core; tests/test_layering.py checks it):

- `core`: what an entry is and the catalog of them — reading, loading, validating, the fingerprint
  language (patterns, metric readings) and the text rules every engine shares. Imports nothing else.
- the engines, each over `core` only, and not over each other:
  - `diagnosis`: fingerprints run over logs — the matcher, ranks, multi-file merges;
  - `search`: the query engine and the index files the browser's engine reads;
- `site`: the pipeline from the catalog to `site/` (pages → render → write), its build cache and
  the dev server's resident site. Uses the engines for the search and diagnosis pages.
- `surfaces`: what a person or a program talks to — the CLI and its commands, the dev server, the
  editor (LSP) and agent (MCP) servers, the launcher (`failpedia run`), verify and the `new` scaffold.
  Only the CLI and its commands print or exit.
"""
