"""`failpedia check`: every bad input gives a clear error at file:line:col and exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import sample_files, valid_entry, write_tree

ENTRY = "distributed/bad.yaml"


def entry_text(**changes: object) -> str:
    return yaml.safe_dump(valid_entry(**changes), sort_keys=False)


def check(run_cli, root: Path) -> tuple[int, list[str]]:
    code, out, err = run_cli("check", "--entries", str(root))
    assert "Traceback" not in out + err
    return code, out.splitlines()


def errors_for(run_cli, tmp_path: Path, content: str | bytes, name: str = ENTRY) -> list[str]:
    root = write_tree(tmp_path / "entries", {**sample_files(), name: content})
    code, lines = check(run_cli, root)
    assert code == 1, lines
    prefix = f"{root}/"
    return [line.removeprefix(prefix) for line in lines if ": error: " in line]


def test_valid_sample_passes(run_cli, sample: Path) -> None:
    code, lines = check(run_cli, sample)
    assert code == 0
    assert lines == ["3 entries, 0 errors (2 link and tag suggestions: 'failpedia check --strict')"]


def test_yaml_syntax_error_has_line_col_and_reason(run_cli, tmp_path: Path) -> None:
    text = "title: Broken\nsummary: [unclosed\ntags: [oom]\n"
    (err,) = errors_for(run_cli, tmp_path, text)
    assert err.startswith(f"{ENTRY}:3:5: error: YAML syntax error: ")
    assert "expected ',' or ']'" in err


def test_missing_field_names_it(run_cli, tmp_path: Path) -> None:
    data = valid_entry()
    del data["mechanism"]
    errs = errors_for(run_cli, tmp_path, yaml.safe_dump(data, sort_keys=False))
    assert errs == [f"{ENTRY}:1:1: error: missing required field 'mechanism'"]


def test_missing_nested_field_points_at_parent_key(run_cli, tmp_path: Path) -> None:
    fix = valid_entry()["fix"]
    fix["verify"] = {"expect": "ok"}
    text = entry_text(fix=fix)
    errs = errors_for(run_cli, tmp_path, text)
    line = text.splitlines().index("  verify:") + 1
    assert errs == [
        f"{ENTRY}:{line}:3: error: missing required field 'code' in fix.verify",
        f"{ENTRY}:{line}:3: error: missing required field 'language' in fix.verify",
    ]


def test_wrong_type_points_at_value(run_cli, tmp_path: Path) -> None:
    text = entry_text().replace("title: Sample failure", "title: 42")
    assert errors_for(run_cli, tmp_path, text) == [f"{ENTRY}:1:8: error: title: expected text, got int (quote the value)"]


def test_unknown_field_suggests_the_right_one(run_cli, tmp_path: Path) -> None:
    text = entry_text().replace("symptoms:", "symtoms:")
    errs = errors_for(run_cli, tmp_path, text)
    line = text.splitlines().index("symtoms:") + 1
    assert f"{ENTRY}:{line}:1: error: unknown field 'symtoms'; did you mean 'symptoms'?" in errs
    assert f"{ENTRY}:1:1: error: missing required field 'symptoms'" in errs


def test_unknown_tag_suggests(run_cli, tmp_path: Path) -> None:
    text = entry_text(tags=["oom", "nccll"])
    errs = errors_for(run_cli, tmp_path, text)
    line = text.splitlines().index("- nccll") + 1
    assert errs == [f"{ENTRY}:{line}:3: error: unknown tag 'nccll'; did you mean 'nccl'? (tags are listed in tags.yaml)"]


def test_tags_normalise_case_and_aliases(run_cli, tmp_path: Path) -> None:
    from generator.core.catalog import build_catalog
    from generator.core.read import read_source

    root = write_tree(tmp_path / "entries", {**sample_files(), "memory/x.yaml": valid_entry(tags=["OOM", "#distributed-data-parallel"])})
    catalog = build_catalog(read_source(root))
    assert catalog.records["x"].tags == ("oom", "ddp")


def test_lookalike_tag_is_refused(run_cli, tmp_path: Path) -> None:
    errs = errors_for(run_cli, tmp_path, entry_text(tags=["\u043e\u043em"]))
    assert len(errs) == 1 and "U+043E (CYRILLIC SMALL LETTER O)" in errs[0]


def test_unknown_category_suggests(run_cli, tmp_path: Path) -> None:
    errs = errors_for(run_cli, tmp_path, entry_text(), name="memroy/x.yaml")
    assert errs == ["memroy/x.yaml: error: unknown category 'memroy'; did you mean 'memory'? (categories are listed in categories.yaml)"]


def test_duplicate_slug_names_both_paths(run_cli, tmp_path: Path) -> None:
    errs = errors_for(run_cli, tmp_path, entry_text(), name="memory/ddp-oom.yaml")
    assert errs == [
        "distributed/ddp-oom.yaml: error: duplicate slug 'ddp-oom': also " + str(tmp_path / "entries/memory/ddp-oom.yaml") + "; rename one of the files",
        "memory/ddp-oom.yaml: error: duplicate slug 'ddp-oom': also " + str(tmp_path / "entries/distributed/ddp-oom.yaml") + "; rename one of the files",
    ]


def test_related_to_missing_slug(run_cli, tmp_path: Path) -> None:
    text = entry_text(related=["gpu-om"], often_causes=["nowhere"])
    errs = errors_for(run_cli, tmp_path, text)
    rel = text.splitlines().index("- gpu-om") + 1
    oc = text.splitlines().index("- nowhere") + 1
    assert errs == [
        f"{ENTRY}:{rel}:3: error: related[0]: no entry 'gpu-om'; did you mean 'gpu-oom'?",
        f"{ENTRY}:{oc}:3: error: often_causes[0]: no entry 'nowhere'",
    ]


def test_fingerprint_must_match_its_example(run_cli, tmp_path: Path) -> None:
    text = entry_text(fingerprints=[{"pattern": "CUDA error: out of memory", "examples": ["CUDA out of memory"]}])
    errs = errors_for(run_cli, tmp_path, text)
    line = text.splitlines().index("  - CUDA out of memory") + 1
    assert errs == [
        f"{ENTRY}:{line}:5: error: fingerprints[0].examples[0]: the pattern does not match its own example; fix the pattern or paste the real log line"
    ]


@pytest.mark.parametrize(
    "pattern, reason",
    [
        ("(a+)+b", "catastrophic backtracking"),
        ("(?:x|xy)*z", "catastrophic backtracking"),
        ("(?<=rank)0", "only '(...)' and '(?:...)' groups are portable"),
        ("(?P<n>x)y", "only '(...)' and '(?:...)' groups are portable"),
        (r"(a)\1", "'\\1' is not portable"),
        ("(?i)cuda", "only '(...)' and '(?:...)' groups are portable"),
        ("[unclosed", "missing ']'"),
    ],
)
def test_unsafe_or_unportable_patterns_are_refused(run_cli, tmp_path: Path, pattern: str, reason: str) -> None:
    text = entry_text(fingerprints=[{"pattern": pattern, "examples": ["aaab"]}])
    (err,) = errors_for(run_cli, tmp_path, text)
    assert "fingerprints[0].pattern: " in err and reason in err


def test_python_snippets_must_compile(run_cli, tmp_path: Path) -> None:
    fix = valid_entry()["fix"]
    fix["code"] = [{"stack": "pytorch", "language": "python", "code": "model = DDP(model,\n"}]
    (err,) = errors_for(run_cli, tmp_path, entry_text(fix=fix))
    assert "fix.code[0].code: Python does not compile" in err


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"", "bad.yaml: error: file is empty"),
        (b"   \n\n", "bad.yaml: error: file is empty"),
        (b"- a\n- b\n", "bad.yaml:1:1: error: the top level must be a mapping of fields, not a list"),
        (b"just text\n", "bad.yaml:1:1: error: the top level must be a mapping of fields, not a str"),
        (b"title: caf\xe9\n", "bad.yaml:1:11: error: invalid UTF-8 (byte 0xe9)"),
        (b"a: &x [1]\nb: *x\n", "bad.yaml:1:4: error: YAML anchor '&x' is not allowed"),
        (b"a: !!python/object/apply:os.system ['ls']\n", "bad.yaml:1:4: error: YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed"),
        (b"title: a\ntitle: b\n", "bad.yaml:2:1: error: duplicate key 'title'"),
    ],
)
def test_malformed_files(run_cli, tmp_path: Path, content: bytes, expected: str) -> None:
    errs = errors_for(run_cli, tmp_path, content)
    assert errs[0].startswith("distributed/" + expected), errs


def test_billion_laughs_is_refused_quickly(run_cli, tmp_path: Path) -> None:
    lines = ["a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']"]
    for i in range(ord("b"), ord("j")):
        prev = chr(i - 1)
        lines.append(f"{chr(i)}: &{chr(i)} [" + ",".join([f"*{prev}"] * 9) + "]")
    errs = errors_for(run_cli, tmp_path, "\n".join(lines) + "\n")
    assert "YAML anchor '&a' is not allowed" in errs[0]


def test_file_over_one_mib(run_cli, tmp_path: Path) -> None:
    content = entry_text() + "# " + "x" * (1024 * 1024) + "\n"
    (err,) = errors_for(run_cli, tmp_path, content)
    assert "over the 1,048,576-byte limit" in err


def test_reference_url_must_be_http(run_cli, tmp_path: Path) -> None:
    text = entry_text(references=[{"title": "Bad", "url": "javascript:alert(1)"}])
    (err,) = errors_for(run_cli, tmp_path, text)
    line = text.splitlines().index("  url: javascript:alert(1)") + 1
    assert err.startswith(f"{ENTRY}:{line}:8: error: references[0].url: String should match pattern")


@pytest.mark.parametrize("name, message", [
    ("distributed/Bad_Name.yaml", "file name 'Bad_Name' is not a valid slug"),
    ("Bad Folder/x.yaml", "category folder names use lower-case letters, digits and hyphens"),
    ("distributed/x.yml", "rename to x.yaml"),
    ("distributed/tags.yaml", "slug 'tags' is reserved"),
])
def test_bad_paths(run_cli, tmp_path: Path, name: str, message: str) -> None:
    errs = errors_for(run_cli, tmp_path, entry_text(), name=name)
    assert any(message in e for e in errs), errs


def test_symlink_outside_entries_is_refused(run_cli, tmp_path: Path) -> None:
    outside = tmp_path / "secret.yaml"
    outside.write_text(entry_text())
    root = write_tree(tmp_path / "entries", sample_files())
    (root / "memory/leak.yaml").symlink_to(outside)
    code, lines = check(run_cli, root)
    assert code == 1
    assert f"{root}/memory/leak.yaml: error: is a symlink that points outside the entries folder; replace it with a real file" in lines


def test_bidi_control_characters_are_refused(run_cli, tmp_path: Path) -> None:
    (err,) = errors_for(run_cli, tmp_path, entry_text(title="Safe\u202etitle"))
    assert "U+202E" in err and err.startswith(f"{ENTRY}:1:8: error: title: ")


def test_errors_in_several_files_reported_together_sorted(run_cli, tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "entries",
        {**sample_files(), "memory/b.yaml": entry_text(title=7), "distributed/a.yaml": "x: [\n", "memory/c.yaml": b""},
    )
    code, lines = check(run_cli, root)
    assert code == 1
    errors = [l for l in lines if ": error: " in l]
    assert [e.split(": error:")[0].removeprefix(f"{root}/") for e in errors] == [
        "distributed/a.yaml:2:1",
        "memory/b.yaml:1:8",
        "memory/c.yaml",
    ]
    assert lines[-1] == "6 entries, 3 errors"


def test_usage_error_exits_2(run_cli) -> None:
    code, out, err = run_cli("check", "--bogus")
    assert code == 2 and "unrecognized arguments: --bogus" in err


def test_missing_entries_folder(run_cli, tmp_path: Path) -> None:
    code, out, err = run_cli("check", "--entries", str(tmp_path / "nope"))
    assert code == 3 and "entries folder not found" in err  # a setup error


def test_a_link_that_is_not_returned_warns_at_its_line_with_strict_and_build_is_quiet(run_cli, tmp_path: Path) -> None:
    """Warnings are positioned only when listed (a build prints their number): the line and
    column must still be the link's, and both commands must agree on how many there are."""
    files = sample_files()
    files["distributed/nccl-hang.yaml"]["related"] = []
    root = write_tree(tmp_path / "entries", files)
    code, out, _ = run_cli("check", "--entries", str(root), "--strict")
    lines = out.splitlines()
    assert code == 1
    text = (root / "distributed/ddp-oom.yaml").read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if t.strip() == "- nccl-hang")
    col = text[line - 1].index("nccl-hang") + 1
    assert f"{root}/distributed/ddp-oom.yaml:{line}:{col}: warning: related link to 'nccl-hang' is not returned (add 'ddp-oom' to its related)" in lines
    count = int(lines[-1].split(", ")[-1].split()[0])
    assert count == sum(": warning: " in x for x in lines) >= 2
    code, out, err = run_cli("build", "--entries", str(root), "--out", str(tmp_path / "site"), "--no-search", "--no-cache")
    assert code == 0 and "warning" not in out + err  # a build never repeats them


