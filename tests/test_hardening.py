"""Hostile entries (issue 9): refused with a clear message at file:line:col, never a traceback, a
hang or a path outside entries/ or site/. Rendering threats are in test_hardening_build.py, the
diagnose input limits in test_hardening_diagnose.py."""

from __future__ import annotations

import os
import re
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import sample_files, valid_entry, write_tree
from generator.core.load import LoadError, load_yaml, shown
from generator.core.patterns import check_pattern
from generator.core.problems import FailpediaError, Problem
from generator.core.validate import loc_text, parse_entry
from generator.site.write import SiteWriter

ENTRY = "distributed/bad.yaml"
# Characters no message may print raw: ESC (terminal escapes), bidi overrides, zero-width, newline.
RAW_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]")


def entry_bytes(data: Any) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode()


def problems_of(data: Any) -> list[Problem]:
    parsed, problems = parse_entry(data if isinstance(data, bytes) else entry_bytes(data), ENTRY)
    assert (parsed is None) == bool(problems)
    return problems


def assert_clean(problems: list[Problem]) -> None:
    """A clean error: a place, a one-line message of sane length, nothing raw from the input."""
    for p in problems:
        assert p.path == ENTRY and p.line >= 0 and p.col >= 0, p
        assert p.message and len(p.message) < 1_000, p
        assert not RAW_FORBIDDEN.search(p.message), repr(p.message)


def check_cli(run_cli, root: Path) -> tuple[int, str]:
    code, out, err = run_cli("check", "--entries", str(root))
    assert "Traceback" not in out + err
    return code, out + err


# --- Trojan source: every string field of the schema ---------------------------------------------


def string_leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in string_leaves(v, path + (k,))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in string_leaves(v, path + (i,))]
    return [path] if isinstance(data, str) else []


def with_leaf(data: Any, path: tuple[Any, ...], value: str) -> Any:
    if not path:
        return value
    copy = list(data) if isinstance(data, list) else dict(data)
    copy[path[0]] = with_leaf(data[path[0]], path[1:], value)
    return copy


def get_leaf(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


FULL_ENTRY = valid_entry(
    fingerprints=[{"pattern": r"CUDA out of memory\. Tried", "near": "allreduce|Reducer", "examples": ["CUDA out of memory. Tried"]}],
    fix={**valid_entry()["fix"], "code": [{"stack": "pytorch", "language": "python", "code": "x = 1\n", "caption": "Set x"}]},
    versions=[{"package": "torch", "introduced": "2.0", "fixed": "2.1", "note": "default changed"}],
    dead_ends=[{"attempt": "Restart", "why": "It comes back."}],
    related=["gpu-oom"],
    often_causes=["nccl-hang"],
)
LEAVES = string_leaves(FULL_ENTRY)
# Fields whose type is an enum or a strict pattern: any odd character fails that check instead.
STRICT = {"stack", "language", "strength", "package", "introduced", "fixed", "related", "often_causes", "url"}
TROJANS = ["\u202e", "\u2066", "\u200b", "\u061c", "\U000e0041", "\u00ad", "\x1b", "\u2028", "\ufffe"]


def test_every_string_field_is_covered() -> None:
    covered = {loc_text(p[:1]) for p in LEAVES}
    assert covered >= {"title", "summary", "tags", "fingerprints", "symptoms", "observe", "mechanism", "affected", "confirm",
                       "fix", "prevention", "faq", "versions", "dead_ends", "related", "often_causes", "references"}
    assert len(LEAVES) >= 30


@pytest.mark.parametrize("char", TROJANS, ids=lambda c: f"U+{ord(c):04X}")
def test_trojan_source_characters_are_refused_in_every_string_field(char: str) -> None:
    for path in LEAVES:
        value = get_leaf(FULL_ENTRY, path)
        hostile = value[: len(value) // 2] + char + value[len(value) // 2 :]
        problems = problems_of(with_leaf(FULL_ENTRY, path, hostile))
        field = loc_text(path)
        mine = [p for p in problems if p.message.startswith(field + ":") or f"'{field}'" in p.message
                or (path[0] == "tags" and "tag " in p.message)]
        assert mine, (field, problems)
        if not STRICT & set(map(str, path)):
            assert any(f"U+{ord(char):04X}" in p.message for p in mine), (field, mine)
        assert_clean(problems)


def test_every_invisible_format_character_is_refused() -> None:
    """The whole Unicode category Cf (bidi controls, zero-width, tag characters, ...)."""
    from generator.core.schema import _clean_text

    missing = []
    for cp in range(0x110000):
        if unicodedata.category(chr(cp)) == "Cf":
            try:
                _clean_text("a" + chr(cp) + "b")
            except ValueError:
                continue
            missing.append(f"U+{cp:04X}")
    assert missing == []


@pytest.mark.parametrize("text", ["café crème", "Ошибка CUDA", "日本語のログ", "emoji ❤️ ok", "tab\tand ≥ µs → ok"])
def test_ordinary_unicode_text_still_passes(text: str) -> None:
    assert problems_of(valid_entry(title=text)) == []


# --- Path tricks ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, message", [
    ("memory/a..evil.yaml", "is not a valid slug"),
    ("memory/a\\b.yaml", "is not a valid slug"),
    ("memory/\u043eom.yaml", "is not a valid slug"),  # Cyrillic о
    ("memory/OOM.yaml", "is not a valid slug"),
    ("memory/oom .yaml", "is not a valid slug"),
    ("memory/a\nb.yaml", "is not a valid slug"),
    ("memory/\x1b[31mred.yaml", "is not a valid slug"),
    ("memory/\u202eevil.yaml", "is not a valid slug"),
    ("Memory/x.yaml", "category folder names use lower-case letters"),
    ("mem..ory/x.yaml", "category folder names use lower-case letters"),
    ("mem\u043ery/x.yaml", "category folder names use lower-case letters"),
    ("memory/x.yaml.yaml", "is not a valid slug"),
    ("memory/sub/x.yaml", "nested folders are not allowed"),
])
def test_hostile_file_and_folder_names(run_cli, tmp_path: Path, name: str, message: str) -> None:
    root = write_tree(tmp_path / "entries", {**sample_files(), name: valid_entry()})
    code, out = check_cli(run_cli, root)
    assert code == 1 and message in out, out
    assert not RAW_FORBIDDEN.search(out.replace("\n", "")), repr(out)


