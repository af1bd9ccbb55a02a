"""The contributor workflow: `failpedia new` → edit → `check` → `build`; the scaffold's refusals; the
editor schema, the field guide, CI, pre-commit and the pull-request template that go with it."""

from __future__ import annotations

import fnmatch
import json
import os
import re
from pathlib import Path

import pytest
import yaml

from conftest import sample_files, write_tree

REPO = Path(__file__).resolve().parent.parent
PLACEHOLDER = re.compile(r"<fill in[^>]*>|\bTODO\b")
PYPROJECT = """\
[tool.failpedia]
repo_url = "https://github.com/example/failpedia"
branch = "trunk"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder: pyproject.toml, the committed entry schema and a valid entries folder."""
    write_tree(tmp_path, {"pyproject.toml": PYPROJECT, "schema/entry.json": (REPO / "schema/entry.json").read_text()})
    write_tree(tmp_path / "entries", sample_files())
    return tmp_path


def new(run_cli, project: Path, *args: str) -> tuple[int, str, str]:
    return run_cli("new", *args, "--entries", str(project / "entries"), "--project", str(project))


def placeholder_lines(text: str) -> dict[int, str]:
    """Line number → placeholder, for every value line (comments left out). A block scalar's
    placeholder belongs to the line of its key, where YAML positions the value."""
    out = {}
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if not line.lstrip().startswith("#"):
            for m in PLACEHOLDER.finditer(line):
                block = lines[n - 2].endswith((": |", ": >-"))
                out[n - 1 if block else n] = m.group()
    return out


def fill(text: str) -> str:
    """Replace every placeholder the way a contributor would."""
    text = text.replace("'<fill in a regex that matches the example lines>'", r"'CUDA out of memory\. Tried to allocate \d+'")
    text = text.replace("'<fill in a line copied from a real log>'", "'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB'")
    text = text.replace("<fill in the code>", "model = model.half()")
    text = text.replace("<fill in a command or snippet to run>", "python train.py --batch-size 8")
    text = text.replace("https://example.com/TODO-paste-the-source-url", "https://pytorch.org/docs/stable/notes/cuda.html")
    text = text.replace("- <fill in a tag from tags.yaml>", "- oom")
    return re.sub(r"<fill in ([^>]*)>", lambda m: "Filled in with " + m.group(1), text)


def test_new_edit_check_build(run_cli, project: Path, tmp_path: Path) -> None:
    code, out, err = new(run_cli, project, "fsdp-gather-oom", "--category", "memory", "--tags", "OOM,#memory")
    assert code == 0, err
    path = project / "entries/memory/fsdp-gather-oom.yaml"
    text = path.read_text()
    holes = placeholder_lines(text)
    assert out.splitlines()[0] == f"created {path} with {len(holes)} placeholders to fill in"
    assert text.splitlines()[0] == "# yaml-language-server: $schema=../../schema/entry.json"
    assert (path.parent / "../../schema/entry.json").resolve() == (project / "schema/entry.json").resolve()
    assert "tags:\n  - oom\n  - memory\n" in text  # canonical names

    # Every placeholder fails `check`, at its own line, saying to fill it in; nothing else fails.
    code, out, _ = run_cli("check", "--entries", str(project / "entries"))
    assert code == 1
    errors = [line for line in out.splitlines() if ": error: " in line]
    prefix = f"{path}:"
    assert all(e.startswith(prefix) for e in errors), errors
    assert all(": fill in this field: it still holds the placeholder " in e for e in errors), errors
    assert sorted(int(e[len(prefix):].split(":")[0]) for e in errors) == sorted(holes)
    assert f"{path}:6:8: error: title: fill in this field: it still holds the placeholder '<fill in the name of the failure, as an engineer would search for it>'" in errors
    assert out.splitlines()[-1] == f"4 entries, {len(holes)} errors"

    # Filled in: valid, and it builds into a page with working edit and report links.
    path.write_text(fill(text))
    code, out, _ = run_cli("check", "--entries", str(project / "entries"))
    assert code == 0, out
    site = tmp_path / "site"
    code, out, err = run_cli("build", "--entries", str(project / "entries"), "--out", str(site), "--project", str(project))
    assert code == 0, err
    html = (site / "fsdp-gather-oom/index.html").read_text()
    assert "<h1>Filled in with the name of the failure, as an engineer would search for it</h1>" in html
    edit = "https://github.com/example/failpedia/edit/trunk/entries/memory/fsdp-gather-oom.yaml"
    assert f'<a href="{edit}" rel="nofollow">Edit this entry</a>' in html
    assert (project / edit.split("/edit/trunk/", 1)[1]).is_file()  # the link names the file `new` wrote
    assert '<a href="https://github.com/example/failpedia/issues/new?title=Problem%20in%20fsdp-gather-oom" rel="nofollow">Report a problem</a>' in html


