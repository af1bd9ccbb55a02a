"""Validate: loaded data of one file → a frozen model, or Problems at file:line:col.

Pure: takes bytes and a display path, returns values. Cross-entry rules
(tags, related slugs, duplicates) live in `catalog.py`.
"""

from __future__ import annotations

import difflib
import hashlib
import pickle
import warnings
from dataclasses import dataclass
from functools import lru_cache
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar, get_args, get_origin

from pydantic import BaseModel, ValidationError

from .entrytext import text_fields
from .load import LoadError, Loaded, PackedPositions, PathKey, Positions, load_yaml, shown
from .metrics import PATTERNS, read, spellings
from .patterns import MAX_LINE, check_pattern, compile_pattern, plain_number, required_literals
from .problems import Problem
from .prose import MENTION_RE, NAMED_RE, XREF_RE, without_code
from .schema import SLUG_RE, STRENGTH_SCORE, Category, Entry, Fingerprint, Language, SynonymGroup, Tag, Verification

__all__ = [
    "Body", "FingerprintHead", "Head", "Parsed", "loc_text", "parse_categories", "parse_entry", "parse_tags", "parse_verified", "reproduce_key",
    "suggest",
]

M = TypeVar("M", bound=BaseModel)


class FingerprintHead(NamedTuple):
    """A fingerprint as the matcher files and the search need it: plain data (a pydantic model
    and an Enum cost many times as much to unpickle and read, for every entry on every build)."""

    pattern: str
    near: str | None
    window: int
    strength: str  # a Strength value
    score: int  # STRENGTH_SCORE of it
    rising: bool
    share_above: float | None
    times: int
    # The literal covers (patterns.required_literals) of pattern and near, found while checking
    # them in the parse workers, which the parent would otherwise find again, one pattern after
    # another, for the matcher file and the search shards.
    literals: tuple[str, ...]
    near_literals: tuple[str, ...]
    # A metric fingerprint (metrics.py): the quantity read, and its check. Its `pattern` is the
    # quantity's generated key/value pattern and its literals the quantity's spellings.
    metric: str | None = None
    of: str | None = None
    falls_to: float | None = None
    nonfinite: bool = False

    @classmethod
    def of_fingerprint(cls, fp: Fingerprint) -> "FingerprintHead":
        times = fp.times if fp.times is not None else DEFAULT_TIMES
        if fp.metric is not None:
            return cls(PATTERNS[fp.metric], fp.near, fp.window, fp.strength.value, STRENGTH_SCORE[fp.strength], fp.rising, fp.share_above,
                       times, tuple(spellings(fp.metric)), tuple(required_literals(fp.near)) if fp.near else (),
                       fp.metric, fp.of, fp.falls_to, fp.nonfinite)
        assert fp.pattern is not None  # validation: a fingerprint has a pattern or a metric
        return cls(fp.pattern, fp.near, fp.window, fp.strength.value, STRENGTH_SCORE[fp.strength], fp.rising, fp.share_above, times,
                   tuple(required_literals(fp.pattern)), tuple(required_literals(fp.near)) if fp.near else ())


DEFAULT_TIMES = 5


FIRST_STEPS = 3


@dataclass(frozen=True)
class Head:
    """What other pages and the site-wide files need of an entry (cards, links, the matcher, the
    search vocabulary). A rebuild loads every entry's head but unpickles a full entry only for
    the pages it renders."""

    title: str
    summary: str
    tags: tuple[str, ...]  # as written; the catalog resolves them
    related: tuple[str, ...]
    often_causes: tuple[str, ...]
    fix_summary: str
    first_steps: tuple[str, ...]  # the fix's first FIRST_STEPS steps (markdown), for diagnose's answer
    xrefs: tuple[str, ...]  # the slugs its prose names in [[...]]: links to those entries
    mentions: tuple[str, ...]  # slug-shaped words of its prose: the entries among them become links
    named: tuple[str, ...]  # every name its prose writes in [[...]], a slug or not (checked: each must be an entry)
    fingerprints: tuple[FingerprintHead, ...]
    # Digests made here, once per version of the file: of the fingerprints, and of everything the
    # entry puts in api/fingerprints.json. A rebuild compares them instead of the data.
    fingerprints_key: str
    matcher_key: str
    text_key: str  # of the searchable text (entrytext.text_fields): what the search index holds of it
    reproduce_key: str = ""  # reproduce_key(entry): what a verify record must name to be shown

    @classmethod
    def of(cls, e: Entry) -> "Head":
        fingerprints = tuple(FingerprintHead.of_fingerprint(fp) for fp in e.fingerprints)
        fingerprints_key = _digest(repr(fingerprints))
        first_steps = tuple(e.fix.steps[:FIRST_STEPS])
        matcher_key = _digest(repr((e.title, e.summary, e.fix.summary, first_steps, tuple(e.often_causes), fingerprints_key)))
        xrefs, mentions, named = cross_references(e)
        return cls(e.title, e.summary, tuple(e.tags), tuple(e.related), tuple(e.often_causes), e.fix.summary, first_steps, xrefs, mentions, named,
                   fingerprints, fingerprints_key, matcher_key, _digest(repr(sorted(text_fields(e).items()))), reproduce_key(e))


