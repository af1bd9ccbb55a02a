"""Structured data for search engines: an entry → its schema.org JSON-LD graph (plain data).

One graph per entry page: a `TechArticle` (the entry), a `FAQPage` built from the entry's FAQ, and a
`BreadcrumbList` (home › category › entry), the same trail the page shows. pages.py serialises it
with `_json`, which escapes <, > and &, so no content can close the <script> element it sits in.
"""

from __future__ import annotations

import html
import re
from typing import Any

from ..core.schema import Entry

__all__ = ["entry_graph", "plain_text"]

_TAG_RE = re.compile(r"<[^>]*>")
_SPACE_RE = re.compile(r"\s+")


def plain_text(block_html: str) -> str:
    """md.block's HTML → one line of plain text (what a search result or a FAQ snippet shows)."""
    # md.block never emits raw HTML from the source, so every tag here is the renderer's own (and
    # each block ends with a newline, so dropping tags never glues two words together).
    return _SPACE_RE.sub(" ", html.unescape(_TAG_RE.sub("", block_html))).strip()


def entry_graph(
    entry: Entry, *, url: str, site_title: str, site_url: str, category_title: str, category_url: str, tags: tuple[str, ...], updated: str,
    faq_html: list[str],
) -> dict[str, Any]:
    """The JSON-LD of one entry page; every URL absolute. `faq_html`: the FAQ answers as the page
    renders them (md.block), not rendered twice."""
    # The summary is already the meta and OpenGraph description and the visible quick answer, so the
    # article names its place and date only: a FAQ answer is the one text repeated here.
    article: dict[str, Any] = {
        "@type": "TechArticle",
        "headline": entry.title,
        "url": url,
        "articleSection": category_title,
        "keywords": ", ".join(tags),
        "inLanguage": "en",
        "author": {"@type": "Organization", "name": f"{site_title} contributors", "url": site_url},
    }
    if updated:
        article["dateModified"] = updated
    graph: list[dict[str, Any]] = [article]
    if entry.faq:
        graph.append(
            {
                "@type": "FAQPage",
                "mainEntity": [
                    {"@type": "Question", "name": f.q, "acceptedAnswer": {"@type": "Answer", "text": plain_text(a)}}
                    for f, a in zip(entry.faq, faq_html, strict=True)
                ],
            }
        )
    crumbs = [(site_title, site_url), (category_title, category_url), (entry.title, url)]
    graph.append(
        {
            "@type": "BreadcrumbList",
            "itemListElement": [
                {"@type": "ListItem", "position": i, "name": name, "item": item} for i, (name, item) in enumerate(crumbs, 1)
            ],
        }
    )
    return {"@context": "https://schema.org", "@graph": graph}
