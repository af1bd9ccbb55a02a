"""What a page read: the catalog as the costly part of a page sees it, every look-up recorded.

A page's output is a function of its plan (path, template, planned context, the arguments of its
`make` or `body`) and of what `make` or `body` reads of the catalog while the page renders. Those
read nothing else: they are module-level functions (no closure) over plain arguments, and they
reach the catalog only through a `View`, which records each look-up as (what, which). So a
page's key is derived, never declared: the digest of its plan and of the current value of every
look-up it made when it last rendered (`Reader.key`). Equal keys, equal files; a look-up whose
value changed changes the key, whatever the look-up was for, so a field added to the cards
(`Reader._card`) re-renders every page that shows a card without any key code knowing it.

The values are digests made once per build and shared by every page that made the same
look-up. A page never rendered has no recorded look-ups: it is rendered, and its key made from
what it read then. Each look-up reads one subject: an entry (its record and date), the entries
linked to one, a category, or the list of entries. A build takes every subject's part of the
catalog once (`Reader.signatures`); a page whose plan is the same and none of whose subjects
changed keeps its key without its look-ups being valued again, and a look-up about an unchanged
subject keeps the value the last build found (`Known`), so a large rebuild values only the
look-ups an edit touched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

from ..core.config import Config
from .gitdates import date_key

if TYPE_CHECKING:  # the build cache imports this module before a build has work to do
    from ..core.catalog import Catalog, Record

__all__ = ["Known", "Made", "Numbered", "Read", "Reader", "Signature", "View", "category_url", "check_plain", "entry_url", "plan_digest",
           "stale_subjects", "subject"]

Read = tuple[str, str]  # (look-up, its argument): ("card", "gpu-oom")


_LINKS = frozenset({"backlinks", "caused_by", "similar"})


def subject(read: Read) -> str:
    """What a look-up reads: an entry (its slug), the entries linked to it ("links:<slug>"), a
    category ("category:<name>"), or the list of entries ("slugs:")."""
    what, which = read
    if what in _LINKS:
        return f"links:{which}"
    return f"category:{which}" if what == "category" else "slugs:" if what == "slugs" else which


class Numbered(Sequence[Read]):
    """Look-ups kept as numbers into a table of distinct ones (the build cache's form)."""

    def __init__(self, table: Sequence[Read], numbers: tuple[int, ...]) -> None:
        self.table, self.numbers = table, numbers

    def __len__(self) -> int:
        return len(self.numbers)

    def __getitem__(self, i: int) -> Read:  # type: ignore[override]  # no slices are asked for
        return self.table[self.numbers[i]]

    def __iter__(self) -> Iterator[Read]:
        return map(self.table.__getitem__, self.numbers)


@dataclass(frozen=True)
class Made:
    """What a rendered page was made from: its plan, its look-ups, and their subjects (as strings,
    or as numbers into the build cache's table of subjects)."""

    plan: str
    reads: Sequence[Read]
    subjects: tuple[str, ...] | tuple[int, ...]

    @classmethod
    def of(cls, plan: str, reads: Sequence[Read]) -> "Made":
        return cls(plan, reads, tuple(dict.fromkeys(map(subject, reads))))


Signature = tuple[Any, ...]  # a subject's part of the catalog (Reader.signatures)


def stale_subjects(before: Mapping[str, Signature], now: Mapping[str, Signature]) -> set[str]:
    """The subjects whose signature changed, appeared or went."""
    return {s for s, v in now.items() if before.get(s) != v} | (before.keys() - now.keys())


def entry_url(slug: str) -> str:
    return f"{slug}/"


def category_url(category: str) -> str:
    return f"categories/{category}/"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class View:
    """The catalog for one page's render. Each method is one look-up, recorded with its argument;
    what it returns is what `Reader.value` digests for the key."""

    def __init__(self, reader: "Reader") -> None:
        self._reader = reader
        self.reads: dict[Read, None] = {}  # in the order first made

    def _note(self, what: str, which: str) -> None:
        self.reads[(what, which)] = None

    def record(self, slug: str) -> Record:
        """The whole entry (model, head, fragments): its page and its JSON file read this."""
        self._note("record", slug)
        return self._reader.catalog.records[slug]

    def card(self, slug: str) -> dict[str, Any]:
        """What a list of entries shows of one (home, tag, category pages, "Related" lists)."""
        self._note("card", slug)
        return self._reader.card(slug)

    def title(self, slug: str) -> str | None:
        """An entry's title, None when there is no such entry (a name in another entry's text)."""
        self._note("title", slug)
        return self._reader.title(slug)

    def linked(self, kind: str, slug: str) -> tuple[str, ...]:
        """The entries that point at `slug` (`backlinks`, `caused_by`) or share its tags (`similar`)."""
        self._note(kind, slug)
        return self._reader.linked(kind, slug)

    def category(self, name: str) -> dict[str, str]:
        """A link to a category: its name, title and address (not its description)."""
        self._note("category", name)
        return self._reader.category(name)

    def date(self, slug: str) -> str:
        """When the entry last changed in git ('' when unknown)."""
        self._note("date", slug)
        return self._reader.date(slug)

    def slugs(self) -> tuple[str, ...]:
        """Every entry, in slug order."""
        self._note("slugs", "")
        return tuple(self._reader.catalog.records)

    def matcher_entry(self, slug: str) -> dict[str, Any]:
        """What the matcher definition says of an entry (api/fingerprints.json's entries map)."""
        self._note("matcher_entry", slug)
        return self._reader.matcher_entry(slug)

    def fingerprints(self, slug: str) -> tuple[Any, ...]:
        """An entry's fingerprints as the matcher reads them (validate.FingerprintHead)."""
        self._note("fingerprints", slug)
        return self._reader.catalog.records[slug].head.fingerprints

    def value_of(self, read: Read) -> str:
        """The digest of a look-up's value (`Reader.value`), recorded as the look-up itself is:
        what the memo of a site-wide file's per-entry items is keyed on. The page makes the
        look-up only for the items the memo lacks, so an unchanged entry's card is not made."""
        self._note(*read)
        return self._reader.value(read)

    @property
    def catalog(self) -> Catalog:
        """The catalog itself, for the memo of site-wide results (`Catalog.derived_each`) only:
        what is read of it must also be read through a look-up above, which the key sees."""
        return self._reader.catalog


@dataclass(frozen=True)
class Known:
    """What a build's reader found: every subject's part of the catalog, and the look-ups' values
    (and, in the dev server, the cards and matcher items) it made. The next build's reader takes
    them over for every subject that did not change (the build cache keeps the first two)."""

    signatures: Mapping[str, Signature]
    values: Mapping[Read, str]
    cards: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    matcher: Mapping[str, dict[str, Any]] = field(default_factory=dict)


class Reader:
    """The look-ups' values for one build: the catalog, the entries' git dates and the digest of
    each entry file's bytes (`contents`, by path; None: each record is digested from its model).
    `before`: what the last build's reader found (`known`)."""

    def __init__(self, catalog: Catalog, dates: Mapping[str, str], contents: Mapping[str, str] | None = None,
                 before: Known | None = None) -> None:
        self.catalog, self.dates, self.contents = catalog, dates, contents
        self._before = before
        self._stale: set[str] | None = None
        self._signatures: dict[str, Signature] | None = None
        self._values: dict[Read, str] = {}
        self._cards: dict[str, dict[str, Any]] = {}
        self._matcher: dict[str, dict[str, Any]] = {}
        known = self.catalog.records.__contains__

        def of_entry(look: Callable[[str], Any]) -> Callable[[str], Any]:
            return lambda slug: look(slug) if known(slug) else None

        # Each look-up's value (what the View's method returns, or what its result is made from).
        self._looks: dict[str, Callable[[str], Any]] = {
            "record": self._record_value, "card": of_entry(self.card), "title": self.title, "date": self.date,
            "backlinks": partial(self.linked, "backlinks"), "caused_by": partial(self.linked, "caused_by"), "similar": partial(self.linked, "similar"),
            "category": lambda name: self.category(name) if name in self.catalog.categories else None, "slugs": lambda _: tuple(self.catalog.records),
            "matcher_entry": of_entry(self.matcher_entry), "fingerprints": of_entry(lambda slug: self.catalog.records[slug].head.fingerprints_key),  # the digest of their repr
        }

    def view(self) -> View:
        return View(self)

    def stale(self) -> set[str]:
        """The subjects whose part of the catalog changed since `before` (all, without one)."""
        if self._stale is None:
            now = self.signatures()
            self._stale = stale_subjects(self._before.signatures, now) if self._before is not None else set(now)
        return self._stale

    def known(self) -> Known:
        """What this reader found, for the next build's."""
        return Known(self.signatures(), self._values, self._cards, self._matcher)

    def _kept(self, subject: str) -> Known | None:
        """What the last build found, where `subject` did not change since."""
        before = self._before
        return before if before is not None and subject not in self.stale() else None

    def signatures(self) -> dict[str, Signature]:
        """Every subject's part of the catalog: an entry's record and date; the entries linked to it; a category; the
        list of entries. Every look-up's value is made of its subject's part alone."""
        if self._signatures is not None:
            return self._signatures
        out: dict[str, Signature] = {slug: (self._record_value(slug), self.date(slug)) for slug in self.catalog.records}
        out.update((f"links:{slug}", (self.linked("caused_by", slug), self.linked("backlinks", slug), self.linked("similar", slug)))
                   for slug in self.catalog.records)
        out.update((f"category:{name}", tuple(self.category(name).values())) for name in self.catalog.categories)
        out["slugs:"] = tuple(self.catalog.records)
        self._signatures = out
        return out

    def _per_entry(self, name: str, slug: str, make: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
        """An entry's card or matcher item (`name`: which memo), made once per build, or taken
        over from the last build's reader where the entry did not change."""
        mine: dict[str, dict[str, Any]] = getattr(self, f"_{name}")
        found = mine.get(slug)
        if found is not None:
            return found
        if slug not in mine:
            kept = self._kept(slug)
            theirs: Mapping[str, dict[str, Any]] = getattr(kept, name) if kept is not None else {}
            mine[slug] = theirs[slug] if slug in theirs else make(slug)
        return mine[slug]

    def card(self, slug: str) -> dict[str, Any]:
        return self._per_entry("cards", slug, self._card)

    def _card(self, slug: str) -> dict[str, Any]:
        rec = self.catalog.records[slug]
        return {"slug": slug, "category": rec.category, "url": entry_url(slug), "title": rec.head.title, "summary": rec.head.summary,
                "tags": rec.tags, "updated": self.date(slug)}

    def title(self, slug: str) -> str | None:
        rec = self.catalog.records.get(slug)
        return rec.head.title if rec is not None else None

    def linked(self, kind: str, slug: str) -> tuple[str, ...]:
        links: dict[str, tuple[str, ...]] = getattr(self.catalog, kind)
        return links.get(slug, ())

    def category(self, name: str) -> dict[str, str]:
        c = self.catalog.categories[name]
        return {"name": c.name, "title": c.title, "url": category_url(c.name)}

    def date(self, slug: str) -> str:
        rec = self.catalog.records.get(slug)
        return self.dates.get(date_key(rec.category, slug), "") if rec is not None else ""

    def matcher_entry(self, slug: str) -> dict[str, Any]:
        return self._per_entry("matcher", slug, self._matcher_entry)

    def _matcher_entry(self, slug: str) -> dict[str, Any]:
        head = self.catalog.records[slug].head
        return {"title": head.title, "url": entry_url(slug), "summary": head.summary, "fix": head.fix_summary, "steps": list(head.first_steps),
                "often_causes": list(head.often_causes)}

    def _record_value(self, slug: str) -> str | None:
        """A record is its file (path and bytes: the model, head and fragments are made from them
        by the code, which is in every key) and what the catalog made of its tags and category."""
        rec = self.catalog.records.get(slug)
        if rec is None:
            return None
        content = self.contents[rec.path] if self.contents is not None else rec.entry.model_dump_json()
        return f"{rec.path}\0{rec.category}\0{rec.tags!r}\0{content}"

    def value(self, read: Read) -> str:
        """The digest of what the look-up returns now (a look-up of a missing thing has a value too)."""
        found = self._values.get(read)
        if found is None:
            kept = self._kept(subject(read))
            if kept is not None and read in kept.values:
                found = self._values[read] = kept.values[read]
                return found
            look = self._looks.get(read[0])  # a look-up this code no longer makes (an older cache): its page renders
            found = self._values[read] = _digest(repr(look(read[1])) if look is not None else f"unknown look-up {read!r}")
        return found

    def key(self, plan: str, reads: Iterable[Read]) -> str:
        """A page's key: its plan's digest and the current value of each look-up it made."""
        values = self._values
        return _digest(plan + "\0" + "\0".join([values[r] if r in values else self.value(r) for r in reads]))


def check_plain(fn: Callable[..., Any]) -> None:
    """A page's `make` or `body`: a partial of a module-level function over plain arguments, so
    that all it reads besides them goes through the View. A closure or a catalog in its
    arguments would read around the key."""
    if type(fn) is not partial or (fn.func not in _MODULE_LEVEL and not _module_level(fn.func)):
        raise TypeError(f"{fn!r}: a page's make or body must be a partial of a module-level function")
    for arg in (*fn.args, *fn.keywords.values()):
        if type(arg) is not str and not _plain(arg):
            raise TypeError(f"{fn.func.__name__}: argument {arg!r} is not a plain value; read it through the View")


_MODULE_LEVEL: set[Callable[..., Any]] = set()  # functions checked once (a plan makes tens of thousands of pages)


def _module_level(fn: Callable[..., Any]) -> bool:
    name = getattr(fn, "__qualname__", "<locals>")
    if getattr(fn, "__closure__", None) is not None or "<locals>" in name or "<lambda>" in name:
        return False
    _MODULE_LEVEL.add(fn)
    return True


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (str, int, float, bool, Config)):
        return True
    if isinstance(value, (tuple, list)):
        return all(type(v) is str for v in value) or all(map(_plain, value))  # a tuple of slugs, mostly
    return False


@lru_cache(maxsize=4)
def _repr_config(config: Config) -> str:
    """The settings, spelled out once per build: every entry page has them among its arguments."""
    return repr(config)


def plan_digest(salt: str, path: str, template_key: str, context: Mapping[str, Any], fn: Callable[..., Any] | str | bytes | None) -> str:
    """What a page is before it reads anything: the site-wide salt, its path, its templates, its
    planned context, and its make's or body's function and arguments (or the body itself)."""
    if isinstance(fn, partial):
        args = ", ".join(_repr_config(a) if isinstance(a, Config) else repr(a) for a in fn.args)
        made = f"{fn.func.__module__}.{fn.func.__qualname__}({args}){sorted(fn.keywords.items())!r}"
    elif isinstance(fn, bytes):
        made = hashlib.sha256(fn).hexdigest()
    else:
        made = repr(fn)
    return _digest("\0".join((salt, path, template_key, repr(context), made)))
