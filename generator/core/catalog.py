"""Catalog: the source's files → the whole validated set of entries, with every cross-entry index.

Takes a `read.Source`, returns a `Catalog` (plus warnings) or raises BuildFailed with every
problem of every file. Everything a page needs (tag index, backlinks, similar entries) exists
here before the first page renders; search, diagnosis and the dev server query this object.
Pure but for the memo store a caller may pass (`store`, see `Memo`): `build_catalog` and
`Catalog.derived` write into it the results a next build may take over. A caller that keeps the
last catalog (the build server, the dev server) passes it as `last`: where an edit leaves every
cross-entry rule's input alone, that catalog is patched instead of every file checked again.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import Any, TypeVar, cast

from .load import LoadError, PathKey, Position, Positions, load_yaml, shown
from .parallel import run_parallel
from .problems import BuildFailed, Problem
from .prose import NAMED_RE
from .read import Source, read_entry
from .searchterms import member_terms
from .schema import SLUG_RE, Category, Entry, Tag, Verification
from .validate import Body, Head, Parsed, parse_categories, parse_entry, parse_synonyms, parse_tags, parse_verified, suggest

__all__ = ["Catalog", "Record", "build_catalog", "normalize_tag"]

T = TypeVar("T")
SIMILAR_COUNT = 5
# Top-level site paths that an entry slug would collide with.
RESERVED_SLUGS = frozenset({"tags", "categories", "static", "api", "schema", "search", "diagnose", "404"})


@dataclass(frozen=True)
class Record:
    """One valid entry in its place: slug and category come from the file path. `head` is what
    other pages need; `body` holds the full model, loaded on first use where it came pickled."""

    slug: str
    category: str
    path: str
    head: Head
    tags: tuple[str, ...]  # canonical registry names, in the entry's order
    body: Body = field(repr=False, compare=False)

    @property
    def entry(self) -> Entry:
        return self.body.entry

    @property
    def fragments(self) -> dict[str, Any] | None:
        """The entry page's markdown and code as HTML, when the build kept them (pages.entry_fragments)."""
        return self.body.fragments


@dataclass(frozen=True)
class Catalog:
    records: dict[str, Record]  # by slug, sorted
    tags: dict[str, Tag]  # registry, sorted by name
    categories: dict[str, Category]  # registry order
    aliases: dict[str, str]  # every spelling (name or alias) → name
    by_tag: dict[str, tuple[str, ...]]  # every registry tag → slugs (maybe empty)
    by_category: dict[str, tuple[str, ...]]
    backlinks: dict[str, tuple[str, ...]]  # slug → slugs whose `related` names it
    caused_by: dict[str, tuple[str, ...]]  # slug → slugs whose `often_causes` names it
    similar: dict[str, tuple[str, ...]]  # slug → entries sharing the most tags
    synonyms: tuple[tuple[str, ...], ...] = ()  # synonyms.yaml: groups of spellings search treats as one
    verified: dict[str, Verification] = field(default_factory=dict)  # the verify record's items, by slug
    warning_count: int = 0
    make_warnings: Callable[[], tuple[Problem, ...]] = field(default=tuple, repr=False, compare=False)
    memo: Memo | None = field(default=None, repr=False, compare=False)  # see `derived`
    basis: _Basis | None = field(default=None, repr=False, compare=False)  # what it was made from (build_catalog's `last`)

    @cached_property
    def warnings(self) -> tuple[Problem, ...]:
        """Every warning, sorted; positioned on first use. A build reports only the count, and
        finding the line of a link decodes its entry's packed positions, which is slow when
        thousands of entries warn."""
        return self.make_warnings()

    def derived(self, name: str, compute: Callable[[Catalog], T], key: str | None = None) -> T:
        """`compute(self)`, or the result the previous build stored under `name` for the same
        `key`: the digest of what `compute` reads, by default the catalog's shape (every entry's
        slug, category, tags and links). An edit that leaves the key alone skips the work."""
        return self.memo.get(name, lambda: compute(self), key) if self.memo is not None else compute(self)

    def derived_each(self, name: str, inputs: Mapping[str, Hashable], compute: Callable[[str], T], jobs: int | None = 1) -> list[T]:
        """`[compute(k) for k in inputs]`, where `inputs` maps each k to what compute(k) reads;
        with a memo, results whose inputs are unchanged since the previous build are reused. The
        rest are computed in up to `jobs` forked workers (None: one per core)."""
        if self.memo is not None:
            return self.memo.each(name, inputs, compute, jobs)
        return run_parallel(compute, list(inputs), jobs=jobs)

    def derived_from_last(self, name: str, compute: Callable[[Any], T]) -> T:
        """`compute(last)`, where `last` is what `compute` returned for `name` in the previous
        build (from the build cache, or held by a build server; None without one). A result
        that is `last` itself is not stored again."""
        if self.memo is None:
            return compute(None)
        return self.memo.carried(name, compute)

    def resolve_tag(self, spelling: str) -> str | None:
        return self.aliases.get(normalize_tag(spelling))

    def used_tags(self) -> list[str]:
        return [t for t, slugs in self.by_tag.items() if slugs]


