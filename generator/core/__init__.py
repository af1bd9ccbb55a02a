"""The core: what an entry is, and the catalog of them.

read (files → bytes) → load (YAML with positions) → validate (→ `schema.Entry`, checked) → catalog
(every entry, the registries, cross-entry checks and derived data). With them the pieces every engine
shares: the fingerprint language (`patterns`, `metrics` and its optional C loop `_scan`), an entry's
text (`entrytext`, `searchterms`, `prose`), errors (`problems`), where things are (`locate`,
`config`) and small utilities (`parallel`, `safejson`).

Imports nothing of `generator` outside `core`. Takes data and returns data: no printing, no exits.
"""
