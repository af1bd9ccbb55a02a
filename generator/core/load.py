"""Load: bytes of one YAML file → plain data plus a map from data paths to source positions.

Untrusted input: size-limited, strict UTF-8, YAML parsed by libyaml's safe composer, with
aliases, anchors, custom tags, duplicate keys and deep nesting refused. `load_yaml` returns a
`Loaded` value, or raises `LoadError` (line, column, message) for bad content.
"""

from __future__ import annotations

import marshal
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml

__all__ = ["MAX_BYTES", "MAX_DEPTH", "Loaded", "PackedPositions", "Position", "Positions", "load_yaml", "shown"]

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 12
MAX_NODES = 50_000
MAX_NUMBER_CHARS = 100  # longer numbers are a mistake or an attack (int() of 5,000 digits raises)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STANDARD_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:timestamp",
}
# An anchor token ('&name') starts a node: after a line start, an indicator or a space. Prose such
# as 'R&D' does not match; when this matches, an event parse finds the real token. Aliases ('*name')
# are found structurally: libyaml's composer hands back the same node object twice.
_ANCHOR_HINT = re.compile(r"(?:^|[\s\[{,:?-])&[^\s,\[\]{}*&]", re.MULTILINE)

Position = tuple[int, int]  # 1-based line, column
PathKey = tuple[str | int, ...]


@dataclass(frozen=True)
class Loaded:
    data: Any
    # path → position of the value; ("key",) + path → position of the mapping key
    positions: dict[PathKey, Position] = field(default_factory=dict)
    key_positions: dict[PathKey, Position] = field(default_factory=dict)

    def where(self, path: PathKey, *, key: bool = False) -> Position:
        """The closest known position for a data path (falls back to its parents)."""
        table = self.key_positions if key else self.positions
        p = tuple(path)
        while p:
            if p in table:
                return table[p]
            if p in self.positions:
                return self.positions[p]
            p = p[:-1]
        return self.positions.get((), (1, 1))


class Positions(Protocol):
    """Where a file's values are (Loaded, PackedPositions, or one known place)."""

    def where(self, path: PathKey, *, key: bool = ...) -> Position: ...


class PackedPositions:
    """Some of a Loaded's positions, kept as marshal bytes and decoded on the first `where`. The
    build cache holds them for every entry and loads them on every rebuild, but a build looks
    them up only to report a problem, and as dicts they are slow to unpickle."""

    __slots__ = ("packed", "_loaded")

    def __init__(self, packed: bytes) -> None:
        self.packed = packed
        self._loaded: Loaded | None = None

    @classmethod
    def of(cls, positions: dict[PathKey, Position], key_positions: dict[PathKey, Position]) -> "PackedPositions":
        return cls(marshal.dumps((positions, key_positions)))

    def where(self, path: PathKey, *, key: bool = False) -> Position:
        if self._loaded is None:
            positions, key_positions = marshal.loads(self.packed)
            self._loaded = Loaded(None, positions, key_positions)
        return self._loaded.where(path, key=key)

    def __reduce__(self) -> tuple[type[PackedPositions], tuple[bytes]]:
        return PackedPositions, (self.packed,)


def shown(text: str, limit: int = 200) -> str:
    """Untrusted text made safe to quote in a message: cut to `limit` characters, and control,
    bidirectional and invisible characters written as escapes (a file name or key holding ESC or
    U+202E must not recolour a terminal or reorder a CI log)."""
    if len(text) > limit:
        text = text[:limit] + "…"
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


class _LoadError(Exception):
    def __init__(self, line: int, col: int, message: str) -> None:
        self.line, self.col, self.message = line, col, message


def _pos(mark: Any) -> Position:
    return (mark.line + 1, mark.column + 1)