def normalize_tag(spelling: str) -> str:
    return spelling.strip().lstrip("#").lower()


def _registry_tags(source: Source, problems: list[Problem]) -> tuple[dict[str, Tag], dict[str, str]]:
    tags: dict[str, Tag] = {}
    aliases: dict[str, str] = {}
    if source.tags is None:
        return tags, aliases
    path, raw = source.tags
    items, errs = parse_tags(raw, path)
    problems.extend(errs)
    for tag, (line, col) in items:
        for spelling in (tag.name, *tag.aliases):
            if spelling in aliases:
                problems.append(Problem(path, line, col, f"tag spelling '{spelling}' is already used by tag '{aliases[spelling]}'"))
            else:
                aliases[spelling] = tag.name
        tags.setdefault(tag.name, tag)
    return dict(sorted(tags.items())), aliases


def _registry_synonyms(source: Source, problems: list[Problem]) -> tuple[tuple[str, ...], ...]:
    """The synonym groups; a spelling that search cannot match, or one already in another group,
    is an error at its group's line."""
    if source.synonyms is None:
        return ()
    path, raw = source.synonyms
    items, errs = parse_synonyms(raw, path)
    problems.extend(errs)
    seen: dict[tuple[str, ...], tuple[int, str]] = {}  # terms → (group, spelling)
    groups = []
    for n, (group, (line, col)) in enumerate(items):
        ok = True
        for spelling in group.words:
            terms = member_terms(spelling)
            if not terms:
                problems.append(Problem(path, line, col, f"synonym '{spelling}' has no word or identifier search could match"))
                ok = False
            elif terms in seen and seen[terms][0] == n:
                problems.append(Problem(path, line, col, f"synonym '{spelling}' repeats '{seen[terms][1]}': search stems words, so plurals and -ing/-ed forms need no spelling of their own"))
                ok = False
            elif terms in seen:
                problems.append(Problem(path, line, col, f"synonym '{spelling}' is already in the group of '{items[seen[terms][0]][0].words[0]}' (a spelling belongs to one group)"))
                ok = False
            else:
                seen[terms] = (n, spelling)
        if ok:
            groups.append(tuple(group.words))
    return tuple(groups)


def _registry_categories(source: Source, problems: list[Problem]) -> dict[str, Category]:
    if source.categories is None:
        return {}
    path, raw = source.categories
    items, errs = parse_categories(raw, path)
    problems.extend(errs)
    out: dict[str, Category] = {}
    for cat, (line, col) in items:
        if cat.name in out:
            problems.append(Problem(path, line, col, f"category '{cat.name}' is listed twice"))
        out[cat.name] = cat
    return out