def cross_references(e: Entry) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """([[slug]] targets in the order written, the distinct slug-shaped words of the prose, the
    distinct names written in [[...]])."""
    text = without_code("\n".join(prose_fields(e)))
    xrefs = tuple(dict.fromkeys(m.group(1) for m in XREF_RE.finditer(text)))
    mentions = tuple(sorted({m.group(0) for m in MENTION_RE.finditer(text)} - set(xrefs)))
    return xrefs, mentions, tuple(dict.fromkeys(NAMED_RE.findall(text)))


def prose_fields(e: Entry) -> list[str]:
    """The markdown texts an entry page renders (the ones [[slug]] links work in)."""
    out = [e.mechanism, *e.observe, *e.affected, *e.confirm, e.fix.summary, *e.fix.steps, e.fix.verify.expect, *e.prevention]
    out += [x for s in e.symptoms for x in (s.signal, s.why)]
    out += [x for c in e.fix.code if c.caption for x in (c.caption,)]
    out += [x for f in e.faq for x in (f.q, f.a)]
    out += [x for d in e.dead_ends for x in (d.attempt, d.why)]
    return out


def reproduce_key(e: Entry) -> str:
    """The digest of an entry's reproduce section and of the fingerprints it must match ('' when it
    has none): a verify record made for other ones says nothing about these."""
    if e.reproduce is None:
        return ""
    # Fields at their defaults are left out, so that a field the schema gains later (with a
    # default) does not make every record stale.
    named = [e.fingerprints[i].model_dump(mode="json", exclude={"examples"}, exclude_defaults=True)
             for i in e.reproduce.matches if i < len(e.fingerprints)]
    return _digest(repr((e.reproduce.model_dump(mode="json", exclude_defaults=True), named)))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Body:
    """An entry's full model, with its page's HTML fragments where a build made them
    (site.pages.entry_fragments): held here, or pickled and loaded on first use.

    The one shape an entry travels in between the stages. A parse worker sends it back pickled
    and the parent keeps the bytes; the build cache stores them and hands them back through a
    callable that reads them; a rebuild unpickles only the entries whose pages it renders. The
    few most recently unpickled are kept (`_unpickle`): a page asks several times, but a worker
    rendering thousands of pages must not keep them all."""

    __slots__ = ("_held", "_pickle")

    def __init__(self, entry: Entry, fragments: dict[str, Any] | None = None) -> None:
        self._held: tuple[Entry, dict[str, Any] | None] | None = (entry, fragments)
        self._pickle: bytes | Callable[[], bytes] | None = None

    @classmethod
    def pickled(cls, data: bytes | Callable[[], bytes]) -> "Body":
        """A Body from `blob()`'s bytes, or from a callable that reads them when first needed."""
        body = cls.__new__(cls)
        body._held, body._pickle = None, data
        return body

    @property
    def entry(self) -> Entry:
        return self._value()[0]

    @property
    def fragments(self) -> dict[str, Any] | None:
        """The entry page's markdown and code as HTML, when the build made them with the model."""
        return self._value()[1]

    @property
    def elsewhere(self) -> bool:
        """Whether its pickle is read from somewhere else (the build cache) on first use."""
        return callable(self._pickle)

    def blob(self) -> bytes:
        """The model and fragments, pickled (what the build cache stores)."""
        if self._held is not None:
            return pickle.dumps(self._held, protocol=pickle.HIGHEST_PROTOCOL)
        assert self._pickle is not None
        return self._pickle if isinstance(self._pickle, bytes) else self._pickle()

    def _value(self) -> tuple[Entry, dict[str, Any] | None]:
        return self._held if self._held is not None else _unpickle(self.blob())

    def __reduce__(self) -> tuple[Callable[[bytes], Body], tuple[bytes]]:
        return Body.pickled, (self.blob(),)