@pytest.mark.parametrize("command", [["-m", "generator"], ["failpedia"]])
def test_the_command_exits_with_mains_code_and_delivers_all_its_output(sample: Path, tmp_path: Path, command: list[str]) -> None:
    """`failpedia` leaves without tearing the interpreter down (os._exit): its exit code and every
    line it printed into a pipe must still arrive."""
    import subprocess
    import sys

    argv = [sys.executable, *command] if command[0] == "-m" else [str(Path(sys.executable).parent / command[0])]
    ok = subprocess.run([*argv, "check", "--entries", str(sample)], capture_output=True, text=True, timeout=120)
    ok = subprocess.run([*argv, "check", "--strict", "--entries", str(sample)], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 1 and ok.stdout.splitlines()[-1] == "3 entries, 0 errors, 2 warnings", ok
    assert len(ok.stdout.splitlines()) == 3
    bad = subprocess.run([*argv, "check", "--entries", str(tmp_path / "missing")], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 3 and "entries folder not found" in bad.stderr
    usage = subprocess.run([*argv, "build", "--jobs", "many"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "argument --jobs: 'many' is not a whole number" in usage.stderr


@pytest.mark.parametrize("argv", [
    ["search", "oom", "--top", "0"], ["search", "oom", "--top", "-1"], ["search", "oom", "--top", "1.5"],
    ["diagnose", "--top", "0", "x.log"], ["build", "--jobs", "0"], ["build", "--jobs", "-2"],
])
def test_a_count_option_below_one_is_a_usage_error(run_cli, sample: Path, argv: list[str]) -> None:
    """`--top -1` once printed all results but the last (a slice), and `--top 0` said nothing matched."""
    code, out, err = run_cli(*argv, "--entries", str(sample))
    option = argv[argv.index("--top") if "--top" in argv else argv.index("--jobs")]
    assert code == 2 and f"argument {option}: " in err and not out


def test_one_run_reports_every_problem_of_a_file(run_cli, tmp_path: Path) -> None:
    """A field error does not hide a bad tag, a bad link or a bad [[slug]] until the next run."""
    content = entry_text(tags=["oom", "memroy"], related=["gpu-oomm"], mechanism="See [[nccl-hnag]].\n").replace("summary:", "sumary:", 1)
    errors = errors_for(run_cli, tmp_path, content)
    assert any("unknown field 'sumary'; did you mean 'summary'?" in e for e in errors)
    assert any("unknown tag 'memroy'; did you mean 'memory'?" in e for e in errors)
    assert any("related[0]: no entry 'gpu-oomm'; did you mean 'gpu-oom'?" in e for e in errors)
    assert any("[[nccl-hnag]]: no entry 'nccl-hnag'; did you mean 'nccl-hang'?" in e for e in errors)


def test_shipped_entries_check_without_warnings(run_cli) -> None:
    code, out, err = run_cli("check", "--entries", str(Path(__file__).resolve().parent.parent / "entries"))
    assert code == 0 and "warning" not in out + err and out.count("\n") == 1