def test_undecodable_file_name_is_reported_not_crashed(run_cli, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "entries", sample_files())
    with open(os.path.join(os.fsencode(root / "memory"), b"bad\xff.yaml"), "wb") as f:
        f.write(entry_bytes(valid_entry()))
    code, out = check_cli(run_cli, root)
    assert code == 1 and "memory/bad\\udcff.yaml: error: file name 'bad\\udcff' is not a valid slug" in out


@pytest.mark.parametrize("field, value, message", [
    ("related", ["../gpu-oom"], "is not a valid slug"),
    ("related", ["/etc/passwd"], "is not a valid slug"),
    ("related", ["a/b"], "is not a valid slug"),
    ("related", ["a\\b"], "is not a valid slug"),
    ("related", ["GPU-OOM"], "is not a valid slug"),
    ("often_causes", ["gpu-\u043eom"], "is not a valid slug"),
    ("tags", ["../oom"], "unknown tag '../oom'"),
    ("tags", ["/oom"], "unknown tag '/oom'"),
    ("tags", ["oom/../../x"], "unknown tag"),
    ("tags", ["\u043e\u043em"], "U+043E (CYRILLIC SMALL LETTER O)"),
    ("tags", ["oom", "OOM"], "tag 'OOM' repeats tag 'oom'"),
    ("tags", ["oo\u200bm"], "U+200B"),
    ("tags", ["oom\nnccl"], "must be a single line"),
])
def test_hostile_slugs_and_tags(run_cli, tmp_path: Path, field: str, value: list[str], message: str) -> None:
    root = write_tree(tmp_path / "entries", {**sample_files(), ENTRY: valid_entry(**{field: value})})
    code, out = check_cli(run_cli, root)
    assert code == 1 and message in out, out


def test_case_collision_between_files_is_a_duplicate(run_cli, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "entries", {**sample_files(), "distributed/gpu-oom.yaml": valid_entry()})
    code, out = check_cli(run_cli, root)
    assert code == 1 and "duplicate slug 'gpu-oom'" in out


