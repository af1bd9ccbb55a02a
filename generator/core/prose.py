"""The cross-reference syntax of an entry's prose: `[[slug]]` links and bare slug-shaped words,
looked for outside code. Validation reads an entry's links with it; the site's markdown renders them."""

from __future__ import annotations

import re

__all__ = ["MENTION_RE", "NAMED_RE", "XREF_RE", "without_code"]

# Fenced blocks and inline code spans. The lookahead lets the engine skip to a '`' or '~' before
# trying either branch at a position.
_CODE_RE = re.compile(r"(?=[`~])(?:^(```|~~~).*?^\1|(`+)[^`].*?\2)", re.S | re.M)


def without_code(text: str) -> str:
    """Markdown with its code blanked out: what `[[slug]]` and bare slugs are looked for in (code
    shows text as written — `capabilities: [[gpu]]` in Docker's message is no link)."""
    return _CODE_RE.sub(lambda m: " " * len(m.group(0)), text)


XREF_RE = re.compile(r"\[\[([a-z0-9]+(?:-[a-z0-9]+)*)\]\]")  # [[slug]]: a link to that entry, with its title
# Anything in double brackets that reads as a name, a slug or not (each must name an entry): not an
# index (`x[[0, 1]]`, after a word or a bracket) and not data with no letter in it
# (`input_ids=[[1, 5, 130]]` in an inline example).
NAMED_RE = re.compile(r"(?<![\w\])])\[\[([^\]\n]*[A-Za-z][^\]\n]*)\]\]")
# A bare slug-shaped word. The repeats are possessive: giving back a character or a '-part' leaves
# a letter, digit or '-' next, which the lookahead refuses anyway, so only the retries are saved.
MENTION_RE = re.compile(r"(?<![\w/.-])[a-z0-9]++(?:-[a-z0-9]++)++(?![\w/-]|\.\w)")
