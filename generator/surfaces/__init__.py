"""The surfaces: what a person or a program talks to.

`cli` and its `commands` (the only modules that print or exit), `serve` (the dev server),
`lsp` (editors), `mcpserver` (coding agents), `launcher` (`failpedia run`), `verify` (reproductions
and fix snippets, with `snippetcheck`), `scaffold` (`failpedia new`), and `knowledge`
(with `entrymarkdown`), the look-ups the editor and agent servers share.

May import anything in `generator`; nothing outside `surfaces` imports them.
"""
