"""Pages: the catalog → the list of every page the site has, each with its template and data.

A `Page` is a path under the site root, a template name and a planned context of plain values;
the costly part of its context (`make`) or its body is made when it renders, from plain
arguments and what it reads of the catalog through a `reads.View`, which records each look-up:
a page's key is made of those (reads.py), never declared here.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Callable, Mapping
from functools import lru_cache, partial
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from . import markdown as md
from . import seo
from ..core.prose import MENTION_RE, XREF_RE
from ..core.safejson import safe_json as _json
from ..core.catalog import Catalog, Record
from ..core.config import Config
from .gitdates import date_key
from ..diagnosis.matcher import fingerprint_item, matcher_spec
from ..core.schema import STACK_NAMES, Entry, entry_json_schema
from ..search.files import PAIRS_ON_SEARCH_PAGE, search_files, tag_pairs
from .reads import Known, Read, Reader, View, category_url, check_plain, entry_url
from .reuse import Reuse

__all__ = ["PLATFORM_NAMES", "Page", "Plan", "entry_url", "entry_data", "entry_fragments", "entry_json", "entries_index", "fingerprint_data", "fingerprints_file", "plan_pages", "search_pages", "verification"]

FEED_ITEMS = 50  # the most recently updated entries in feed.xml


@dataclass(frozen=True)
class Page:
    """One file of the site as planned: plain values only, so that the next plan can take it over
    whole where its inputs did not change (reuse.py). What its `make` or `body` reads of the catalog
    is read when it renders, through the build's reader (Plan.reader)."""

    path: str  # e.g. "tags/ddp/index.html"
    template: str | None = None  # jinja template, or None for `body`
    context: dict[str, Any] = field(default_factory=dict)
    # The file's text, or a partial made when the page is written: body(view) → text.
    body: str | bytes | partial[str] | partial[bytes] | None = None
    # The costly part of the context, made when the page renders: make(view) → more context.
    make: partial[dict[str, Any]] | None = None
    about: tuple[str, ...] = ()  # the entries the page shows: its date in the sitemap
    in_sitemap: bool = False
    # Made of every entry (api/entries.json, api/fingerprints.json): rendered in the build's own
    # process, whose memo of their per-entry items the build cache keeps; the dev server remakes
    # them with the search index, after the pages an edit changed are served.
    site_wide: bool = False

    def __post_init__(self) -> None:
        for fn in (self.make, self.body):
            if callable(fn):
                check_plain(fn)

    @property
    def reads_catalog(self) -> bool:
        """Whether the page reads the catalog when it renders (through a reader's View)."""
        return self.make is not None or callable(self.body)

    def made(self, reader: Reader | None = None) -> tuple[dict[str, Any] | str | bytes, tuple[Read, ...]]:
        """The full context (a template's page) or the body, and the look-ups it took through `reader`."""
        if not self.reads_catalog:
            assert not callable(self.body)  # it reads nothing
            return (self.context if self.template is not None else self.body or ""), ()
        if reader is None:
            raise TypeError(f"{self.path}: a page made when it renders needs the reader it reads through")
        view = reader.view()
        if self.template is None:
            assert callable(self.body)  # it reads
            return self.body(view), tuple(view.reads)
        context = {**self.context, **self.make(view)} if self.make else self.context
        return context, tuple(view.reads)

    @property
    def url(self) -> str:
        """Site-rooted URL: 'tags/ddp/' for 'tags/ddp/index.html'."""
        return self.path.removesuffix("index.html")


def _root(path: str) -> str:
    depth = path.count("/")
    return "../" * depth


def tag_url(tag: str) -> str:
    return f"tags/{tag}/"


def _cards(slugs: tuple[str, ...], view: View) -> dict[str, Any]:
    """A listing page's entries, as cards."""
    return {"entries": [view.card(s) for s in slugs]}


