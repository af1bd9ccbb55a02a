"""Pages: the catalog → the list of every page the site has, each with its template and data.

Pure: a `Page` is a path under the site root, a template name and a context of plain values
(markdown already turned into safe HTML). The page registry is the seam for search, diagnosis
and incremental builds: each page also lists the entry slugs whose content it shows.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Callable
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
from ..search.files import PAIRS_ON_SEARCH_PAGE, search_files, search_files_key, tag_pairs

__all__ = ["PLATFORM_NAMES", "Page", "entry_data", "entry_fragments", "entry_json", "entries_index", "fingerprint_data", "fingerprints_file", "plan_pages", "search_pages", "verification"]

FEED_ITEMS = 50  # the most recently updated entries in feed.xml


@dataclass(frozen=True)
class Page:
    path: str  # e.g. "tags/ddp/index.html"
    template: str | None = None  # jinja template, or None for `body`
    context: dict[str, Any] = field(default_factory=dict)
    body: str | Callable[[], str | bytes] | None = None  # a callable body is built when the page is written
    entries: tuple[str, ...] = ()  # slugs whose content appears on this page
    cards: tuple[str, ...] = ()  # slugs shown only as cards (title, summary, tags, date)
    in_sitemap: bool = False
    make: Callable[[], dict[str, Any]] | None = None  # the costly part of the context, built on render
    # What the page depends on besides its template, its context and the entries it names, for the
    # build cache's page key: the inputs of `make` and of a callable `body`.
    extra: str = ""

    def full_context(self) -> dict[str, Any]:
        return {**self.context, **self.make()} if self.make else self.context

    @property
    def url(self) -> str:
        """Site-rooted URL: 'tags/ddp/' for 'tags/ddp/index.html'."""
        return self.path.removesuffix("index.html")


def _root(path: str) -> str:
    depth = path.count("/")
    return "../" * depth


def entry_url(slug: str) -> str:
    return f"{slug}/"


def tag_url(tag: str) -> str:
    return f"tags/{tag}/"


def category_url(category: str) -> str:
    return f"categories/{category}/"


def _card(catalog: Catalog, slug: str) -> dict[str, Any]:
    rec = catalog.records[slug]
    return {"slug": slug, "url": entry_url(slug), "title": rec.head.title, "summary": rec.head.summary, "tags": rec.tags}


def _entry_page(catalog: Catalog, rec: Record, config: Config, dates: dict[str, str]) -> dict[str, Any]:
    """The costly part of an entry page's context (markdown, highlighting); built when rendered."""
    return _entry_context(catalog, rec, config, dates)


def entry_fragments(e: Entry) -> dict[str, Any]:
    """The costly part of an entry page's context, its markdown and highlighted code: a function
    of the entry alone. A build with a cache makes it when it parses the entry and keeps it with
    the model (catalog.Stored), so that a template edit re-renders the entry pages without
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


def _entry_context(catalog: Catalog, rec: Record, config: Config, dates: dict[str, str]) -> dict[str, Any]:
    e = rec.entry
    cat = catalog.categories[rec.category]
    fragments = _linked(rec.fragments or entry_fragments(e), _xref_titles(catalog, rec), rec.slug)
    edit_url = f"{config.repo_url}/edit/{config.branch}/entries/{_key(rec)}" if config.repo_url else ""
    issue_url = f"{config.repo_url}/issues/new?title={_quote('Problem in ' + rec.slug)}" if config.repo_url else ""
    return {
        "slug": rec.slug,
        "e": e,
        "tags": rec.tags,
        "category": {"name": cat.name, "title": cat.title, "url": category_url(cat.name)},
        **fragments,
        "versions": e.versions,
        "fingerprints": e.fingerprints,
        **_link_groups(catalog, rec),
        "updated": dates.get(_key(rec), ""),
        "edit_url": edit_url,
        "issue_url": issue_url,
        "canonical": config.base_url + entry_url(rec.slug),
        "jsonld": Markup(_json(seo.entry_graph(
            e, url=config.base_url + entry_url(rec.slug), site_title=config.title, site_url=config.base_url, category_title=cat.title,
            category_url=config.base_url + category_url(cat.name), tags=rec.tags, updated=dates.get(_key(rec), ""),
            faq_html=[f["a"] for f in fragments["faq"]],
        ))),
    }


def _xref_titles(catalog: Catalog, rec: Record) -> dict[str, str]:
    """The titles of the entries this entry's text names ([[slug]] or a bare slug)."""
    return {s: catalog.records[s].head.title for s in (*rec.head.xrefs, *rec.head.mentions) if s in catalog.records}


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