def test_tag_registry_refuses_case_and_lookalike_names(run_cli, tmp_path: Path) -> None:
    tags = {"tags": [*sample_files()["tags.yaml"]["tags"],
                     {"name": "OOM", "description": "A second spelling of oom."},
                     {"name": "\u043e\u043em", "description": "A look-alike of oom."}]}
    root = write_tree(tmp_path / "entries", {**sample_files(), "tags.yaml": tags})
    code, out = check_cli(run_cli, root)
    assert code == 1 and "'OOM' is not a valid slug" in out and "'\u043e\u043em' is not a valid slug" in out


def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.yaml"
    secret.write_bytes(entry_bytes(valid_entry()))
    return secret


@pytest.mark.parametrize("link, target", [
    ("memory/leak.yaml", "secret"),
    ("memory/abs.yaml", "/etc/passwd"),
    ("memory/zero.yaml", "/dev/zero"),
    ("memory/up.yaml", "../../secret.yaml"),
    ("tags.yaml", "secret"),
    ("categories.yaml", "secret"),
])
def test_symlinks_out_of_entries_are_refused(run_cli, tmp_path: Path, link: str, target: str) -> None:
    files = sample_files()
    files.pop(link, None)
    root = write_tree(tmp_path / "entries", files)
    secret = outside(tmp_path)
    (root / link).symlink_to(secret if target == "secret" else target)
    started = time.perf_counter()
    code, out = check_cli(run_cli, root)
    assert time.perf_counter() - started < 10
    assert code == 1 and f"{root}/{link}: error: is a symlink that points outside the entries folder" in out, out


def test_symlinked_category_folder_and_special_files_are_refused(run_cli, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "entries", sample_files())
    elsewhere = write_tree(tmp_path / "elsewhere", {"x.yaml": valid_entry()})
    (root / "linked").symlink_to(elsewhere)
    os.mkfifo(root / "memory" / "pipe.yaml")  # opening it would block forever
    code, out = check_cli(run_cli, root)
    assert code == 1
    assert f"{root}/linked: error: is a symlink; categories must be real folders" in out
    assert f"{root}/memory/pipe.yaml: error: is not a regular file" in out


@pytest.mark.parametrize("rel", [
    "../escape.html", "/etc/passwd", "a/../../b", "a\\..\\b", "./index.html", "a//b", "", ".", "a/./b",
    "nul\x00byte.html", "new\nline.html", "C:/windows.html",
])
def test_writer_refuses_paths_that_leave_the_site(tmp_path: Path, rel: str) -> None:
    writer = SiteWriter(tmp_path / "site")
    try:
        with pytest.raises(FailpediaError, match="refusing to write"):
            writer.add(rel, "x")
    finally:
        writer.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_writer_refuses_case_collisions_and_file_folder_clashes(tmp_path: Path) -> None:
    writer = SiteWriter(tmp_path / "site")
    try:
        writer.add("tags/oom/index.html", "a")
        with pytest.raises(FailpediaError, match="differ only in case"):
            writer.add("tags/OOM/index.html", "b")
        writer.add("feed", "a file")
        with pytest.raises(FailpediaError, match="refusing to write 'feed/index.html'"):
            writer.add("feed/index.html", "under a file")
        with pytest.raises(FailpediaError, match="two pages would be written"):
            writer.add("tags/oom/index.html", "again")
        writer.add("Guides/a.html", "capital first")  # then the lower-case spelling clashes with it
        with pytest.raises(FailpediaError, match="'guides/b.html': it and 'Guides' differ only in case"):
            writer.add("guides/b.html", "b")
        writer.add("tags/ddp/index.html", "lower-case paths after a capital are still recorded")
        with pytest.raises(FailpediaError, match="differ only in case"):
            writer.add("tags/DDP/page/2/index.html", "c")
    finally:
        writer.abort()


def test_an_update_moves_files_into_new_folders_and_over_folders(tmp_path: Path) -> None:
    """An update moves each staged file in with one rename, making a folder the site lacks and
    replacing a folder that a file now takes the place of."""
    site = tmp_path / "site"
    (site / "old").mkdir(parents=True)
    (site / "old/index.html").write_text("a folder before")
    (site / "kept.html").write_text("kept")
    writer = SiteWriter(site, update=True)
    writer.add("old", "a file now")
    writer.add("new/deep/a.html", "in new folders")
    writer.add("kept.html", "changed")
    writer.commit(removed=[])
    writer.finish()
    assert (site / "old").read_text() == "a file now" and (site / "new/deep/a.html").read_text() == "in new folders"
    assert (site / "kept.html").read_text() == "changed" and sorted(p.name for p in tmp_path.iterdir()) == ["site"]


