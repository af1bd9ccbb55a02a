"""Search: words, tags (`#ddp #oom`) or a pasted error → ranked entries.

`query` is the engine the CLI, the editor and agent servers use; `files` writes the index the
browser's engine reads (the same terms, weights and ranking constants), for the site's search page,
its postings and vocabulary made or patched by `postings`.

An engine: imports `core` only (not `diagnosis`, `site` or the surfaces).
"""