def entry_fragments(e: Entry) -> dict[str, Any]:
    """The costly part of an entry page's context, its markdown and highlighted code: a function
    of the entry alone. A build with a cache makes it when it parses the entry and keeps it with
    the model (validate.Body), so that a template edit re-renders the entry pages without
    running markdown or Pygments again."""
    return {
        "mechanism": md.block(e.mechanism),
        "symptoms": [{"signal": md.inline(s.signal), "why": md.inline(s.why)} for s in e.symptoms],
        "observe": [md.inline(x) for x in e.observe],
        "affected": [md.inline(x) for x in e.affected],
        "confirm": [md.inline(x) for x in e.confirm],
        "steps": [md.block(x) for x in e.fix.steps],
        "fix_summary": md.inline(e.fix.summary),
        "code": [
            {"stack": c.stack.value, "name": STACK_NAMES[c.stack], "caption": md.inline(c.caption) if c.caption else None,
             "html": Markup(md.code_block(c.code, c.language.value))}
            for c in e.fix.code
        ],
        "verify": {"html": Markup(md.code_block(e.fix.verify.code, e.fix.verify.language.value)), "expect": md.block(e.fix.verify.expect)},
        "prevention": [md.inline(x) for x in e.prevention],
        "faq": [{"q": f.q, "a": md.block(f.a)} for f in e.faq],
        "dead_ends": [{"attempt": md.inline(d.attempt), "why": md.inline(d.why)} for d in e.dead_ends],
    }


def _entry_page(slug: str, config: Config, view: View) -> dict[str, Any]:
    """The costly part of an entry page's context (markdown, highlighting); built when rendered."""
    rec = view.record(slug)
    e = rec.entry
    category = view.category(rec.category)
    updated = view.date(slug)
    fragments = _linked(rec.fragments or entry_fragments(e), _xref_titles(view, rec), rec.slug)
    edit_url = f"{config.repo_url}/edit/{config.branch}/entries/{_key(rec)}" if config.repo_url else ""
    issue_url = f"{config.repo_url}/issues/new?title={_quote('Problem in ' + rec.slug)}" if config.repo_url else ""
    return {
        "slug": rec.slug,
        "e": e,
        "tags": rec.tags,
        "category": category,
        **fragments,
        "versions": e.versions,
        "fingerprints": e.fingerprints,
        **_link_groups(view, rec),
        "updated": updated,
        "edit_url": edit_url,
        "issue_url": issue_url,
        "canonical": config.base_url + entry_url(rec.slug),
        "jsonld": Markup(_json(seo.entry_graph(
            e, url=config.base_url + entry_url(rec.slug), site_title=config.title, site_url=config.base_url, category_title=category["title"],
            category_url=config.base_url + category["url"], tags=rec.tags, updated=updated,
            faq_html=[f["a"] for f in fragments["faq"]],
        ))),
    }


def _xref_titles(view: View, rec: Record) -> dict[str, str]:
    """The titles of the entries this entry's text names ([[slug]] or a bare slug)."""
    titles = {s: view.title(s) for s in (*rec.head.xrefs, *rec.head.mentions)}
    return {s: title for s, title in titles.items() if title is not None}


def _linked(value: Any, titles: dict[str, str], own: str) -> Any:
    """The fragments with entry names made links (markdown.link_entries); code is left alone."""
    if isinstance(value, Markup):
        return md.link_entries(str(value), titles, own) if titles else value
    if isinstance(value, list):
        return [_linked(v, titles, own) for v in value]
    if isinstance(value, dict):
        return {k: v if k in ("code", "html") else _titled(v, titles, own) if k == "q" else _linked(v, titles, own) for k, v in value.items()}
    return value


def _titled(text: str, titles: dict[str, str], own: str) -> str:
    """Plain text (a FAQ question, shown as a heading) with entry names as titles, not links."""
    text = XREF_RE.sub(lambda m: titles.get(m.group(1), m.group(1)), text)
    return MENTION_RE.sub(lambda m: titles[m.group(0)] if m.group(0) in titles and m.group(0) != own else m.group(0), text)


PLATFORM_NAMES = {"cpu": "CPU", "cuda": "a CUDA GPU", "multi-gpu": "several GPUs"}


def verification(catalog: Catalog, rec: Record) -> dict[str, Any] | None:
    """What the entry page says of the verify record (`entries/verified.yaml`): None when the entry
    was never verified, or only in an earlier version of its reproduce section. Plain values in
    the page's planned context, so that a change in the record is part of the page's key."""
    v = catalog.verified.get(rec.slug)
    if v is None or not rec.head.reproduce_key or v.reproduce != rec.head.reproduce_key:
        return None
    return {
        "reproduced": v.result == "reproduced",
        "date": v.date,
        "platform": PLATFORM_NAMES[v.platform.value],
        "python": v.python,
        "packages": ", ".join(f"{name} {version}" for name, version in sorted(v.packages.items(), key=lambda p: p[0].lower())),
        "reason": v.reason or "",
    }