# --- Resource abuse ---------------------------------------------------------------------------------


def quick_problems(raw: bytes, limit: float = 5.0) -> list[Problem]:
    # CPU time, not wall time: the guard is against work that explodes (a YAML bomb), and the
    # machines running the suite are shared.
    started = time.process_time()
    problems = problems_of(raw)
    assert time.process_time() - started < limit
    assert problems
    assert_clean(problems)
    return problems


@pytest.mark.parametrize("raw, message", [
    (b"a: " + b"[" * 200_000 + b"\n", "exceeded maximum nesting depth"),
    (b"- " * 200_000 + b"x\n", "exceeded maximum nesting depth"),
    (b"a: " + b"{b: " * 20 + b"1" + b"}" * 20 + b"\n", "nested deeper than 12 levels"),
    (b"a: [" + b"1," * 200_000 + b"1]\n", "too many YAML values"),
    (b"title: " + b"9" * 5_000 + b"\n", "a number 5,000 characters long"),
    (b"title: " + b"59:" * 100_000 + b"1\n", "a number 300,001 characters long"),
    (b"title: 2024-13-45\n", "missing required field"),  # a date-like value stays text
    (b"2024-13-45: x\n", "unknown field '2024-13-45'"),
    (b"!foo title: x\n", "YAML tag '!foo' is not allowed"),
    (b"!!binary aGVsbG8=: x\n", "YAML tag 'tag:yaml.org,2002:binary' is not allowed"),
    (b"!!python/name:os.system x: y\n", "is not allowed"),
    (b"<<: {title: x}\n", "YAML merge keys ('<<') are not allowed"),
    (b"a: &a [x]\nb: *a\n", "YAML anchor '&a' is not allowed"),
    (b'title: "\\ud800"\n', "YAML syntax error"),
    (b"title: ok\nsummary: a\x00b\n", ":2:11: error: the character U+0000 is not allowed in YAML"),
    (b"\xef\xbb\xbf\xef\xbb\xbftitle: x\n", ""),
])
def test_malicious_yaml_is_refused_quickly_and_cleanly(raw: bytes, message: str) -> None:
    problems = quick_problems(raw)
    assert any(message in str(p) for p in problems), problems


@pytest.mark.parametrize("field, value, message", [
    ("title", "x" * 900_000, "title: String should have at most 300 characters"),
    ("mechanism", "x" * 900_000, "mechanism: String should have at most 20000 characters"),
    ("tags", ["oom"] * 5_000, "tags: List should have at most 12 items"),
    ("faq", [{"q": f"Why {i}?", "a": "Because."} for i in range(5_000)], "faq: List should have at most 40 items"),
    ("observe", ["x"] * 20_000, "observe: List should have at most 30 items"),
    ("fingerprints", [{"pattern": "CUDA out", "examples": ["CUDA out"] * 5_000}], "examples: List should have at most 10 items"),
])
def test_oversized_fields_have_sane_limits(field: str, value: Any, message: str) -> None:
    data = valid_entry(**{field: value})
    raw = yaml.safe_dump(data, sort_keys=False, width=10**9).encode()
    assert len(raw) < 1024 * 1024
    assert any(message in p.message for p in quick_problems(raw))


def test_a_huge_unknown_key_is_quoted_short() -> None:
    raw = entry_bytes(valid_entry()) + b"? " + b"k" * 500_000 + b"\n: 1\n"
    (p,) = quick_problems(raw)
    assert p.message.startswith("unknown field 'kkkk") and "…" in p.message


def test_messages_escape_control_and_bidi_characters_from_keys(run_cli, tmp_path: Path) -> None:
    raw = entry_bytes(valid_entry()) + b'"\\e]0;pwned\\a\\e[2J": 1\n"evil\\u202Eftp": 2\n'
    root = write_tree(tmp_path / "entries", {**sample_files(), ENTRY: raw})
    code, out = check_cli(run_cli, root)
    assert code == 1
    assert "unknown field '\\x1b]0;pwned\\x07\\x1b[2J'" in out and "unknown field 'evil\\u202eftp'" in out
    assert not RAW_FORBIDDEN.search(out.replace("\n", ""))