def _decode(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        before = raw[: e.start]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        raise _LoadError(line, col, f"invalid UTF-8 (byte 0x{raw[e.start]:02x}); save the file as UTF-8") from None
    return text.removeprefix("\ufeff")


def _find_anchor(text: str, force: bool = False) -> None:
    """Refuse anchors and aliases (billion-laughs); only parses events when the text hints at one."""
    if not force and ("&" not in text or not _ANCHOR_HINT.search(text)):
        return
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            line, col = _pos(event.start_mark)
            raise _LoadError(line, col, f"YAML alias '*{event.anchor}' is not allowed; write the value out in full")
        anchor = getattr(event, "anchor", None)
        if anchor:
            line, col = _pos(event.start_mark)
            raise _LoadError(line, col, f"YAML anchor '&{anchor}' is not allowed; write the value out in full")


class _Walker:
    def __init__(self) -> None:
        self.positions: dict[PathKey, Position] = {}
        self.key_positions: dict[PathKey, Position] = {}
        self.constructor = yaml.SafeLoader("")
        self.count = 0
        self.seen: set[int] = set()

    def walk(self, node: yaml.Node, path: PathKey, depth: int) -> Any:
        if id(node) in self.seen:
            raise _Shared(node)
        self.seen.add(id(node))
        self.count += 1
        if self.count > MAX_NODES:
            raise _LoadError(*_pos(node.start_mark), f"too many YAML values (over {MAX_NODES}); split the content")
        if depth > MAX_DEPTH:
            raise _LoadError(*_pos(node.start_mark), f"nested deeper than {MAX_DEPTH} levels; flatten the structure")
        if node.tag not in _STANDARD_TAGS:
            raise _LoadError(
                *_pos(node.start_mark), f"YAML tag {node.tag!r} is not allowed; remove the '!' tag"
            )
        self.positions[path] = _pos(node.start_mark)
        if isinstance(node, yaml.MappingNode):
            result: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise _LoadError(*_pos(key_node.start_mark), "mapping keys must be plain strings")
                key = self.walk_scalar(key_node)
                if not isinstance(key, str):
                    key = str(key)
                if key in result:
                    raise _LoadError(*_pos(key_node.start_mark), f"duplicate key '{shown(key)}'; keep one of them")
                self.key_positions[path + (key,)] = _pos(key_node.start_mark)
                result[key] = self.walk(value_node, path + (key,), depth + 1)
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.walk(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.ScalarNode)  # the composer makes only these three kinds
        return self.walk_scalar(node)

    def walk_scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag == "tag:yaml.org,2002:str":
            return node.value
        if node.tag == "tag:yaml.org,2002:merge":
            raise _LoadError(*_pos(node.start_mark), "YAML merge keys ('<<') are not allowed; write the fields out in full")
        if node.tag not in _STANDARD_TAGS:  # mapping keys come here without walk()'s check
            raise _LoadError(*_pos(node.start_mark), f"YAML tag {node.tag!r} is not allowed; remove the '!' tag")
        if node.tag == "tag:yaml.org,2002:timestamp":
            # Dates stay text: the schema has no date fields, text round-trips exactly, and a
            # date-like value such as 2024-13-45 needs no calendar check.
            return node.value
        if len(node.value) > MAX_NUMBER_CHARS:
            raise _LoadError(
                *_pos(node.start_mark), f"a number {len(node.value):,} characters long; quote the value if it is text"
            )
        try:
            return self.constructor.construct_object(node)
        except (ValueError, OverflowError, yaml.YAMLError):
            raise _LoadError(
                *_pos(node.start_mark), f"cannot read {node.value!r} as a YAML value; quote it if it is text"
            ) from None


def load_yaml(raw: bytes) -> Loaded:
    """Parse one entry or registry file; bad content raises `LoadError` at its line and column."""
    if len(raw) > MAX_BYTES:
        raise _LoadError(0, 0, f"file is {len(raw):,} bytes, over the {MAX_BYTES:,}-byte limit; shorten it")
    text = _decode(raw)
    if not text.strip():
        raise _LoadError(0, 0, "file is empty; see CONTRIBUTING.md or run 'failpedia new'")
    try:
        _find_anchor(text)
        root = yaml.compose(text, Loader=_Loader)
    except _LoadError:
        raise
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = _pos(mark) if mark else (0, 0)
        reason = e.problem or str(e)
        if e.context:
            reason = f"{reason} ({e.context})"
        raise _LoadError(line, col, f"YAML syntax error: {reason}") from None
    except yaml.reader.ReaderError as e:  # a control character; libyaml counts UTF-8 bytes
        before = text.encode("utf-8")[: e.position].decode("utf-8", "replace")
        line, col = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
        code = e.character if isinstance(e.character, int) else ord(e.character)
        raise _LoadError(line, col, f"the character U+{code:04X} is not allowed in YAML ({e.reason}); remove it") from None
    except yaml.YAMLError as e:
        raise _LoadError(0, 0, f"YAML error: {shown(str(e))}") from None
    if root is None:
        raise _LoadError(0, 0, "file holds no YAML document")
    walker = _Walker()
    try:
        data = walker.walk(root, (), 0)
    except _Shared as e:
        _find_anchor(text, force=True)  # raises at the alias itself
        raise _LoadError(*_pos(e.node.start_mark), "YAML aliases are not allowed; write the value out in full") from None
    return Loaded(data, walker.positions, walker.key_positions)


class _Shared(Exception):
    """A node reached twice: it came from an alias."""

    def __init__(self, node: yaml.Node) -> None:
        self.node = node


LoadError = _LoadError