def test_scaffold_without_tags_asks_for_one(run_cli, project: Path) -> None:
    assert new(run_cli, project, "tagless", "--category", "memory")[0] == 0
    path = project / "entries/memory/tagless.yaml"
    text = path.read_text()
    path.write_text(fill(text).replace("- oom", "- <fill in a tag from tags.yaml>"))
    code, out, _ = run_cli("check", "--entries", str(project / "entries"))
    assert code == 1
    line = text.splitlines().index("  - <fill in a tag from tags.yaml>") + 1
    assert out.splitlines() == [
        f"{path}:{line}:5: error: tags[0]: fill in this field: it still holds the placeholder '<fill in a tag from tags.yaml>'",
        "4 entries, 1 error",
    ]


def test_scaffold_outside_the_project_points_at_the_published_schema(run_cli, tmp_path: Path) -> None:
    entries = write_tree(tmp_path / "elsewhere", sample_files())
    code, _, err = run_cli("new", "x-y", "--category", "memory", "--entries", str(entries), "--project", str(REPO))
    assert code == 0, err
    first = (entries / "memory/x-y.yaml").read_text().splitlines()[0]
    assert re.fullmatch(r"# yaml-language-server: \$schema=https://\S+/schema/entry\.json", first)


@pytest.mark.parametrize(
    "args, message",
    [
        (("gpu-oom", "--category", "memory"), "an entry with the slug 'gpu-oom' already exists: {entries}/memory/gpu-oom.yaml; edit it, or choose another slug"),
        (("ddp-oom", "--category", "memory"), "an entry with the slug 'ddp-oom' already exists: {entries}/distributed/ddp-oom.yaml"),
        (("GPU_Hang", "--category", "memory"), "'GPU_Hang' is not a valid slug: use lower-case letters, digits and single hyphens; try 'gpu-hang'"),
        (("a--b", "--category", "memory"), "'a--b' is not a valid slug"),
        (("x" * 81, "--category", "memory"), "is 81 characters long; keep it to 80"),
        (("tags", "--category", "memory"), "slug 'tags' is reserved for a site section"),
        (("new-one", "--category", "memroy"), "unknown category 'memroy'; did you mean 'memory'? (categories: distributed, memory;"),
        (("new-one", "--category", "memory", "--tags", "oom,nccll"), "unknown tag 'nccll'; did you mean 'nccl'?"),
    ],
)
def test_new_refuses(run_cli, project: Path, args: tuple[str, ...], message: str) -> None:
    before = sorted(p.relative_to(project) for p in project.rglob("*"))
    code, out, err = new(run_cli, project, *args)
    assert code == 2 and out == ""
    assert err.startswith("failpedia: error: ") and message.format(entries=project / "entries") in err, err
    assert "Traceback" not in err
    assert sorted(p.relative_to(project) for p in project.rglob("*")) == before  # nothing written


def test_new_needs_the_entries_folder_and_a_category(run_cli, tmp_path: Path) -> None:
    code, _, err = run_cli("new", "x", "--category", "memory", "--entries", str(tmp_path / "nope"))
    assert code == 3 and "entries folder not found; pass --entries DIR" in err
    code, _, err = run_cli("new", "x")
    assert code == 2 and "the following arguments are required: --category" in err