@pytest.mark.parametrize("text", ["abc", "a\x1bb", "x" * 500, "r\u202el", "\udcff", "new\nline"])
def test_shown_is_printable_and_short(text: str) -> None:
    out = shown(text, 80)
    assert out.isprintable() and len(out) <= 81 * 10


# --- Regexes: exponential and polynomial backtracking ----------------------------------------------


@pytest.mark.parametrize("pattern, example", [
    (r"\d*\d*\d*\d*XYZ", "1" * 290 + "!XYZ"),       # adjacent repeats of one class: n**5
    (r"(\d*)(\d*)(\d*)XYZ", "1" * 290 + "!XYZ"),    # the same behind plain groups
    (r"\d{0,999}\d{0,999}\d{0,999}XYZ", "1" * 290 + "!XYZ"),  # bounded, but wide
    (r".*foo.*XYZ", "foo" * 90 + "XYZ"),            # '.*' on both sides of text '.*' also takes
    (r"(\d+).*XYZ", "1" * 290 + "XYZ"),
    (r"\S+.*XYZ", "a" * 290 + "XYZ"),
    (r"CUDA\s+\s+error", "CUDA  error"),
    ("a?" * 20 + "a" * 20, "a" * 20),               # optional parts: 2**20 ways
    (r"(?:x|\d+)\d+XYZ", "1" * 290 + "XYZ"),
    (r"(a+)+b", "aaab"),                            # exponential: nested repeat
    (r"(?:x|xy)*z", "xyz"),
])
def test_backtracking_shapes_are_refused_before_any_matching(run_cli, tmp_path: Path, pattern: str, example: str) -> None:
    assert check_pattern(pattern) is not None
    data = valid_entry(fingerprints=[{"pattern": pattern, "examples": [example[:300]]}])
    started = time.perf_counter()
    problems = problems_of(data)
    assert time.perf_counter() - started < 2
    assert [p.message.split(": ")[0] for p in problems] == ["fingerprints[0].pattern"], problems


@pytest.mark.parametrize("pattern", [
    r"\d+\.\d+ GiB",            # a dot between the repeats: one way to split
    r"\w+\s+\w+ failed",
    r"[^ ]* .*XYZ",
    r".{0,80}x.{0,80}XYZ",       # small bounded repeats stay within the budget
    r"Assertion .*index out of bounds[^ ]* failed",
    r"[\w.]+( on rank \d+)?\. This may mean",
    r"The server socket has failed to (?:listen on|bind to).*(?:Address already in use|EADDRINUSE)",
    r"\bMA (\d+(?:\.\d+)?) GB +Max_MA",
])
def test_safe_shapes_still_pass(pattern: str) -> None:
    assert check_pattern(pattern) is None


def test_accepted_shapes_stay_quick_on_hostile_lines() -> None:
    """What passes is at worst quadratic: a crafted 2,048-character line takes well under a second
    (a refused shape such as '\\d*\\d*\\d*XYZ' takes minutes on the first line)."""
    from generator.core.patterns import compile_pattern

    n = 2048
    lines = ["1" * n, ("foo" * n)[:n], ("a " * n)[:n], "x" * (n - 4) + "XYZ!"]
    for pattern in [r"\d+\.\d+XYZ", r"[^ ]* .*XYZ", r".{0,80}x.{0,80}XYZ", r"foo.*XYZ", r"\w+\s+\w+XYZ", r".*XYZQ"]:
        assert check_pattern(pattern) is None
        rx = compile_pattern(pattern)
        started = time.perf_counter()
        for line in lines:
            rx.search(line)
        assert time.perf_counter() - started < 1, pattern


def test_pattern_python_would_read_differently_is_refused() -> None:
    assert "Possible set difference" in (check_pattern("[a--z]xyz") or "")


# --- Property: no input makes check throw ----------------------------------------------------------

