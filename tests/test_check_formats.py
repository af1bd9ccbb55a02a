"""`failpedia check --format github|json`: the same problems, as workflow annotations or one JSON document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import sample_files, valid_entry, write_tree


def _broken(tmp_path: Path) -> tuple[Path, str]:
    text = yaml.safe_dump(valid_entry(title="Broken", tags=["oom", "nccll"]), sort_keys=False)
    root = write_tree(tmp_path / "entries", {**sample_files(), "memory/bad.yaml": text, "memory/empty.yaml": b""})
    return root, text


def test_github_annotations_point_at_file_line_col(run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, text = _broken(tmp_path)
    monkeypatch.chdir(tmp_path)  # annotation paths are relative to the checkout
    code, out, err = run_cli("check", "--entries", "entries", "--format", "github")
    assert code == 1 and err == ""
    line = text.splitlines().index("- nccll") + 1
    assert out.splitlines() == [
        "::error file=entries/memory/bad.yaml,line=%d,col=3::unknown tag 'nccll'; did you mean 'nccl'? (tags are listed in tags.yaml)" % line,
        "::error file=entries/memory/empty.yaml::file is empty; see CONTRIBUTING.md or run 'failpedia new'",
        "5 entries, 2 errors",
    ]


def test_github_annotations_make_absolute_paths_relative_to_the_checkout(run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = _broken(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli("check", "--entries", str(root), "--format", "github")
    assert code == 1
    assert out.splitlines()[0].startswith("::error file=entries/memory/bad.yaml,line=")


def test_github_escapes_data_and_properties() -> None:
    from generator.surfaces.cli import _github
    from generator.core.problems import Problem

    p = Problem("entries/a,b:c%.yaml", 3, 0, "50% done\r\nnext: line")
    assert _github(p) == "::error file=entries/a%2Cb%3Ac%25.yaml,line=3,col=1::50%25 done%0D%0Anext: line"
    assert _github(Problem("tags.yaml", 0, 0, "used once", "warning")) == "::warning file=tags.yaml::used once"


def test_github_warnings_on_a_valid_set_only_with_strict(run_cli, sample: Path) -> None:
    code, out, _ = run_cli("check", "--entries", str(sample), "--format", "github")
    assert code == 0 and "::warning" not in out
    code, out, _ = run_cli("check", "--entries", str(sample), "--format", "github", "--strict")
    assert code == 1
    lines = out.splitlines()
    assert lines[-1] == "3 entries, 0 errors, 2 warnings"
    assert all(line.startswith("::warning file=") for line in lines[:-1]) and len(lines) == 3


def test_json_is_one_document_with_every_problem(run_cli, tmp_path: Path) -> None:
    root, text = _broken(tmp_path)
    code, out, err = run_cli("check", "--entries", str(root), "--format", "json")
    assert code == 1 and err == ""
    data = json.loads(out)
    line = text.splitlines().index("- nccll") + 1
    assert data == {
        "entries": 5,
        "errors": 2,
        "warnings": 0,
        "problems": [
            {"path": f"{root}/memory/bad.yaml", "line": line, "col": 3, "severity": "error",
             "message": "unknown tag 'nccll'; did you mean 'nccl'? (tags are listed in tags.yaml)"},
            {"path": f"{root}/memory/empty.yaml", "line": 0, "col": 0, "severity": "error",
             "message": "file is empty; see CONTRIBUTING.md or run 'failpedia new'"},
        ],
    }


def test_json_on_a_valid_set_lists_the_warnings_with_strict(run_cli, sample: Path) -> None:
    code, out, _ = run_cli("check", "--entries", str(sample), "--format", "json")
    assert code == 0 and json.loads(out)["problems"] == []
    code, out, _ = run_cli("check", "--entries", str(sample), "--format", "json", "--strict")
    assert code == 1
    data = json.loads(out)
    assert (data["entries"], data["errors"], data["warnings"]) == (3, 0, 2)
    assert {p["severity"] for p in data["problems"]} == {"warning"}


def test_unknown_format_is_a_usage_error(run_cli, sample: Path) -> None:
    code, _, err = run_cli("check", "--entries", str(sample), "--format", "xml")
    assert code == 2 and "invalid choice: 'xml'" in err