def test_scaffold_has_every_field_with_a_comment() -> None:
    from generator.surfaces.scaffold import GUIDE_MODELS, scaffold_text

    text = scaffold_text(["oom"], "schema.json")
    lines = text.splitlines()
    for model in GUIDE_MODELS:
        for name in model.model_fields:
            assert re.search(rf"^[ #]*(?:- )?{name}:", text, re.M), f"{model.__name__}.{name} is missing from the scaffold"
    for i, line in enumerate(lines):
        if re.match(r"^\s*(?:- )?\w+:", line):
            assert lines[i - 1].lstrip().startswith("#"), f"no comment above line {i + 1}: {line}"
    # The comments are the schema's docstrings.
    from generator.core.schema import Entry, Fingerprint

    assert lines[lines.index("title: <fill in the name of the failure, as an engineer would search for it>") - 1] == f"# {Entry.model_fields['title'].description}"
    assert "    # definitive, strong or supporting: how much one hit says on its own." in lines
    assert Fingerprint.model_fields["strength"].description == "definitive, strong or supporting: how much one hit says on its own."


def test_scaffold_loads_as_an_entry_with_placeholders_only() -> None:
    from generator.core.load import load_yaml
    from generator.surfaces.scaffold import scaffold_text

    data = load_yaml(scaffold_text([], "schema.json").encode()).data
    assert data["related"] == [] and data["versions"] == [] and data["fix"]["code"][0]["stack"] == "pytorch"

    def strings(value: object) -> list[str]:
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []

    free = [s for s in strings(data) if not PLACEHOLDER.search(s)]
    assert sorted(free) == ["bash", "python", "pytorch", "strong"]  # enum defaults, nothing invented


# --- the files that go with it -----------------------------------------------------------------


def test_committed_schema_matches_the_models() -> None:
    from generator.core.schema import entry_json_schema

    committed = json.loads((REPO / "schema/entry.json").read_text())
    assert committed == entry_json_schema(), "schema/entry.json is stale: run .venv/bin/failpedia schema > schema/entry.json"


def test_vscode_maps_entries_to_the_schema() -> None:
    settings = json.loads((REPO / ".vscode/settings.json").read_text())
    ((schema, globs),) = settings["yaml.schemas"].items()
    assert (REPO / schema).resolve() == (REPO / "schema/entry.json").resolve()
    matches = lambda path: any(fnmatch.fnmatch(path, g) for g in globs)  # noqa: E731
    assert matches("entries/memory/cuda-out-of-memory.yaml")
    assert not matches("entries/tags.yaml") and not matches("entries/categories.yaml")
    assert "redhat.vscode-yaml" in json.loads((REPO / ".vscode/extensions.json").read_text())["recommendations"]


GUIDE_START = "<!-- BEGIN FIELD GUIDE"
GUIDE_END = "<!-- END FIELD GUIDE -->"


def test_contributing_field_guide_matches_the_schema() -> None:
    from generator.surfaces.scaffold import GUIDE_MODELS, field_guide

    path = REPO / "CONTRIBUTING.md"
    text = path.read_text()
    start = text.index("\n", text.index(GUIDE_START)) + 1
    end = text.index(GUIDE_END)
    expected = "\n" + field_guide() + "\n"
    if text[start:end] != expected and os.environ.get("FAILPEDIA_UPDATE_GUIDE") == "1":
        text = text[:start] + expected + text[end:]
        path.write_text(text)
        end = start + len(expected)
    assert text[start:end] == expected, "CONTRIBUTING.md's field guide is stale: FAILPEDIA_UPDATE_GUIDE=1 .venv/bin/python -m pytest tests/test_scaffold.py"
    for model in GUIDE_MODELS:
        assert f"#### {model.__name__}\n" in text
        for name, info in model.model_fields.items():
            assert f"| `{name}` |" in text and " ".join((info.description or "").split()).replace("|", "\\|") in text