TEXT = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["<script>alert(1)</script>", "{{ 7*7 }}", "{% raw %}", "\u202e", "\x00", "&a", "*a", "!!python/object:x",
                     "2024-13-45", "9" * 200, "TODO", "[x](javascript:alert(1))", "\\", "'", '"', ": ", "- ", "#", "\ud800"]),
)
VALUE = st.recursive(
    st.one_of(TEXT, st.integers(), st.floats(allow_nan=True), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)


@st.composite
def hostile_entries(draw: st.DrawFn) -> Any:
    """A valid entry with some fields replaced: a leaf by arbitrary text, or a field by any value."""
    data: Any = valid_entry()
    for _ in range(draw(st.integers(1, 4))):
        leaves = string_leaves(data)
        if leaves and draw(st.booleans()):
            path = draw(st.sampled_from(leaves))
            data = with_leaf(data, path, draw(TEXT))
        else:
            key = draw(st.one_of(st.sampled_from(sorted(data)), TEXT))
            data = {**data, key: draw(VALUE)}
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(hostile_entries())
def test_check_never_throws_on_schema_shaped_input(data: Any) -> None:
    try:
        raw = yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode("utf-8", "surrogatepass")
    except yaml.YAMLError:
        return
    problems_of(raw)  # returns problems or a valid entry; an exception fails the test
    assert_clean([p for p in problems_of(raw)])


SNIPPETS = [b"&a ", b"*a", b"!!", b"!x ", b"<<: ", b"? ", b"[", b"{", b"]", b"}", b"- ", b": ", b"\t", b"\n  ", b"'", b'"', b"\\",
            b"\xff", b"\x00", b"\xe2\x80\xae", b"%YAML 1.1\n", b"---\n", b"...\n", b"|\n", b">-\n", b"#", b"9" * 120, b"2024-13-45"]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(SNIPPETS)), max_size=6), st.binary(max_size=40))
def test_load_never_throws_on_mutated_yaml(cuts: list[tuple[int, bytes]], tail: bytes) -> None:
    raw = bytearray(entry_bytes(valid_entry()))
    for at, snippet in cuts:
        raw[at % (len(raw) + 1) : at % (len(raw) + 1)] = snippet
    raw += tail
    try:
        load_yaml(bytes(raw))
    except LoadError as e:
        assert e.message and not RAW_FORBIDDEN.search(e.message.replace("\n", " ")), repr(e.message)
    problems = problems_of(bytes(raw))
    assert_clean(problems)


# --- The build cache: local state, never a contributor's ----------------------------------------


class _Planted:
    """A pickle that runs code when loaded: what a pull request could commit as the cache."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def test_a_planted_build_cache_is_never_loaded(run_cli, tmp_path: Path) -> None:
    import json
    import pickle

    project = tmp_path / "checkout"
    entries = write_tree(project / "entries", sample_files())
    out = project / "site"
    marker = tmp_path / "pwned"
    cache = project / ".cache" / "build"
    cache.mkdir(parents=True)
    from generator.site.cache import FORMAT, SHARDS

    for shard in range(SHARDS):
        (cache / f"parsed-{shard:02d}.pickle").write_bytes(pickle.dumps({"format": FORMAT, "entries": _Planted(marker)}))
    planted_pages = {"format": FORMAT, "stamp": "x", "site": str(out), "pages": {"index.html": "x"}}
    (cache / "pages.json").write_text(json.dumps(planted_pages))
    code, stdout, _ = run_cli("build", "--entries", str(entries), "--out", str(out), "--project", str(project), "--no-search")
    assert code == 0 and not marker.exists()  # the pickle was not unpickled
    assert "0 reused" in stdout
    # The cache this tool writes itself still works: a second build changes nothing.
    code, stdout, _ = run_cli("build", "--entries", str(entries), "--out", str(out), "--project", str(project), "--no-search")
    assert code == 0 and not marker.exists()
    assert "nothing changed" in stdout or "0 rendered" in stdout, stdout


def test_reading_many_entries_does_not_map_memory_per_file(tmp_path: Path) -> None:
    """Each file read once kept its own memory mapping (a 1 MiB buffer shrunk in place); at
    65,530 of them (the kernel's limit) nothing could be mapped any more and a 100,000-entry
    build died importing a module."""
    from generator.core.read import read_source

    write_tree(tmp_path, {"tags.yaml": "tags: []\n", "categories.yaml": "categories: []\n"})
    folder = tmp_path / "memory"
    folder.mkdir()
    for i in range(3000):
        (folder / f"entry-{i}.yaml").write_text("title: x\n")
    maps = lambda: len(Path("/proc/self/maps").read_text().splitlines())  # noqa: E731
    before = maps()
    source = read_source(tmp_path)
    assert len(source.entries) == 3000
    assert maps() - before < 300