def _link_groups(catalog: Catalog, rec: Record) -> dict[str, list[dict[str, Any]]]:
    """The "Related failures" lists, in the order the page shows them; each linked entry appears
    once, under the first (most specific) heading that names it."""
    seen = {rec.slug}

    def once(slugs: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
        fresh = [s for s in slugs if s not in seen]
        seen.update(fresh)
        return [_card(catalog, s) for s in fresh]

    e = rec.entry
    return {
        "often_causes": once(e.often_causes),
        "caused_by": once(catalog.caused_by[rec.slug]),
        "related": once(e.related),
        "backlinks": once(catalog.backlinks[rec.slug]),
        "similar": once(catalog.similar[rec.slug]),
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


def entries_index(catalog: Catalog) -> bytes:
    """/api/entries.json: every entry's slug, category, title, summary and tags, and where its full
    data is (one file per entry, so a site of thousands of entries has no 100 MB download)."""
    return b'{"entries":[' + b",".join(_index_items(catalog)) + b"]}\n"  # = _json({"entries": [every item]}), in UTF-8


def _index_items(catalog: Catalog) -> list[bytes]:
    """Each entry's item of api/entries.json as JSON, kept from the previous build while its
    card is unchanged: assembling 10,000 items is a join, not 8 MB of JSON made again."""
    def item(slug: str) -> bytes:
        r = catalog.records[slug]
        return _json({"slug": r.slug, "category": r.category, "url": entry_url(r.slug), "title": r.head.title, "summary": r.head.summary,
                      "tags": list(r.tags), "data": f"api/entries/{r.slug}.json"})[:-1].encode("utf-8")

    inputs = {slug: (rec.category, rec.tags, rec.head.matcher_key) for slug, rec in catalog.records.items()}  # the key covers title and summary
    return catalog.derived_each("entries.json items", inputs, item)


def fingerprint_data(catalog: Catalog) -> dict[str, Any]:
    """The one matcher definition shared by the Python and browser diagnosers."""
    return {"version": 1, "flags": "", "fingerprints": _fingerprint_list(catalog), "entries": _matcher_entries(catalog)}


def fingerprints_file(catalog: Catalog) -> bytes:
    """api/fingerprints.json: `safe_json(matcher_spec(fingerprint_data(catalog)))` in UTF-8. The
    fingerprint list (12 MB of JSON at 10,000 entries) is serialized again only when some entry's
    fingerprints changed, and the entries map only for the entries whose matcher fields changed;
    the parts are joined as bytes (as text, one non-ASCII summary widened the whole file)."""
    spec = matcher_spec({"version": 1, "flags": "", "fingerprints": [], "entries": {}})
    parts = {name: _json(value)[:-1].encode("utf-8") for name, value in spec.items()}
    parts["fingerprints"] = _fingerprint_list_json(catalog)
    parts["entries"] = b"{" + b",".join(_matcher_items(catalog)) + b"}"  # = _json(_matcher_entries(catalog))
    return b"{" + b",".join(_json(name)[:-1].encode("utf-8") + b":" + text for name, text in sorted(parts.items())) + b"}\n"


def _fingerprints_digest(catalog: Catalog) -> str:
    """The digest of every entry's fingerprints (which entry has which)."""
    return hashlib.sha256("\0".join(f"{slug}={rec.head.fingerprints_key}" for slug, rec in catalog.records.items()).encode()).hexdigest()


def _fingerprint_list_json(catalog: Catalog) -> bytes:
    return catalog.derived(
        "fingerprints.json", lambda c: _json(matcher_spec({"fingerprints": _fingerprint_list(c)})["fingerprints"])[:-1].encode("utf-8"),
        _fingerprints_digest(catalog))


def _fingerprint_list(catalog: Catalog) -> list[dict[str, Any]]:
    return [fingerprint_item(slug, i, fp) for slug, rec in catalog.records.items() for i, fp in enumerate(rec.head.fingerprints)]


def _matcher_entries(catalog: Catalog) -> dict[str, Any]:
    return {slug: _matcher_entry(rec) for slug, rec in catalog.records.items()}


def _matcher_entry(rec: Record) -> dict[str, Any]:
    head = rec.head
    return {"title": head.title, "url": entry_url(rec.slug), "summary": head.summary, "fix": head.fix_summary, "steps": list(head.first_steps),
            "often_causes": list(head.often_causes)}


def _matcher_items(catalog: Catalog) -> list[bytes]:
    """The `"slug":{...}` members of the fingerprint file's entries map (records are sorted by
    slug, as sort_keys orders them), each kept from the previous build while its head's matcher
    fields are unchanged."""
    def item(slug: str) -> bytes:
        return f"{_json(slug)[:-1]}:{_json(_matcher_entry(catalog.records[slug]))[:-1]}".encode("utf-8")

    return catalog.derived_each("fingerprints.json entries", {slug: rec.head.matcher_key for slug, rec in catalog.records.items()}, item)




HOME_COMMON = 8  # entries the home page shows as the most common failures


def plan_pages(catalog: Catalog, config: Config, dates: dict[str, str] | None = None, search: bool = True) -> list[Page]:
    """Every page of the site but the search index's files (`search_pages`), in a stable order.
    `search=False`: the search page says there is no index."""
    dates = dates or {}
    pages: list[Page] = []
    all_slugs = tuple(catalog.records)

    def cards_of(slugs: tuple[str, ...]) -> dict[str, Any]:  # built when the page renders
        return {"entries": [_card(catalog, s) for s in slugs]}

    used_tags = [(t, len(catalog.by_tag[t])) for t in catalog.tags]
    categories = [
        {"name": c.name, "title": c.title, "description": c.description, "url": category_url(c.name), "count": len(catalog.by_category[c.name])}
        for c in catalog.categories.values()
    ]

    def add(
        path: str, template: str, context: dict[str, Any], entries: tuple[str, ...] = (), sitemap: bool = True,
        make: Callable[[], dict[str, Any]] | None = None, extra: str = "", cards: tuple[str, ...] = (),
    ) -> None:
        ctx = {"root": _root(path), "page_path": path, **context}
        pages.append(Page(path, template, ctx, entries=entries, cards=cards, in_sitemap=sitemap, make=make, extra=extra))

    def listing(folder: str, template: str, context: dict[str, Any], slugs: tuple[str, ...]) -> None:
        """A list of entry cards over as many pages as `config.page_size` needs: `folder/index.html`,
        then `folder/page/2/index.html`, ... Each page's key names only the entries it shows."""
        size = config.page_size
        count = max(1, -(-len(slugs) // size))
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
            add(path, template, {**context, "title": title, "pager": pager}, cards=chunk, make=partial(cards_of, chunk))

    # Relevance: how many other entries point at an entry (related, often_causes) says how central
    # it is; the CUDA OOM page, which many OOM-shaped failures point to, comes before them.
    inbound = {slug: len(set(catalog.backlinks[slug]) | set(catalog.caused_by[slug])) for slug in all_slugs}

    pointed = {slug: (-n, slug) for slug, n in inbound.items()}  # the most pointed-at first
    records = catalog.records

    def by_relevance(slugs: tuple[str, ...], tag: str | None = None) -> tuple[str, ...]:
        """A tag's entries: those that name the tag earliest in their tags first (they are about
        it), then the most pointed-at; a category's: the most pointed-at first."""
        if tag is None:
            return tuple(sorted(slugs, key=pointed.__getitem__))

        def key(s: str) -> tuple[int, tuple[int, str]]:
            tags = records[s].tags
            return (tags.index(tag) if tag in tags else 0, pointed[s])
        return tuple(sorted(slugs, key=key))

    # The home page: search and "paste your error" first, then the most common failures
    # (nsmallest: the first of sorted(), without sorting every entry).
    common = tuple(heapq.nsmallest(HOME_COMMON, all_slugs, key=pointed.__getitem__))
    add(
        "index.html",
        "home.html",
        {"categories": categories, "tags": sorted(used_tags, key=lambda tn: (-tn[1], tn[0])), "total": len(all_slugs), "title": None},
        cards=common, make=partial(cards_of, common),
    )
    pairs = catalog.derived("tag_pairs", tag_pairs)
    for slug, rec in catalog.records.items():
        groups = (rec.head.related, rec.head.often_causes, catalog.caused_by[slug], catalog.backlinks[slug], catalog.similar[slug])
        named = {s for s in (*rec.head.xrefs, *rec.head.mentions) if s in catalog.records}  # their titles show in the text
        linked = tuple(sorted({s for g in groups for s in g} - {slug} | named))
        add(
            f"{slug}/index.html", "entry.html", {"title": rec.head.title, "description": rec.head.summary, "verified": verification(catalog, rec)},
            (slug,), cards=linked,
            make=partial(_entry_page, catalog, rec, config, dates),
            # the lists of linked entries depend on other entries' tags too: they are part of the key
            extra=repr((groups, dates.get(_key(rec), ""))),
        )
        # next to its page, so that the worker rendering both unpickles the entry once
        pages.append(Page(f"api/entries/{slug}.json", body=partial(entry_json, rec), entries=(slug,)))
    # Pages that show only counts are keyed on the counts, not on every entry's content.
    add("tags/index.html", "tags.html", {"title": "All tags", "tags": [{"name": t, "count": n, "description": catalog.tags[t].description} for t, n in used_tags]})
    pairs_of: dict[str, list[dict[str, Any]]] = {t: [] for t in catalog.tags}
    for p in pairs:
        pairs_of[p.a].append({"other": p.b, "url": tag_url(p.name), "count": len(p.slugs)})
        pairs_of[p.b].append({"other": p.a, "url": tag_url(p.name), "count": len(p.slugs)})
    for t, tag in catalog.tags.items():
        listing(
            tag_url(t), "tag.html", {"title": f"#{t}", "tag": tag, "description": tag.description, "pairs": pairs_of[t]},
            by_relevance(tuple(catalog.by_tag[t]), t),
        )
    for pair in pairs:
        listing(
            tag_url(pair.name), "tag-pair.html",
            {"title": f"#{pair.a} + #{pair.b}", "a": catalog.tags[pair.a], "b": catalog.tags[pair.b],
             "description": f"Entries tagged both #{pair.a} and #{pair.b}."},
            pair.slugs,  # already the most about the pair first (files.tag_pairs)
        )
    add(
        "search/index.html",
        "search.html",
        {"title": "Search", "description": "Search every entry by words, #tags, identifiers or a pasted error line.", "search_index": search,
         "tags": [{"name": t, "count": n} for t, n in used_tags if n],
         "pairs": [{"name": p.name, "url": tag_url(p.name), "count": len(p.slugs)} for p in sorted(pairs, key=lambda p: (-len(p.slugs), p.name))[:PAIRS_ON_SEARCH_PAGE]]},
        sitemap=False,
    )
    add(
        "diagnose/index.html",
        "diagnose.html",
        {"title": "Diagnose a log", "description": "Paste a training log and find the failure that started it; matched in your browser, nothing uploaded."},
    )
    add("categories/index.html", "categories.html", {"title": "Categories", "categories": categories})
    for c in catalog.categories.values():
        listing(category_url(c.name), "category.html", {"title": c.title, "category": c, "description": c.description},
                by_relevance(tuple(catalog.by_category[c.name])))
    # The 404 page is served at any depth, so its links are rooted at the base URL's path.
    from urllib.parse import urlsplit

    pages.append(Page("404.html", "404.html", {"root": urlsplit(config.base_url).path, "page_path": "404.html", "title": "Page not found"}))

    date_of = {slug: dates.get(_key(rec), "") for slug, rec in catalog.records.items()}
    urls = [{"loc": config.base_url + p.url, "lastmod": max(map(date_of.__getitem__, (*p.entries, *p.cards)), default="")}
            for p in pages if p.in_sitemap]
    pages.append(Page("sitemap.xml", "sitemap.xml", {"urls": urls}))  # addresses and dates only
    pages.append(Page("robots.txt", body=f"User-agent: *\nAllow: /\nSitemap: {config.base_url}sitemap.xml\n"))
    feed_entries = sorted(catalog.records.values(), key=lambda r: (dates.get(_key(r), ""), r.slug), reverse=True)[:FEED_ITEMS]
    updated = max((dates.get(_key(r), "") for r in catalog.records.values()), default="") or "1970-01-01"
    pages.append(
        Page(
            "feed.xml",
            "feed.xml",
            {
                "updated": updated,
                "items": [
                    {"title": r.head.title, "summary": r.head.summary, "url": config.base_url + entry_url(r.slug), "updated": dates.get(_key(r), "") or "1970-01-01", "tags": r.tags}
                    for r in feed_entries
                ],
            },
            cards=tuple(r.slug for r in feed_entries),
        )
    )
    # Site-wide files keyed on the data they hold, so an edit to an entry's body rewrites neither.
    pages.append(Page("api/entries.json", body=partial(entries_index, catalog), cards=all_slugs,
                      extra="\0".join(rec.category for rec in catalog.records.values())))  # the cards, and where each entry is
    if catalog.memo is not None:  # made here, not in a render worker, so that the build cache keeps them
        _fingerprint_list_json(catalog)
        _matcher_items(catalog)
        _index_items(catalog)
    matcher_key = "\0".join(f"{slug}={rec.head.matcher_key}" for slug, rec in catalog.records.items())
    pages.append(Page("api/fingerprints.json", body=partial(fingerprints_file, catalog), extra=matcher_key))
    pages.append(Page("schema/entry.json", body=_schema_text()))
    return pages


@lru_cache(maxsize=1)
def _schema_text() -> str:
    """schema/entry.json: the same for every build by this code (the dev server plans often)."""
    return json.dumps(entry_json_schema(), indent=2, sort_keys=True) + "\n"


def search_pages(catalog: Catalog, jobs: int | None = 1) -> list[Page]:
    """The search index's files (search/ but its page): what `plan_pages(search=True)` links to.
    Planned apart, so that the dev server can remake them in the background. What each entry
    adds to the index is made in up to `jobs` workers."""
    fp_key = _fingerprints_digest(catalog)
    files = catalog.derived("search files", lambda c: search_files(c, fingerprints_key=fp_key, jobs=jobs), search_files_key(catalog, fp_key))
    return [Page(path, body=body, entries=tuple(catalog.records)) for path, body in files]


def _key(rec: Record) -> str:
    """The key of an entry in the git dates map."""
    return date_key(rec.category, rec.slug)