def test_contributing_covers_the_workflow_and_readme_links_it() -> None:
    text = (REPO / "CONTRIBUTING.md").read_text()
    steps = re.findall(r"^(\d)\. \*\*", text.split("## Add an entry in five steps", 1)[1].split("\n## ", 1)[0], re.M)
    assert steps == ["1", "2", "3", "4", "5"]
    for heading in ("### Fingerprints", "### FAQ", "### How to cite", "### Title and quick answer", "## Previewing", "## How review works"):
        assert f"\n{heading}" in text
    for link in re.findall(r"\]\(((?!https?:|#)[^)#]+)", text):  # every relative link resolves
        assert (REPO / link).exists(), link
    readme = (REPO / "README.md").read_text()
    assert "](CONTRIBUTING.md)" in readme
    for command in ("failpedia new", "failpedia serve", "--format github"):
        assert command in readme


def test_ci_checks_tests_and_builds_every_pull_request_and_deploys_main() -> None:
    workflows = [REPO / ".github/workflows/ci.yml"]  # verify.yml: test_verify_workflow_runs_strangers_code_without_secrets
    runs: list[str] = []
    uses: list[str] = []
    for wf in workflows:
        data = yaml.safe_load(wf.read_text())
        triggers = data[True] if True in data else data["on"]  # YAML 1.1 reads `on:` as true
        assert "pull_request" in triggers and triggers["push"]["branches"] == ["main"]
        for job in data["jobs"].values():
            for step in job["steps"]:
                runs.append(step.get("run", ""))
                uses.append(step.get("uses", ""))
            if any("deploy-pages" in s.get("uses", "") for s in job["steps"]):
                assert "refs/heads/main" in job["if"] and "push" in job["if"]
                assert job["permissions"] == {"pages": "write", "id-token": "write"}
    assert any(r.strip().endswith("failpedia check --format github") for r in runs)
    assert any(r.strip() in (".ci/run", "make test") for r in runs)
    assert any(r.strip().endswith("failpedia build") for r in runs)
    assert any(u.startswith("actions/upload-pages-artifact@") for u in uses)
    assert any(u.startswith("actions/deploy-pages@") for u in uses)
    assert (REPO / ".ci/run").read_text().strip().endswith("make test")


def test_pre_commit_checks_changed_entries() -> None:
    data = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for repo in data["repos"] if repo["repo"] == "local" for h in repo["hooks"]}
    hook = hooks["failpedia-check"]
    assert hook["language"] == "system" and "check" in hook["entry"]
    files = re.compile(hook["files"])
    assert files.search("entries/memory/cuda-out-of-memory.yaml") and files.search("entries/tags.yaml")
    assert not files.search("generator/surfaces/cli.py")
    make = (REPO / "Makefile").read_text()
    assert hook["entry"].startswith("make") and re.search(r"^check: .*\n\t\$\(PY\) -m generator check$", make, re.M)


def test_pull_request_template_has_the_entry_checklist() -> None:
    text = (REPO / ".github/pull_request_template.md").read_text()
    items = re.findall(r"^- \[ \] (.+)$", text, re.M)
    assert len(items) >= 6
    for must in ("failpedia check", "failpedia serve", "reference", "real logs", "related"):
        assert any(must in item for item in items), must


def test_verify_workflow_runs_strangers_code_without_secrets() -> None:
    text = (REPO / ".github/workflows/verify.yml").read_text()
    data = yaml.safe_load(text)
    triggers = data[True] if True in data else data["on"]
    assert set(triggers) == {"pull_request", "schedule", "workflow_dispatch"} and "entries/**" in triggers["pull_request"]["paths"]
    code = "\n".join(line.split("#")[0] for line in text.splitlines())  # the comments explain why not
    assert "pull_request_target" not in code and "secrets." not in code
    assert data["permissions"] == {"contents": "read"} and all("permissions" not in job for job in data["jobs"].values())
    steps = [s for job in data["jobs"].values() for s in job["steps"]]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["persist-credentials"] is False
    assert any("failpedia verify --snippets" in s.get("run", "") for s in steps)
    assert "verify:" in (REPO / "Makefile").read_text() and "failpedia verify" not in (REPO / "Makefile").read_text().split("\ntest:")[1].split("\n\n")[0]
