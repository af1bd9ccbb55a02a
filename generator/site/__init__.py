"""The site: the catalog → `site/`.

`pages` plans every page (entry, tag, tag-pair, category, search, diagnose, API, sitemap, feed) as
data; `render` fills the templates (`markdown`, `highlight`, `regexlexer` for code, `seo`);
`write` lays the files down atomically. `build` runs the stages. `incremental` is what lets a
rebuild skip work: parse results by file digest, each page's key derived from what it read
(`reads`), the plan taken over (`reuse`), and what a process keeps between builds (`Warm`); the
build cache (`cache`) is its store on disk. `resident` runs the same stages and the same
`incremental` functions for the dev server, keeping their results in memory; `bundle` packs
the encyclopedia into the wheel.

Imports `core` and the engines (`search`, `diagnosis`), never the surfaces. No printing, no exits.
"""