@lru_cache(maxsize=8)
def _unpickle(blob: bytes) -> tuple[Entry, dict[str, Any] | None]:
    value = pickle.loads(blob)
    assert isinstance(value, tuple) and isinstance(value[0], Entry)
    return value


@dataclass(frozen=True)
class Parsed:
    """A valid entry: its body, the positions later checks report problems at, and its head."""

    body: Body
    loaded: Positions  # all of them from parse_entry; the cross-entry ones once slim
    head: Head

    def slim(self) -> "Parsed":
        """Only the positions cross-entry checks use (tags, related, often_causes): what the build
        cache keeps and parse workers send back."""
        keep = ("tags", "related", "often_causes")
        loaded = self.loaded
        if isinstance(loaded, Loaded):
            loaded = PackedPositions.of(
                {k: v for k, v in loaded.positions.items() if not k or k[0] in keep},
                {k: v for k, v in loaded.key_positions.items() if k and k[0] in keep},
            )
        return Parsed(self.body, loaded, self.head)


def suggest(word: str, choices: list[str] | set[str]) -> str:
    """' did you mean 'x'?' or ''."""
    close = difflib.get_close_matches(word.lower(), sorted(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def loc_text(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + shown(str(part), 80)
    return out


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class reached by following `loc` (skipping list indexes)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        current = _unwrap(field.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = get_origin(annotation)
        if origin is None:
            return annotation
        args = [a for a in get_args(annotation) if a is not type(None)]
        if not args:
            return annotation
        if origin is list:
            annotation = args[0]
            continue
        # Annotated[...] or Optional[...]: the first argument is the type.
        annotation = args[0]


def _problems_from(model: type[BaseModel], err: ValidationError, loaded: Loaded, path: str) -> list[Problem]:
    out = []
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        kind = e["type"]
        field = loc_text(loc)
        if kind == "missing":
            line, col = loaded.where(loc[:-1], key=True) if loc[:-1] else (1, 1)
            parent = loc_text(loc[:-1])
            within = f" in {parent}" if parent else ""
            message = f"missing required field '{loc[-1]}'{within}"
        elif kind == "extra_forbidden":
            line, col = loaded.where(loc, key=True)
            owner = _model_at(model, loc[:-1])
            hint = suggest(str(loc[-1]), set(owner.model_fields) if owner else set())
            if not hint and owner:
                hint = "; allowed fields: " + ", ".join(owner.model_fields)
            message = f"unknown field '{field}'{hint}"
        else:
            line, col = loaded.where(loc)
            msg = e["msg"]
            if kind.startswith("value_error"):
                msg = msg.removeprefix("Value error, ")
            elif kind == "model_type" or kind == "dict_type":
                msg = "expected a mapping (key: value pairs)"
            elif kind == "list_type":
                msg = "expected a list (items starting with '- ')"
            elif kind == "string_type":
                got = type(e.get("input")).__name__
                msg = f"expected text, got {got} (quote the value)"
            message = f"{field}: {msg}" if field else msg
        out.append(Problem(path, line, col, message))
    return out


def _validate(model: type[M], loaded: Loaded, path: str) -> tuple[M | None, list[Problem]]:
    if not isinstance(loaded.data, dict):
        kind = type(loaded.data).__name__
        return None, [Problem(path, 1, 1, f"the top level must be a mapping of fields, not a {kind}")]
    try:
        return model.model_validate(loaded.data), []
    except ValidationError as err:
        return None, _problems_from(model, err, loaded, path)


def _load(raw: bytes, path: str) -> tuple[Loaded | None, list[Problem]]:
    try:
        return load_yaml(raw), []
    except LoadError as e:
        return None, [Problem(path, e.line, e.col, e.message)]


def _check_fingerprints(entry: Entry, loaded: Loaded, path: str) -> list[Problem]:
    out = []
    for i, fp in enumerate(entry.fingerprints):
        where = loaded.where(("fingerprints", i))
        shape = _check_shape(fp)
        if shape:
            out.append(Problem(path, where[0], where[1], f"fingerprints[{i}]: {shape}"))
            continue
        bad = False
        for name in ("pattern", "near"):
            text = getattr(fp, name)
            if text is None:
                continue
            why = check_pattern(text)
            if why is None and not required_literals(text):
                why = (
                    "too generic: every match must contain a fixed piece of text of at least 3 characters "
                    "(e.g. 'CUDA out of memory'), so the pattern is specific and fast to search for"
                )
            if why:
                bad = True
                line, col = loaded.where(("fingerprints", i, name))
                out.append(Problem(path, line, col, f"fingerprints[{i}].{name}: {why}"))
        if bad:
            continue
        if fp.metric is not None:
            out.extend(_check_metric_examples(fp, i, loaded, path))
            continue
        assert fp.pattern is not None  # _check_shape: a pattern or a metric
        rx = compile_pattern(fp.pattern)
        numeric = _check_numeric(fp, rx.groups)
        if numeric:
            out.append(Problem(path, where[0], where[1], f"fingerprints[{i}]: {numeric}"))
            continue
        for j, example in enumerate(fp.examples):
            found = rx.search(example[:MAX_LINE])
            if found and (fp.rising or fp.share_above) and not all(
                plain_number(g) for g in found.groups()[: 1 if fp.rising else 2]
            ):
                line, col = loaded.where(("fingerprints", i, "examples", j))
                out.append(Problem(path, line, col, f"fingerprints[{i}].examples[{j}]: the captured groups must be plain numbers like 12 or 3.5"))
            if not found:
                line, col = loaded.where(("fingerprints", i, "examples", j))
                out.append(
                    Problem(
                        path, line, col,
                        f"fingerprints[{i}].examples[{j}]: the pattern does not match its own example; "
                        "fix the pattern or paste the real log line",
                    )
                )
    return out


def _check_shape(fp: Fingerprint) -> str | None:
    """Which fields go together: a pattern or a metric; a metric with exactly one check."""
    if (fp.pattern is None) == (fp.metric is None):
        return ("give either a pattern (error text) or a metric (a number read from any log format, e.g. metric: grad_norm), not both"
                if fp.pattern else "give a pattern (the error text) or a metric (e.g. metric: grad_norm with rising: true)")
    if fp.metric is None:
        for name in ("of", "falls_to"):
            if getattr(fp, name) is not None:
                return f"{name} needs a metric (e.g. metric: data_time), not a pattern"
        if fp.nonfinite:
            return "nonfinite needs a metric (e.g. metric: loss), not a pattern"
        return None
    checks = [name for name in ("rising", "share_above", "falls_to", "nonfinite") if getattr(fp, name) is not None and getattr(fp, name) is not False]
    if len(checks) != 1:
        return (f"a metric needs exactly one check, not {' and '.join(checks)}" if checks else
                "a metric needs a check: rising: true, share_above: 0.5 (with of:), falls_to: 1 or nonfinite: true")
    if fp.share_above is not None and fp.of is None:
        return "share_above with a metric needs of: the whole it is a share of (e.g. metric: data_time, of: step_time)"
    if fp.of is not None and fp.share_above is None:
        return "of goes with share_above (the metric's share of this quantity)"
    if fp.of == fp.metric:
        return f"of must be another quantity than the metric ({fp.metric})"
    if fp.nonfinite and fp.times is not None:
        return "times does not apply to nonfinite: it fires on the first nan or inf after a finite reading"
    return None


def _check_metric_examples(fp: Fingerprint, i: int, loaded: Loaded, path: str) -> list[Problem]:
    assert fp.metric is not None
    out = []
    for j, example in enumerate(fp.examples):
        for name in (fp.metric, fp.of):
            if name is None:
                continue
            got = read(name, example[:MAX_LINE])
            why = None
            if got is None:
                why = f"no {name} value can be read from this line; paste a real log line that prints it"
            elif fp.share_above is not None and got.value is None:
                why = f"its {name} is not a finite number"
            if why:
                line, col = loaded.where(("fingerprints", i, "examples", j))
                out.append(Problem(path, line, col, f"fingerprints[{i}].examples[{j}]: {why}"))
                break
    return out


def _check_numeric(fp: Fingerprint, groups: int) -> str | None:
    if fp.rising and fp.share_above is not None:
        return "use either rising or share_above, not both"
    if (fp.rising or fp.share_above is not None) and fp.near:
        return "a numeric fingerprint (rising/share_above) cannot also use near"
    if fp.rising and groups < 1:
        return "rising needs a group in the pattern that captures the number, e.g. 'allocated (\\d+\\.\\d+) GiB'"
    if fp.share_above is not None and groups < 2:
        return "share_above needs two groups: the whole first, then the part, e.g. 'Time (\\d+\\.\\d+).*Data (\\d+\\.\\d+)'"
    return None


def _check_code(entry: Entry, loaded: Loaded, path: str) -> list[Problem]:
    snippets: list[tuple[PathKey, Language, str]] = [(("fix", "code", i, "code"), c.language, c.code) for i, c in enumerate(entry.fix.code)]
    snippets.append((("fix", "verify", "code"), entry.fix.verify.language, entry.fix.verify.code))
    out = []
    if entry.reproduce is not None:
        snippets.append((("reproduce", "script"), Language.python, entry.reproduce.script))
        for k, index in enumerate(entry.reproduce.matches):
            if index >= len(entry.fingerprints):
                line, col = loaded.where(("reproduce", "matches", k))
                out.append(Problem(
                    path, line, col,
                    f"reproduce.matches[{k}]: there is no fingerprint {index}; the entry has "
                    f"{len(entry.fingerprints)} (numbered from 0)",
                ))
    for loc, language, code in snippets:
        if language is not Language.python:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(code, loc_text(loc), "exec", dont_inherit=True)
        except SyntaxError as e:
            line, col = loaded.where(loc)
            out.append(Problem(path, line, col, f"{loc_text(loc)}: Python does not compile: {e.msg} (line {e.lineno} of the snippet)"))
        except (RecursionError, MemoryError, ValueError):
            line, col = loaded.where(loc)
            out.append(Problem(path, line, col, f"{loc_text(loc)}: Python snippet is too deeply nested to compile"))
    return out


def parse_entry(raw: bytes, path: str) -> tuple[Parsed | None, list[Problem]]:
    """One entry file's bytes → a Parsed entry, or every problem in it."""
    loaded, problems = _load(raw, path)
    if loaded is None:
        return None, problems
    entry, problems = _validate(Entry, loaded, path)
    if entry is None:
        return None, problems
    problems = _check_fingerprints(entry, loaded, path) + _check_code(entry, loaded, path)
    return (None if problems else Parsed(Body(entry), loaded, Head.of(entry))), problems


@lru_cache(maxsize=8)  # the dev server plans the site again on every edit; the registries rarely change
def _parse_list(model: type[M], raw: bytes, path: str, key: str) -> tuple[list[tuple[M, tuple[int, int]]], list[Problem]]:
    loaded, problems = _load(raw, path)
    if loaded is None:
        return [], problems
    data = loaded.data
    if not isinstance(data, dict) or set(data) != {key} or not isinstance(data[key], list):
        return [], [Problem(path, 1, 1, f"expected a mapping with a single key '{key}' holding a list")]
    items: list[tuple[M, tuple[int, int]]] = []
    for i, item in enumerate(data[key]):
        sub = Loaded(
            item,
            {k[2:]: v for k, v in loaded.positions.items() if k[:2] == (key, i)},
            {k[2:]: v for k, v in loaded.key_positions.items() if k[:2] == (key, i)},
        )
        model_value, errs = _validate(model, sub, path)
        problems.extend(errs)
        if model_value is not None:
            items.append((model_value, loaded.where((key, i))))
    return items, problems


def parse_tags(raw: bytes, path: str) -> tuple[list[tuple[Tag, tuple[int, int]]], list[Problem]]:
    return _parse_list(Tag, raw, path, "tags")


def parse_synonyms(raw: bytes, path: str) -> tuple[list[tuple[SynonymGroup, tuple[int, int]]], list[Problem]]:
    return _parse_list(SynonymGroup, raw, path, "synonyms")


def parse_categories(raw: bytes, path: str) -> tuple[list[tuple[Category, tuple[int, int]]], list[Problem]]:
    return _parse_list(Category, raw, path, "categories")


def parse_verified(raw: bytes, path: str) -> tuple[dict[str, tuple[Verification, tuple[int, int]]], list[Problem]]:
    """The verify record (`entries/verified.yaml`): slug → its Verification and position."""
    loaded, problems = _load(raw, path)
    if loaded is None:
        return {}, problems
    data = loaded.data
    if not isinstance(data, dict) or set(data) != {"verified"} or not isinstance(data["verified"], dict):
        return {}, [Problem(path, 1, 1, "expected a mapping with a single key 'verified' holding slug: result items")]
    items: dict[str, tuple[Verification, tuple[int, int]]] = {}
    for slug, item in data["verified"].items():
        at = loaded.where(("verified", slug), key=True)
        if not isinstance(slug, str) or not SLUG_RE.fullmatch(slug):
            problems.append(Problem(path, *at, f"{shown(str(slug), 80)!r} is not an entry slug"))
            continue
        sub = Loaded(
            item,
            {k[2:]: v for k, v in loaded.positions.items() if k[:2] == ("verified", slug)},
            {k[2:]: v for k, v in loaded.key_positions.items() if k[:2] == ("verified", slug)},
        )
        value, errs = _validate(Verification, sub, path)
        problems.extend(Problem(p.path, p.line, p.col, f"verified.{slug}: {p.message}") for p in errs)
        if value is not None:
            items[slug] = (value, at)
    return items, problems
