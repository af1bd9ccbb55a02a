"""One entry as a Markdown document (pure): what the agent and editor surfaces hand out, in the
order an engineer reads it — the quick answer and the fix first, the explanation after."""

from __future__ import annotations

from ..core.schema import STACK_NAMES, Entry

__all__ = ["entry_markdown"]


def _items(items: list[str], numbered: bool = False) -> list[str]:
    return [f"{f'{n}.' if numbered else '-'} {text.strip()}" for n, text in enumerate(items, 1)]


def entry_markdown(slug: str, entry: Entry, url: str = "") -> str:
    """The entry's fields as Markdown; `url` (the page on the site) is linked when given."""
    out = [f"# {entry.title}", ""]
    if url:
        out += [f"<{url}>", ""]
    out += [f"Slug: `{slug}` · tags: {', '.join('#' + t for t in entry.tags)}", ""]
    out += ["## Quick answer", "", entry.summary.strip(), ""]
    out += ["## Fix", "", f"**{entry.fix.summary.strip()}**", "", *_items(entry.fix.steps, numbered=True), ""]
    for code in entry.fix.code:
        caption = f" — {code.caption}" if code.caption else ""
        out += [f"### {STACK_NAMES[code.stack]}{caption}", "", f"```{code.language.value}", code.code.rstrip(), "```", ""]
    verify = entry.fix.verify
    out += ["### Check that it worked", "", f"```{verify.language.value}", verify.code.rstrip(), "```", "", verify.expect.strip(), ""]
    out += ["## Confirm the diagnosis", "", *_items(entry.confirm), ""]
    out += ["## Symptoms", "", *[f"- {s.signal} — {s.why.strip()}" for s in entry.symptoms], ""]
    out += ["## Why it happens", "", entry.mechanism.strip(), ""]
    out += ["## Prevention", "", *_items(entry.prevention), ""]
    if entry.dead_ends:
        out += ["## What does not help", "", *[f"- {d.attempt}: {d.why.strip()}" for d in entry.dead_ends], ""]
    if entry.faq:
        out += ["## FAQ", ""]
        for f in entry.faq:
            out += [f"**{f.q}**", "", f.a.strip(), ""]
    if entry.related:
        out += ["## Related", "", *[f"- `{r}`" for r in entry.related], ""]
    out += ["## References", "", *[f"- [{r.title}]({r.url})" for r in entry.references], ""]
    return "\n".join(out)