def _entry_tags(parsed: Parsed, path: str, aliases: dict[str, str], problems: list[Problem], known: dict[str, str]) -> tuple[str, ...]:
    """The entry's tags by registry name. `known` remembers, across the entries of one build, the
    name of each valid spelling met so far (10,000 entries write the same few hundred)."""
    out: list[str] = []
    for i, spelling in enumerate(parsed.head.tags):
        name = known.get(spelling)
        if name is None and spelling.isascii():
            name = aliases.get(normalize_tag(spelling))
            if name is not None:
                known[spelling] = name
        if name is not None and name not in out:
            out.append(name)
            continue
        name = aliases.get(normalize_tag(spelling))
        line, col = parsed.loaded.where(("tags", i))
        odd = next((ch for ch in spelling if ord(ch) > 127), None)
        if odd is not None:
            name = unicodedata.name(odd, "unknown")
            problems.append(Problem(path, line, col, f"tag '{spelling}' contains the non-ASCII character U+{ord(odd):04X} ({name}); tags are ASCII"))
            continue
        if name is None:
            problems.append(
                Problem(path, line, col, f"unknown tag '{spelling}'{suggest(normalize_tag(spelling), set(aliases))} (tags are listed in tags.yaml)")
            )
        else:
            problems.append(Problem(path, line, col, f"tag '{spelling}' repeats tag '{name}'; list it once"))
    return tuple(out)


SIMILAR_SCAN = 150  # co-tagged entries looked at per entry; keeps large corpora linear


