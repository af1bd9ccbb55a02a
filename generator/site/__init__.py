"""The site: the catalog → `site/`.

`pages` plans every page (entry, tag, tag-pair, category, search, diagnose, API, sitemap, feed) as
data; `render` fills the templates (`markdown`, `highlight`, `regexlexer` for code, `seo`);
`write` lays the files down atomically. `build` runs the stages, with the build cache (`cache`) as
the one seam that skips unchanged work, and each page's key derived from what it read (`reads`); `resident` keeps the same stages' results in memory for
the dev server; `bundle` packs the encyclopedia into the wheel.

Imports `core` and the engines (`search`, `diagnosis`), never the surfaces. No printing, no exits.
"""