def _link_groups(view: View, rec: Record) -> dict[str, list[dict[str, Any]]]:
    """The "Related failures" lists, in the order the page shows them; each linked entry appears
    once, under the first (most specific) heading that names it."""
    seen = {rec.slug}

    def once(slugs: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
        fresh = [s for s in slugs if s not in seen]
        seen.update(fresh)
        return [view.card(s) for s in fresh]

    e = rec.entry
    return {
        "often_causes": once(e.often_causes),
        "caused_by": once(view.linked("caused_by", rec.slug)),
        "related": once(e.related),
        "backlinks": once(view.linked("backlinks", rec.slug)),
        "similar": once(view.linked("similar", rec.slug)),
    }


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def entry_data(rec: Record) -> dict[str, Any]:
    """One entry as JSON-ready data for tools (/api/entries/<slug>.json)."""
    data = rec.entry.model_dump(mode="json", exclude_none=True)
    data["tags"] = list(rec.tags)
    return {"slug": rec.slug, "category": rec.category, "url": entry_url(rec.slug), **data}


def entry_json(rec: Record) -> str:
    return _json(entry_data(rec))


def _entry_file(slug: str, view: View) -> str:
    """/api/entries/<slug>.json."""
    return entry_json(view.record(slug))


def entries_index(catalog: Catalog) -> bytes:
    """/api/entries.json: every entry's slug, category, title, summary and tags, and where its full
    data is (one file per entry, so a site of thousands of entries has no 100 MB download)."""
    return _entries_index(Reader(catalog, {}).view())


def _entries_index(view: View) -> bytes:
    return b"".join([b'{"entries":[', *_listed(_index_items(view)), b"]}\n"])  # = _json({"entries": [every item]}), in UTF-8


def _listed(items: list[bytes]) -> list[bytes]:
    """The items with a comma between each two, for one join (a site-wide file is tens of MB: each
    concatenation of its parts would copy all of it)."""
    out = [b","] * (2 * len(items) - 1) if items else []
    out[::2] = items
    return out


def _index_items(view: View) -> list[bytes]:
    """Each entry's item of api/entries.json as JSON, made from its card and kept from the
    previous build while the card's value is unchanged (the card itself is then not made):
    assembling them is a join, not the whole file's JSON made again."""
    def item(slug: str) -> bytes:
        c = view.card(slug)
        return _json({"slug": slug, "category": c["category"], "url": c["url"], "title": c["title"], "summary": c["summary"],
                      "tags": list(c["tags"]), "data": f"api/entries/{slug}.json"})[:-1].encode("utf-8")

    return view.catalog.derived_each("entries.json items", {slug: view.value_of(("card", slug)) for slug in view.slugs()}, item)


def fingerprint_data(catalog: Catalog) -> dict[str, Any]:
    """The one matcher definition shared by the Python and browser diagnosers."""
    return {"version": 1, "flags": "", "fingerprints": _fingerprint_list({slug: rec.head.fingerprints for slug, rec in catalog.records.items()}),
            "entries": _matcher_entries(catalog)}


def fingerprints_file(catalog: Catalog) -> bytes:
    """api/fingerprints.json: `safe_json(matcher_spec(fingerprint_data(catalog)))` in UTF-8."""
    return _fingerprints_body(Reader(catalog, {}).view())


def _fingerprints_body(view: View) -> bytes:
    """api/fingerprints.json. The fingerprint list (the largest file of a large site) is serialized
    again only when some entry's fingerprints changed, and the entries map only for the entries
    whose matcher fields changed; the parts are joined as bytes (as text, one non-ASCII summary
    widened the whole file)."""
    slugs = view.slugs()
    fingerprints = {slug: view.fingerprints(slug) for slug in slugs}
    spec = matcher_spec({"version": 1, "flags": "", "fingerprints": [], "entries": {}})
    parts = {name: [_json(value)[:-1].encode("utf-8")] for name, value in spec.items()}
    parts["fingerprints"] = [_fingerprint_list_json(view.catalog, fingerprints)]
    parts["entries"] = [b"{", *_listed(_matcher_items(view, slugs)), b"}"]  # = _json(_matcher_entries(catalog))
    pieces = [b"{"]
    for i, (name, text) in enumerate(sorted(parts.items())):
        pieces += [b"," * (i > 0), _json(name)[:-1].encode("utf-8"), b":", *text]
    pieces.append(b"}\n")
    return b"".join(pieces)


def _fingerprints_digest(catalog: Catalog) -> str:
    """The digest of every entry's fingerprints (which entry has which)."""
    return hashlib.sha256("\0".join(f"{slug}={rec.head.fingerprints_key}" for slug, rec in catalog.records.items()).encode()).hexdigest()


def _fingerprint_list_json(catalog: Catalog, fingerprints: Mapping[str, tuple[Any, ...]]) -> bytes:
    """The list of every entry's fingerprints, kept while none changed (their digest)."""
    def made(_: Catalog) -> bytes:
        return _json(matcher_spec({"fingerprints": _fingerprint_list(fingerprints)})["fingerprints"])[:-1].encode("utf-8")

    return catalog.derived("fingerprints.json", made, _fingerprints_digest(catalog))


def _fingerprint_list(fingerprints: Mapping[str, tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Every entry's fingerprints (slug → its heads) as the matcher definition lists them."""
    return [fingerprint_item(slug, i, fp) for slug, fps in fingerprints.items() for i, fp in enumerate(fps)]


def _matcher_entries(catalog: Catalog) -> dict[str, Any]:
    reader = Reader(catalog, {})
    return {slug: reader.matcher_entry(slug) for slug in catalog.records}


def _matcher_items(view: View, slugs: tuple[str, ...]) -> list[bytes]:
    """The `"slug":{...}` members of the fingerprint file's entries map (records are sorted by
    slug, as sort_keys orders them), each kept from the previous build while it is unchanged."""
    def item(slug: str) -> bytes:
        return f"{_json(slug)[:-1]}:{_json(view.matcher_entry(slug))[:-1]}".encode("utf-8")

    return view.catalog.derived_each("fingerprints.json entries", {slug: view.value_of(("matcher_entry", slug)) for slug in slugs}, item)




HOME_COMMON = 8  # entries the home page shows as the most common failures


@dataclass(frozen=True)
class Plan:
    """Every page of the site but the search index's files, in a stable order; the reader their
    `make` and `body` read the catalog through when they render; and the calls the pages were
    planned by, which the next plan takes over where their inputs are the same (`reuse`)."""

    pages: list[Page]
    reader: Reader
    reuse: Reuse


def _page(path: str, template: str, context: dict[str, Any], about: tuple[str, ...] = (), sitemap: bool = True,
          make: partial[dict[str, Any]] | None = None) -> Page:
    return Page(path, template, {"root": _root(path), "page_path": path, **context}, make=make, about=about, in_sitemap=sitemap)


def _entry_pages(slug: str, title: str, summary: str, verified: dict[str, Any] | None, groups: tuple[tuple[str, ...], ...],
                 named: tuple[str, ...], config: Config) -> tuple[Page, ...]:
    """An entry's page and its JSON file. The entries its page shows (their dates are its date
    in the sitemap): its link `groups` and the entries its text `named`."""
    linked = tuple(sorted({s for g in groups for s in g} - {slug} | set(named)))
    return (
        _page(f"{slug}/index.html", "entry.html", {"title": title, "description": summary, "verified": verified}, (slug, *linked),
              make=partial(_entry_page, slug, config)),
        # next to its page, so that the worker rendering both unpickles the entry once
        Page(f"api/entries/{slug}.json", body=partial(_entry_file, slug)),
    )


def _listing(folder: str, template: str, context: dict[str, Any], slugs: tuple[str, ...], size: int) -> tuple[Page, ...]:
    """A list of entry cards over as many pages as `size` needs: `folder/index.html`, then
    `folder/page/2/index.html`, ... Each page reads the cards of the entries it shows only."""
    count = max(1, -(-len(slugs) // size))
    pages = []
    for n in range(1, count + 1):
        chunk = slugs[(n - 1) * size : n * size]
        path = f"{folder}index.html" if n == 1 else f"{folder}page/{n}/index.html"
        pager = {
            "page": n, "pages": count, "total": len(slugs),
            "prev": None if n == 1 else (folder if n == 2 else f"{folder}page/{n - 1}/"),
            "next": f"{folder}page/{n + 1}/" if n < count else None,
            "first": folder, "last": f"{folder}page/{count}/" if count > 1 else folder,
        }
        title = context["title"] if n == 1 else f"{context['title']} (page {n} of {count})"
        pages.append(_page(path, template, {**context, "title": title, "pager": pager}, chunk, make=partial(_cards, chunk)))
    return tuple(pages)


def _relevance(by_tag: Mapping[str, tuple[str, ...]], by_category: Mapping[str, tuple[str, ...]], tags_of: Mapping[str, tuple[str, ...]],
               inbound: Mapping[str, int]) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Each tag's and each category's entries in the order their pages list them. A tag's: those
    that name the tag earliest in their tags first (they are about it), then the most pointed-at
    (`inbound`: how many entries point at one); a category's: the most pointed-at first."""
    pointed = {slug: (-n, slug) for slug, n in inbound.items()}

    def about(tag: str) -> Callable[[str], tuple[int, tuple[int, str]]]:
        return lambda s: (tags_of[s].index(tag) if tag in tags_of[s] else 0, pointed[s])

    return ({t: tuple(sorted(slugs, key=about(t))) for t, slugs in by_tag.items()},
            {c: tuple(sorted(slugs, key=pointed.__getitem__)) for c, slugs in by_category.items()})


def _sitemap(base_url: str, shown: tuple[tuple[str, tuple[str, ...]], ...], date_of: Mapping[str, str]) -> Page:
    """sitemap.xml: the address of each page shown (path, the entries it shows) and, as its date,
    the latest of theirs."""
    urls = [{"loc": base_url + path.removesuffix("index.html"), "lastmod": max(map(date_of.__getitem__, about), default="")}
            for path, about in shown]
    return Page("sitemap.xml", "sitemap.xml", {"urls": urls})


def plan_pages(catalog: Catalog, config: Config, dates: dict[str, str] | None = None, search: bool = True,
               contents: Mapping[str, str] | None = None, before: Known | None = None, reuse: Reuse | None = None) -> Plan:
    """Every page of the site but the search index's files (`search_pages`).
    `search=False`: the search page says there is no index. `contents`: each entry file's digest
    by path, what a page that shows an entry's content is keyed on; `before`: what the last
    build's reader found (reads.Known); `reuse`: a Reuse over the last plan's, whose entry and
    listing pages this plan takes over where their inputs are the same (the dev server)."""
    dates = dates or {}
    reader = Reader(catalog, dates, contents, before)
    reuse = reuse or Reuse()
    pages: list[Page] = []
    records = catalog.records
    all_slugs = tuple(records)

    used_tags = [(t, len(catalog.by_tag[t])) for t in catalog.tags]
    categories = [
        {"name": c.name, "title": c.title, "description": c.description, "url": category_url(c.name), "count": len(catalog.by_category[c.name])}
        for c in catalog.categories.values()
    ]

    def listing(folder: str, template: str, context: dict[str, Any], slugs: tuple[str, ...]) -> None:
        pages.extend(reuse(f"listing:{folder}", _listing, folder, template, context, slugs, config.page_size))

    # Relevance: how many other entries point at an entry (related, often_causes) says how central
    # it is; the CUDA OOM page, which many OOM-shaped failures point to, comes before them.
    inbound = {slug: len(set(catalog.backlinks[slug]) | set(catalog.caused_by[slug])) for slug in all_slugs}
    tag_order, category_order = reuse("relevance", _relevance, catalog.by_tag, catalog.by_category,
                                      {slug: rec.tags for slug, rec in catalog.records.items()}, inbound)

    # The home page: search and "paste your error" first, then the most common failures
    # (nsmallest: the first of sorted(), without sorting every entry).
    common = tuple(heapq.nsmallest(HOME_COMMON, all_slugs, key=lambda slug: (-inbound[slug], slug)))  # the most pointed-at first
    pages.append(_page(
        "index.html",
        "home.html",
        {"categories": categories, "tags": sorted(used_tags, key=lambda tn: (-tn[1], tn[0])), "total": len(all_slugs), "title": None},
        common, make=partial(_cards, common),
    ))
    pairs = catalog.derived("tag_pairs", tag_pairs)
    for slug, rec in catalog.records.items():
        groups = (rec.head.related, rec.head.often_causes, catalog.caused_by[slug], catalog.backlinks[slug], catalog.similar[slug])
        named = tuple(s for s in (*rec.head.xrefs, *rec.head.mentions) if s in records)  # their titles show in the text
        pages.extend(reuse(f"entry:{slug}", _entry_pages, slug, rec.head.title, rec.head.summary, verification(catalog, rec), groups, named, config))
    # Pages that show only counts are keyed on the counts, not on every entry's content.
    pages.append(_page("tags/index.html", "tags.html",
                       {"title": "All tags", "tags": [{"name": t, "count": n, "description": catalog.tags[t].description} for t, n in used_tags]}))
    pairs_of: dict[str, list[dict[str, Any]]] = {t: [] for t in catalog.tags}
    for p in pairs:
        pairs_of[p.a].append({"other": p.b, "url": tag_url(p.name), "count": len(p.slugs)})
        pairs_of[p.b].append({"other": p.a, "url": tag_url(p.name), "count": len(p.slugs)})
    for t, tag in catalog.tags.items():
        listing(
            tag_url(t), "tag.html", {"title": f"#{t}", "tag": tag, "description": tag.description, "pairs": pairs_of[t]},
            tag_order[t],
        )
    for pair in pairs:
        listing(
            tag_url(pair.name), "tag-pair.html",
            {"title": f"#{pair.a} + #{pair.b}", "a": catalog.tags[pair.a], "b": catalog.tags[pair.b],
             "description": f"Entries tagged both #{pair.a} and #{pair.b}."},
            pair.slugs,  # already the most about the pair first (files.tag_pairs)
        )
    pages.append(_page(
        "search/index.html",
        "search.html",
        {"title": "Search", "description": "Search every entry by words, #tags, identifiers or a pasted error line.", "search_index": search,
         "tags": [{"name": t, "count": n} for t, n in used_tags if n],
         "pairs": [{"name": p.name, "url": tag_url(p.name), "count": len(p.slugs)} for p in sorted(pairs, key=lambda p: (-len(p.slugs), p.name))[:PAIRS_ON_SEARCH_PAGE]]},
        sitemap=False,
    ))
    pages.append(_page(
        "diagnose/index.html",
        "diagnose.html",
        {"title": "Diagnose a log", "description": "Paste a training log and find the failure that started it; matched in your browser, nothing uploaded."},
    ))
    pages.append(_page("categories/index.html", "categories.html", {"title": "Categories", "categories": categories}))
    for c in catalog.categories.values():
        listing(category_url(c.name), "category.html", {"title": c.title, "category": c, "description": c.description},
                category_order[c.name])
    # The 404 page is served at any depth, so its links are rooted at the base URL's path.
    from urllib.parse import urlsplit

    pages.append(Page("404.html", "404.html", {"root": urlsplit(config.base_url).path, "page_path": "404.html", "title": "Page not found"}))

    date_of = {slug: dates.get(_key(rec), "") for slug, rec in catalog.records.items()}
    shown = tuple((p.path, p.about) for p in pages if p.in_sitemap)
    pages.append(reuse("sitemap", _sitemap, config.base_url, shown, date_of))  # addresses and dates only
    pages.append(Page("robots.txt", body=f"User-agent: *\nAllow: /\nSitemap: {config.base_url}sitemap.xml\n"))
    feed_entries = [records[slug] for slug in heapq.nlargest(FEED_ITEMS, records, key=lambda slug: (date_of[slug], slug))]
    updated = max(date_of.values(), default="") or "1970-01-01"
    pages.append(
        Page(
            "feed.xml",
            "feed.xml",
            {
                "updated": updated,
                "items": [
                    {"title": r.head.title, "summary": r.head.summary, "url": config.base_url + entry_url(r.slug), "updated": date_of[r.slug] or "1970-01-01", "tags": r.tags}
                    for r in feed_entries
                ],
            },
        )
    )
    # Site-wide files, made of the cards and the matcher's fields (an edit to an entry's body rewrites
    # neither), in the build's own process (`site_wide`): the build cache keeps their per-entry items' memo.
    pages.append(Page("api/entries.json", body=partial(_entries_index), site_wide=True))
    pages.append(Page("api/fingerprints.json", body=partial(_fingerprints_body), site_wide=True))
    pages.append(Page("schema/entry.json", body=_schema_text()))
    return Plan(pages, reader, reuse)


@lru_cache(maxsize=1)
def _schema_text() -> str:
    """schema/entry.json: the same for every build by this code (the dev server plans often)."""
    return json.dumps(entry_json_schema(), indent=2, sort_keys=True) + "\n"


def search_pages(catalog: Catalog, jobs: int | None = 1) -> list[Page]:
    """The search index's files (search/ but its page): what `plan_pages(search=True)` links to.
    Planned apart, so that the dev server can remake them in the background. What each entry
    adds to the index is made in up to `jobs` workers."""
    files = search_files(catalog, fingerprints_key=_fingerprints_digest(catalog), jobs=jobs)
    return [Page(path, body=body) for path, body in files]


def _key(rec: Record) -> str:
    """The key of an entry in the git dates map."""
    return date_key(rec.category, rec.slug)