def _similar(records: dict[str, Record], by_tag: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Entries sharing the most tags (rare tags count more), the explicit related links left out.

    Tags are visited rarest first and the scan stops after SIMILAR_SCAN co-tagged entries, so a
    tag carried by thousands of entries costs little and says little."""
    weight = {t: 1.0 / len(s) for t, s in by_tag.items() if s}
    rarest = {t: i for i, t in enumerate(sorted(by_tag, key=lambda t: (len(by_tag[t]), t)))}
    out: dict[str, tuple[str, ...]] = {}
    for slug, rec in records.items():
        scores: dict[str, float] = {}
        budget = SIMILAR_SCAN
        for t in sorted(rec.tags, key=rarest.__getitem__):
            members = by_tag[t][:budget]
            budget -= len(members)
            w = weight[t]
            for other in members:
                scores[other] = scores.get(other, 0.0) + w
            if budget <= 0:
                break
        scores.pop(slug, None)
        for s in (*rec.head.related, *rec.head.often_causes):
            scores.pop(s, None)
        # highest score first, ties by slug (a stable sort keeps the slug order among equals)
        out[slug] = tuple(sorted(sorted(scores), key=scores.__getitem__, reverse=True)[:SIMILAR_COUNT])
    return out


class Memo:
    """Results derived from the whole catalog, kept from one build to the next (the build cache
    stores `store`). Each is stored with the key of its inputs, by default the catalog's shape,
    and only the latest is kept: similar entries, tag pairs and the fingerprint list are
    costly to recompute on a large site."""

    def __init__(self, store: MutableMapping[str, Any], shape: str) -> None:
        self.store, self.shape = store, shape

    def get(self, name: str, compute: Callable[[], T], key: str | None = None) -> T:
        key = self.shape if key is None else key
        known = self.store.get(name)
        if isinstance(known, tuple) and len(known) == 2 and known[0] == key:
            return cast(T, known[1])  # stored by this name's compute
        value = compute()
        self.store[name] = (key, value)
        return value

    def carried(self, name: str, compute: Callable[[Any], T]) -> T:
        """`compute(what the last build stored under name, or None)`, stored for the next."""
        last = self.store.get(name)
        value = compute(last)
        if value is not last:  # the store writes what is set
            self.store[name] = value
        return value

    def kept(self, name: str) -> dict[str, tuple[Hashable, Any]]:
        """What `each` stored under `name` in the last build: k → (its inputs, its result)."""
        known = self.store.get(name)
        return known if isinstance(known, dict) else {}

    def each(self, name: str, inputs: Mapping[str, Hashable], compute: Callable[[str], T], jobs: int | None = 1) -> list[T]:
        """`compute(k)` for every k of `inputs` (k → what compute(k) reads), in order, reusing the
        previous build's result for each k whose inputs are equal; the others in up to `jobs` workers."""
        old = self.kept(name)
        misses = [k for k, key in inputs.items() if k not in old or old[k][0] != key]
        made = dict(zip(misses, run_parallel(compute, misses, jobs=jobs)))
        new: dict[str, tuple[Hashable, T]] = {k: (key, made[k]) if k in made else old[k] for k, key in inputs.items()}
        if made or len(new) != len(old):  # the store writes what is set
            self.store[name] = new
        return [value for _, value in new.values()]


def _shape(records: dict[str, Record], categories: dict[str, Category]) -> str:
    """What the derived indexes depend on: every entry's slug, category, tags and links."""
    parts = [(slug, rec.category, rec.tags, rec.head.related, rec.head.often_causes) for slug, rec in records.items()]
    return hashlib.sha256(repr((list(categories), parts)).encode("utf-8")).hexdigest()


ParseResult = tuple[Parsed | None, list[Problem]]


@dataclass(frozen=True)
class _At:
    """A known position, answering `where` as a file's positions do (for warnings on the record)."""

    at: tuple[int, int]

    def where(self, path: PathKey, *, key: bool = False) -> Position:
        return self.at


_NOT_RETURNED = "related link to '{}' is not returned (add '{}' to its related)"
# A warning before it is worded and placed: its file, the positions it is placed by (None: the
# whole file) and the path within the file, its message and the values its {} take.
_Pending = tuple[str, Positions | None, PathKey | None, str, tuple[str, ...]]


def build_catalog(
    source: Source, parsed_files: Mapping[str, ParseResult] | None = None, store: MutableMapping[str, Any] | None = None,
    last: Catalog | None = None,
) -> Catalog:
    """Validate every file and every cross-entry rule; raise BuildFailed with all errors.

    `parsed_files` (display path → parse result) lets the caller supply results it already has
    (from the build cache, or parsed in parallel); other files are parsed here. `store` carries
    derived indexes from one build to the next (see `Memo`; the build cache keeps it). `last`:
    the catalog the previous build in this process made; where every difference is in what no
    cross-entry rule reads, it is patched (`_patched`) instead of checked again."""
    if last is not None and last.basis is not None and parsed_files is not None:
        patched = _patched(last, last.basis, source, parsed_files, store)
        if patched is not None:
            return patched
    problems: list[Problem] = list(source.problems)
    tags, aliases = _registry_tags(source, problems)
    synonyms = _registry_synonyms(source, problems)
    categories = _registry_categories(source, problems)

    parsed: dict[str, tuple[str, str, Parsed]] = {}
    seen_paths: dict[str, str] = {}
    failed: list[tuple[str, bytes, set[tuple[int, int]]]] = []  # entries that did not validate, and where: checked for the rest below
    for path, category, slug, raw in source.entries:
        if slug in seen_paths:
            problems.append(Problem(path, 0, 0, f"duplicate slug '{slug}': also {seen_paths[slug]}; rename one of the files"))
            problems.append(Problem(seen_paths[slug], 0, 0, f"duplicate slug '{slug}': also {path}; rename one of the files"))
            continue
        seen_paths[slug] = path
        if slug in RESERVED_SLUGS:
            problems.append(Problem(path, 0, 0, f"slug '{slug}' is reserved for a site section; choose a more specific name"))
            continue
        if categories and category not in categories:
            problems.append(
                Problem(path, 0, 0, f"unknown category '{category}'{suggest(category, set(categories))} (categories are listed in categories.yaml)")
            )
        if parsed_files and path in parsed_files:
            result, errs = parsed_files[path]
        else:
            assert raw is not None, path  # read_source leaves out only the bytes of files the caller has parsed
            result, errs = parse_entry(raw, path)
        problems.extend(errs)
        if result is not None:
            parsed[slug] = (path, category, result)
        elif raw is not None and errs:
            failed.append((path, raw, {(p.line, p.col) for p in errs}))

    records: dict[str, Record] = {}
    spellings: dict[str, str] = {}
    for slug in sorted(parsed):
        path, category, p = parsed[slug]
        records[slug] = Record(slug, category, path, p.head, _entry_tags(p, path, aliases, problems, spellings), p.body)

    known = set(seen_paths)
    for slug, rec in records.items():
        loaded = parsed[slug][2].loaded
        for fname in ("related", "often_causes"):
            for i, target in enumerate(getattr(rec.head, fname)):
                if target == slug:
                    problems.append(Problem(rec.path, *loaded.where((fname, i)), f"{fname}[{i}]: an entry cannot name itself"))
                elif target not in known:
                    problems.append(Problem(rec.path, *loaded.where((fname, i)), f"{fname}[{i}]: no entry '{target}'{suggest(target, known)}"))
            names = getattr(rec.head, fname)
            dupes = [t for t, n in Counter(names).items() if n > 1] if len(set(names)) < len(names) else []
            for t in dupes:
                problems.append(Problem(rec.path, *loaded.where((fname,)), f"{fname}: '{t}' is listed twice"))

    record: dict[str, tuple[Verification, tuple[int, int]]] = {}
    if source.verified is not None:
        record, errs = parse_verified(source.verified[1], source.verified[0])
        problems.extend(errs)
    for path, raw, reported in failed:  # a place that has an error already gets no second one
        problems.extend(p for p in _unparsed_checks(raw, path, aliases, known) if (p.line, p.col) not in reported)
    raws = {path: raw for path, _category, _slug, raw in source.entries}
    for slug, rec in records.items():
        raw = raws.get(rec.path)
        if any(name not in known for name in rec.head.named):
            problems.extend(_xref_problems(source, rec, raw, known))

    if any(p.severity == "error" for p in problems):
        raise BuildFailed(problems)

    tag_lists: dict[str, list[str]] = {t: [] for t in tags}
    cat_lists: dict[str, list[str]] = {c: [] for c in categories}
    back_lists: dict[str, list[str]] = {s: [] for s in records}
    cause_lists: dict[str, list[str]] = {s: [] for s in records}
    for slug, rec in records.items():  # sorted by slug, so every list comes out sorted
        for t in rec.tags:
            tag_lists[t].append(slug)
        cat_lists.setdefault(rec.category, []).append(slug)
        for target in rec.head.related:
            back_lists[target].append(slug)
        for target in rec.head.often_causes:
            cause_lists[target].append(slug)
    by_tag = {t: tuple(v) for t, v in tag_lists.items()}
    by_category = {c: tuple(cat_lists[c]) for c in categories}
    backlinks = {s: tuple(v) for s, v in back_lists.items()}
    caused_by = {s: tuple(v) for s, v in cause_lists.items()}

    memo = Memo(store, _shape(records, categories)) if store is not None else None
    # Worded only when the warnings are listed: a generated corpus has tens of thousands of
    # unreturned related links.
    pending: list[_Pending] = []
    for slug, rec in records.items():
        for i, target in enumerate(rec.head.related):
            if slug not in records[target].head.related:
                pending.append((rec.path, parsed[slug][2].loaded, ("related", i), _NOT_RETURNED, (target, slug)))
        if not backlinks[slug] and not caused_by[slug]:
            pending.append((rec.path, None, None, "no entry links here (add it to a related list)", ()))
    if source.verified is not None:
        for slug, (v, at) in record.items():
            target = records.get(slug)
            if target is None:
                pending.append((source.verified[0], _At(at), (), f"verified.{slug}: no entry '{slug}' (run 'failpedia verify' to rewrite the record)", ()))
            elif v.reproduce != target.head.reproduce_key:
                pending.append((source.verified[0], _At(at), (), f"verified.{slug}: recorded for an earlier version of its reproduce section "
                                f"or fingerprints, so not shown; run 'failpedia verify {slug}'", ()))
    if source.tags is not None:
        for t, slugs in by_tag.items():
            if len(slugs) == 1:
                pending.append((source.tags[0], None, None, f"tag '{t}' is used by a single entry ({slugs[0]})", ()))

    return Catalog(
        records=records,
        tags=tags,
        categories=categories,
        aliases=aliases,
        by_tag=by_tag,
        by_category=by_category,
        backlinks=backlinks,
        caused_by=caused_by,
        synonyms=synonyms,
        similar=memo.get("similar", lambda: _similar(records, by_tag)) if memo is not None else _similar(records, by_tag),
        verified={slug: v for slug, (v, _at) in sorted(record.items()) if slug in records},
        warning_count=len(pending),
        make_warnings=partial(_warnings, pending),
        memo=memo,
        basis=_basis(source, parsed_files, pending),
    )


def _basis(source: Source, parsed_files: Mapping[str, ParseResult] | None, pending: list[_Pending]) -> _Basis | None:
    """What a catalog was made from, when every file's parse result was given."""
    if parsed_files is None or source.problems:
        return None
    results = {path: parsed_files[path] for path, _category, _slug, _raw in source.entries if path in parsed_files}
    if len(results) != len(source.entries):
        return None
    return _Basis(_registries(source), tuple((path, category, slug) for path, category, slug, _raw in source.entries), results, pending)


def _warnings(pending: list[_Pending]) -> tuple[Problem, ...]:
    """Every warning, worded and placed (Catalog.warnings, on first use)."""
    def warning(path: str, loaded: Positions | None, at: PathKey | None, message: str, values: tuple[str, ...]) -> Problem:
        line, col = loaded.where(at) if loaded is not None and at is not None else (0, 0)
        return Problem(path, line, col, message.format(*values) if values else message, "warning")

    return tuple(sorted(warning(*item) for item in pending))


@dataclass(frozen=True)
class _Basis:
    """What a catalog without a problem was made from: the registries, the entry files (path,
    category, slug), each file's parse result and the warnings to word."""

    registries: tuple[tuple[str, bytes] | None, ...]
    files: tuple[tuple[str, str, str], ...]
    results: dict[str, ParseResult]
    pending: list[_Pending]


def _registries(source: Source) -> tuple[tuple[str, bytes] | None, ...]:
    return source.tags, source.categories, source.synonyms, source.verified


def _same_links(a: Head, b: Head) -> bool:
    """Whether two versions of an entry read alike to every cross-entry rule: its tags, links,
    the names its prose writes in brackets and what a verify record must name."""
    return (a.tags == b.tags and a.related == b.related and a.often_causes == b.often_causes and a.named == b.named
            and a.reproduce_key == b.reproduce_key)


def _patched(last: Catalog, basis: _Basis, source: Source, parsed_files: Mapping[str, ParseResult],
             store: MutableMapping[str, Any] | None) -> Catalog | None:
    """`last` with the records of the files whose parse result changed replaced, or None when
    that would not be what checking everything again makes: the registries or the set of files
    differ, or a changed file has a problem or differs in what a cross-entry rule reads
    (`_same_links`). The indexes, the similar entries and the warnings stay; a warning keeps its
    place in the file as it is now (the positions of the new parse)."""
    if source.problems or _registries(source) != basis.registries or len(source.entries) != len(basis.files):
        return None
    records = dict(last.records)
    results: dict[str, ParseResult] = {}
    moved: dict[str, Positions] = {}  # entry file parsed anew → the new parse's positions
    for (path, category, slug, _raw), was in zip(source.entries, basis.files):
        if (path, category, slug) != was:
            return None
        now = parsed_files.get(path)
        if now is None:
            return None
        then = basis.results[path]
        results[path] = now
        if now is then:
            continue
        p, q = now[0], then[0]  # a file with a problem has no parse result
        if p is None or q is None or (p.head is not q.head and not _same_links(p.head, q.head)):
            return None
        records[slug] = Record(slug, category, path, p.head, records[slug].tags, p.body)
        if p.loaded is not q.loaded:
            moved[path] = p.loaded
    # A warning placed in an entry file is placed by that file's parse.
    pending = [(f, moved[f] if at is not None and f in moved else at, key, message, values)
               for f, at, key, message, values in basis.pending] if moved else basis.pending
    memo = Memo(store, last.memo.shape if last.memo is not None else _shape(records, last.categories)) if store is not None else None
    return replace(
        last, records=records, memo=memo, make_warnings=partial(_warnings, pending),
        similar=memo.get("similar", lambda: last.similar) if memo is not None else last.similar,
        basis=_Basis(basis.registries, basis.files, results, pending),
    )


def _xref_problems(source: Source, rec: Record, raw: bytes | None, known: set[str]) -> list[Problem]:
    """Each `[[...]]` in the entry's file that names no entry, at its line and column."""
    # Only what the page's prose writes in brackets (a fingerprint's example may quote `[[gpu]]`).
    text = (raw if raw is not None else read_entry(source, rec.category, rec.slug)).decode("utf-8", "replace")
    return _xref_scan(rec.path, text, known, set(rec.head.named))


def _xref_scan(path: str, text: str, known: set[str], written: set[str] | None = None) -> list[Problem]:
    out = []
    for m in NAMED_RE.finditer(text):
        name = m.group(1)
        if name in known or (written is not None and name not in written):
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        if text.count("`", start, m.start()) % 2:  # inside an inline code span on its line
            continue
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - start + 1
        if SLUG_RE.fullmatch(name):
            out.append(Problem(path, line, col, f"[[{name}]]: no entry '{name}'{suggest(name, known)}"))
        else:
            out.append(Problem(path, line, col, f"[[{shown(name, 80)}]]: not an entry's slug (lower-case words joined by '-', e.g. [[cuda-out-of-memory]])"))
    return out


def _unparsed_checks(raw: bytes, path: str, aliases: dict[str, str], known: set[str]) -> list[Problem]:
    """The cross-file checks of an entry whose fields did not validate (its tags, its links, its
    [[...]]), from its YAML: one run of `check` reports every problem of a file, not one stage's."""
    try:
        loaded = load_yaml(raw)
    except LoadError:  # reported already
        return []
    data = loaded.data
    if not isinstance(data, dict):
        return []
    out = []
    tags = data.get("tags")
    for i, t in enumerate(tags if isinstance(tags, list) else []):
        if isinstance(t, str) and t.isascii() and not t.startswith("<fill in") and aliases and aliases.get(normalize_tag(t)) is None:
            out.append(Problem(path, *loaded.where(("tags", i)), f"unknown tag '{t}'{suggest(normalize_tag(t), set(aliases))} (tags are listed in tags.yaml)"))
    for fname in ("related", "often_causes"):
        targets = data.get(fname)
        for i, target in enumerate(targets if isinstance(targets, list) else []):
            if isinstance(target, str) and SLUG_RE.fullmatch(target) and target not in known:
                out.append(Problem(path, *loaded.where((fname, i)), f"{fname}[{i}]: no entry '{target}'{suggest(target, known)}"))
    out.extend(_xref_scan(path, raw.decode("utf-8", "replace"), known))
    return out
