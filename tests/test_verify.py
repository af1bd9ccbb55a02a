"""failpedia verify: reproductions run in a sandbox (own environment, scratch folder, minimal
environment, time and memory limits), are matched with diagnose's rules and recorded; the
record shows on entry pages; fix snippets are checked against the installed release. Every
test installs one tiny wheel made here, from a local folder: no network, no big package."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import sample_files, valid_entry, write_tree
from generator.site.build import build, load_catalog
from generator.core.config import Config
from generator.surfaces.verify import Options, check_snippets, normalize_requirement, update_record, verify_entries

FIXTURE_PKG = '''\
"""A stand-in for a framework: a config class that checks its arguments, and a failure."""
__version__ = "1.2.3"


class WidgetConfig:
    def __init__(self, size: int = 1, mode: str = "fast") -> None:
        if mode == "gpu":
            raise RuntimeError("mode 'gpu' needs a CUDA device")
        if mode not in ("fast", "slow"):
            raise ValueError(f"mode must be 'fast' or 'slow', not {mode!r}")
        self.size, self.mode = size, mode


def overflow(n: int) -> None:
    raise OverflowError(f"FixtureError: widget overflow at {n}")
'''
PACKAGE = "failpedia-fixture>=1,<2"
FINGERPRINT = {"pattern": r"FixtureError: widget overflow at \d+", "strength": "definitive",
               "examples": ["OverflowError: FixtureError: widget overflow at 3"]}


def _wheel(folder: Path) -> Path:
    """failpedia_fixture 1.2.3 as a pure-Python wheel, written by hand (no build backend runs)."""
    files = {
        "failpedia_fixture/__init__.py": FIXTURE_PKG.encode(),
        "failpedia_fixture-1.2.3.dist-info/METADATA": b"Metadata-Version: 2.1\nName: failpedia-fixture\nVersion: 1.2.3\n",
        "failpedia_fixture-1.2.3.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: failpedia-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(data)}\n"
    record += "failpedia_fixture-1.2.3.dist-info/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "failpedia_fixture-1.2.3-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("failpedia_fixture-1.2.3.dist-info/RECORD", record)
    return folder


@pytest.fixture(scope="session")
def options(tmp_path_factory: pytest.TempPathFactory) -> Options:
    """Install from the local wheel only; the environments are shared by every test here."""
    base = tmp_path_factory.mktemp("verify")
    return Options(venv_dir=base / "venvs", find_links=(str(_wheel(base / "wheels")),), no_index=True)


def reproducing(script: str, **more: Any) -> dict[str, Any]:
    return valid_entry(
        title="Widget overflow", fingerprints=[FINGERPRINT], related=["ddp-oom"],
        reproduce={"platform": "cpu", "packages": [PACKAGE], "script": script, "matches": [0], **more},
    )


def project(tmp_path: Path, **entries: dict[str, Any]) -> Path:
    """The sample entries plus `entries` (slug → entry data) in the memory category."""
    files = sample_files()
    files["distributed/ddp-oom.yaml"]["related"] += list(entries)
    files.update({f"memory/{slug}.yaml": data for slug, data in entries.items()})
    return write_tree(tmp_path / "entries", files)


def verify(entries: Path, options: Options, *slugs: str) -> list[Any]:
    return list(verify_entries(load_catalog(entries), slugs, options, "2026-12-01"))


OVERFLOW = "from failpedia_fixture import overflow\nprint('starting', flush=True)\noverflow(3)\n"


def test_a_reproduction_that_shows_its_fingerprint_is_recorded(tmp_path: Path, options: Options) -> None:
    entries = project(tmp_path, **{"widget-overflow": reproducing(OVERFLOW)})
    [outcome] = verify(entries, options)
    assert outcome.status == "reproduced", outcome.output_tail
    assert outcome.matched == (0,) and outcome.packages == {"failpedia-fixture": "1.2.3"}
    assert "OverflowError: FixtureError: widget overflow at 3" in outcome.output_tail
    record = entries / "verified.yaml"
    assert update_record(record, [outcome], set(load_catalog(entries).records))
    item = yaml.safe_load(record.read_text())["verified"]["widget-overflow"]
    assert item["result"] == "reproduced" and item["date"] == "2026-12-01" and item["platform"] == "cpu"
    assert item["packages"] == {"failpedia-fixture": "1.2.3"} and item["python"].count(".") == 2
    assert not update_record(record, [outcome], set(load_catalog(entries).records))  # same outcome: the file stays as it is
    [again] = verify(entries, options)
    assert again.status == "reproduced" and again.venv_reused  # one environment per package set, made once


def test_environments_share_the_files_of_a_distribution_they_both_hold(tmp_path: Path, options: Options) -> None:
    from generator.surfaces.verify import ensure_venv

    one = ensure_venv([PACKAGE], options)
    two = ensure_venv([PACKAGE, "failpedia-fixture!=1.0"], options)  # another package set: another environment
    assert one.path != two.path and two.installed["failpedia-fixture"] == "1.2.3"
    [a] = one.path.glob("lib/python*/site-packages/failpedia_fixture/__init__.py")
    [b] = two.path.glob("lib/python*/site-packages/failpedia_fixture/__init__.py")
    assert a.stat().st_ino == b.stat().st_ino  # stored once
    assert "widget overflow" in b.read_text()


def test_the_record_is_sorted_and_drops_entries_that_are_gone(tmp_path: Path, options: Options) -> None:
    entries = project(tmp_path, **{"widget-overflow": reproducing(OVERFLOW), "widget-overflow-again": reproducing(OVERFLOW)})
    outcomes = verify(entries, options)
    assert [o.slug for o in outcomes] == ["widget-overflow", "widget-overflow-again"]
    assert all(o.venv_reused for o in outcomes[1:])
    record = tmp_path / "verified.yaml"
    update_record(record, outcomes[::-1], {"widget-overflow", "widget-overflow-again"})
    text = record.read_text()
    assert text.index("widget-overflow:") < text.index("widget-overflow-again:")
    update_record(record, [], {"widget-overflow"})
    assert list(yaml.safe_load(record.read_text())["verified"]) == ["widget-overflow"]


def test_a_reproduction_cannot_see_the_callers_environment(tmp_path: Path, options: Options, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAILPEDIA_SECRET_TOKEN", "hunter2-not-for-strangers")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    script = (
        "import os, json\n"
        "print(json.dumps(dict(os.environ), sort_keys=True))\n"
        "print('cwd', os.getcwd())\n"
        "if 'FAILPEDIA_SECRET_TOKEN' not in os.environ and 'HF_TOKEN' not in os.environ:\n"
        "    from failpedia_fixture import overflow; overflow(1)\n"
    )
    entries = project(tmp_path, **{"widget-overflow": reproducing(script)})
    [outcome] = verify(entries, options)
    assert outcome.status == "reproduced", outcome.output_tail
    assert "hunter2" not in outcome.output_tail and "hf_secret" not in outcome.output_tail
    assert "FAILPEDIA_SECRET_TOKEN" not in outcome.output_tail
    env_line = next(line for line in outcome.output_tail.splitlines() if line.startswith("{"))
    env = yaml.safe_load(env_line)
    assert env["HF_HUB_OFFLINE"] == "1" and env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["HOME"] != os.environ["HOME"] and os.path.basename(env["HOME"]).startswith("failpedia-verify-")
    assert not Path(env["HOME"]).exists()  # the scratch folder is gone afterwards
    cwd = next(line for line in outcome.output_tail.splitlines() if line.startswith("cwd "))
    assert cwd == f"cwd {env['HOME']}"


def test_the_time_limit_kills_the_whole_process_group(tmp_path: Path, options: Options) -> None:
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        "print('child', child.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    entries = project(tmp_path, **{"widget-overflow": reproducing(script, timeout=2)})
    started = time.monotonic()
    [outcome] = verify(entries, options)
    assert time.monotonic() - started < 30
    assert outcome.status == "not-reproduced" and "timed out after 2 s" in outcome.reason
    pid = int(next(line for line in outcome.output_tail.splitlines() if line.startswith("child ")).split()[1])
    for _ in range(50):  # the child was killed with its parent; once reaped, it is gone
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            break
        if state in ("Z", "X"):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the reproduction's child {pid} outlived the time limit")
    faster = verify(entries, replace(options, timeout_scale=0.5))
    assert "timed out after 1 s" in faster[0].reason  # --timeout-scale multiplies reproduce.timeout


def test_the_memory_limit_holds(tmp_path: Path, options: Options) -> None:
    # 3 GiB of zeroes are only address space: without the limit the kernel would hand it out
    script = "data = bytearray(3 * 1024 ** 3)\nprint('allocated', len(data))\n"
    entry = reproducing(script)
    entry["fingerprints"] = [{"pattern": r"^MemoryError\b", "strength": "strong", "examples": ["MemoryError"]}]
    entries = project(tmp_path, **{"widget-overflow": entry})
    [outcome] = verify(entries, replace(options, memory_mb=512))
    assert outcome.status == "reproduced", outcome.output_tail
    assert "allocated" not in outcome.output_tail


def test_a_failed_reproduction_says_which_fingerprint_and_shows_the_output(tmp_path: Path, options: Options, run_cli) -> None:
    entries = project(tmp_path, **{"widget-overflow": reproducing("print('all is well')\nraise SystemExit(3)\n")})
    code, out, _err = run_cli("verify", "--entries", str(entries), "--venv-dir", str(options.venv_dir), "--no-index",
                              "--find-links", options.find_links[0])
    assert code == 1
    assert "NOT REPRODUCED" in out and "fingerprint 0 did not match the output (exit code 3)" in out
    assert "    | all is well" in out
    item = yaml.safe_load((entries / "verified.yaml").read_text())["verified"]["widget-overflow"]
    assert item["result"] == "not-reproduced" and item["matched"] == [] and "exit code 3" in item["reason"]


def test_a_relative_venv_dir_is_taken_from_where_the_command_runs(tmp_path: Path, options: Options, run_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reproduction runs in a scratch folder: the environment's Python is found by an absolute
    path, not one relative to the folder the command was started in (the default is relative)."""
    entries = project(tmp_path, **{"widget-overflow": reproducing(OVERFLOW)})
    monkeypatch.chdir(tmp_path)
    code, out, _err = run_cli("verify", "--entries", str(entries), "--venv-dir", "rel/venvs", "--no-index", "--find-links", options.find_links[0])
    assert code == 0, out
    assert "reproduced" in out and (tmp_path / "rel" / "venvs").is_dir()


def test_a_package_that_does_not_install_is_a_clear_error(tmp_path: Path, options: Options, run_cli) -> None:
    entries = project(tmp_path, **{"widget-overflow": reproducing(OVERFLOW, packages=["failpedia-fixture>=9"])})
    code, out, err = run_cli("verify", "--entries", str(entries), "--venv-dir", str(options.venv_dir), "--no-index",
                             "--find-links", options.find_links[0], "--no-record")
    assert code == 1 and "Traceback" not in out + err
    line = next(line for line in out.splitlines() if line.startswith("ERROR"))
    assert "memory/widget-overflow.yaml" in line and "failpedia-fixture>=9" in line and "No matching distribution" in line
    assert not (entries / "verified.yaml").exists()


def test_gpu_reproductions_are_skipped_without_gpus(tmp_path: Path, options: Options, run_cli) -> None:
    entries = project(tmp_path, **{"widget-overflow": reproducing(OVERFLOW, platform="cuda")})
    [outcome] = verify(entries, replace(options, gpus=0))
    assert outcome.status == "skipped" and outcome.reason == "needs 1 CUDA GPU; this machine has 0"
    code, out, _ = run_cli("verify", "--entries", str(entries), "widget-overflow", "gpu-oom", "--no-record", "--json")
    doc = json.loads(out)
    assert code == 0 and [o["status"] for o in doc["outcomes"]] == ["skipped", "skipped"]  # skipped is not a failure
    assert doc["outcomes"][1]["reason"] == "has no reproduce section" and doc["outcomes"][0]["slug"] == "widget-overflow"
    code, _, err = run_cli("verify", "--entries", str(entries), "widget-overflo")
    assert code == 2 and "did you mean 'widget-overflow'" in err


def test_requirements_are_normalised_for_the_environment_key() -> None:
    assert normalize_requirement("Torch >= 2.6, <3") == normalize_requirement("torch<3,>=2.6") == "torch<3,>=2.6"
    assert normalize_requirement("Accelerate_Lib[Deepspeed, Test]>=1") == "accelerate-lib[deepspeed,test]>=1"


def test_check_and_build_never_run_a_reproduction(tmp_path: Path, run_cli) -> None:
    marker = tmp_path / "ran"
    entries = project(tmp_path, **{"widget-overflow": reproducing(f"open({str(marker)!r}, 'w').write('ran')\n")})
    assert run_cli("check", "--entries", str(entries))[0] == 0
    assert run_cli("build", "--entries", str(entries), "--out", str(tmp_path / "site"), "--no-search", "--no-cache")[0] == 0
    assert run_cli("diagnose", "--entries", str(entries), str(entries / "tags.yaml"))[0] in (0, 1)
    assert not marker.exists()


def _page(entries: Path, tmp_path: Path, slug: str = "widget-overflow") -> str:
    site = tmp_path / "site"
    build(entries, site, Config(base_url="https://example.org/"), search=False, cache_dir=None, jobs=1)
    return (site / slug / "index.html").read_text()


def test_the_entry_page_shows_the_record_of_its_current_reproduction(tmp_path: Path, options: Options, run_cli) -> None:
    entries = project(tmp_path, **{"widget-overflow": reproducing(OVERFLOW)})
    assert "reproduced" not in _page(entries, tmp_path)  # never run: nothing said
    outcomes = verify(entries, options)
    update_record(entries / "verified.yaml", outcomes, set(load_catalog(entries).records))
    page = _page(entries, tmp_path)
    python = outcomes[0].python
    assert (f"Error text reproduced with failpedia-fixture 1.2.3 on CPU (Python {python}), "
            '<time datetime="2026-12-01">2026-12-01</time>') in page
    # a failed run says so, with the reason
    data = yaml.safe_load((entries / "verified.yaml").read_text())
    data["verified"]["widget-overflow"].update(result="not-reproduced", reason="fingerprint 0 did not match the output (exit code 0)")
    (entries / "verified.yaml").write_text(yaml.safe_dump(data))
    page = _page(entries, tmp_path)
    assert "Failed to reproduce with failpedia-fixture 1.2.3 on CPU" in page and "fingerprint 0 did not match" in page
    # the script changed since: the record says nothing about it, and check says why
    entry = yaml.safe_load((entries / "memory/widget-overflow.yaml").read_text())
    entry["reproduce"]["script"] += "# changed\n"
    (entries / "memory/widget-overflow.yaml").write_text(yaml.safe_dump(entry))
    assert "reproduce" not in _page(entries, tmp_path).split("<main", 1)[1].split("Quick answer")[0]
    code, out, _ = run_cli("check", "--strict", "--entries", str(entries))  # a stale record is a suggestion: --strict lists it
    assert code == 1 and "verified.yaml" in out and "earlier version of its reproduce section" in out


def test_a_broken_record_is_an_error_at_its_line(tmp_path: Path, run_cli) -> None:
    entries = project(tmp_path, **{"widget-overflow": reproducing(OVERFLOW)})
    (entries / "verified.yaml").write_text("verified:\n  widget-overflow:\n    result: maybe\n")
    code, out, _ = run_cli("check", "--entries", str(entries))
    assert code == 1 and "verified.yaml:3:13: error: verified.widget-overflow: result:" in out


SNIPPET = """\
import failpedia_fixture
from failpedia_fixture import WidgetConfig, overflow
import not_installed_anywhere
WidgetConfig(size=2, mode="slow")
config = WidgetConfig(size=4, colour="red")
WidgetConfig(mode="sideways")
failpedia_fixture.missing_function(1)
overflow(size)
not_installed_anywhere.Thing(1)
WidgetConfig(mode="gpu")
"""


def test_fix_snippets_are_checked_against_the_installed_release(tmp_path: Path, options: Options) -> None:
    entry = reproducing(OVERFLOW)
    entry["fix"]["code"] = [{"stack": "pytorch", "language": "python", "code": SNIPPET}]
    entries = project(tmp_path, **{"widget-overflow": entry})

    class Blocks(yaml.SafeDumper):  # code as a block scalar (`code: |`), as entries write it
        pass

    Blocks.add_representer(str, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v, style="|" if "\n" in v else None))
    (entries / "memory/widget-overflow.yaml").write_text(yaml.dump(entry, Dumper=Blocks, sort_keys=False))
    report = check_snippets(load_catalog(entries), ["widget-overflow"], [PACKAGE], options)
    assert report.snippets == 1 and report.constructed == 1  # fix.verify is bash; one object built
    text = (entries / "memory/widget-overflow.yaml").read_text().split("\n")
    first = next(i for i, line in enumerate(text, 1) if "import failpedia_fixture" in line)
    found = {(p.line - first + 1, p.message.split(": ", 1)[1]) for p in report.problems}
    assert all(p.path.endswith("memory/widget-overflow.yaml") for p in report.problems)
    assert {line for line, _ in found} == {5, 6, 7}
    messages = " | ".join(m for _, m in sorted(found))
    assert "WidgetConfig(...): got an unexpected keyword argument 'colour' (failpedia-fixture 1.2.3)" in messages
    assert "WidgetConfig(...) raised ValueError: mode must be 'fast' or 'slow', not 'sideways'" in messages
    assert "failpedia_fixture has no attribute 'missing_function'" in messages
    assert any("not_installed_anywhere is not installed" in n for n in report.notes)
    assert any("WidgetConfig(...) needs hardware this machine lacks: RuntimeError: mode 'gpu' needs a CUDA device" in n for n in report.notes)
    line = text[first - 1]
    assert next(p for p in report.problems if p.line == first + 4).col == len(line) - len(line.lstrip()) + 1 + len("config = ")


def test_a_records_key_names_what_was_run_not_the_schemas_defaults() -> None:
    """A verify record names an entry's reproduce section and the fingerprints it must match; a
    field the schema gains with a default (as `metric`, `of`, `falls_to`, `nonfinite` were) must not
    make every record stale, while a real change to what is matched does."""
    from generator.core.schema import Entry, Fingerprint
    from generator.core.validate import reproduce_key

    class Grown(Fingerprint):  # the schema a release later, with one more field
        hypothetical: int | None = None

    real = load_catalog(Path(__file__).resolve().parent.parent / "entries")
    e = next(r.entry for r in real.records.values() if r.entry.reproduce is not None and r.entry.reproduce.matches)
    grown = e.model_copy(update={"fingerprints": tuple(Grown(**fp.model_dump()) for fp in e.fingerprints)})
    assert reproduce_key(grown) == reproduce_key(e)
    i = e.reproduce.matches[0]
    data = e.model_dump(mode="json")
    changed = dict(data, fingerprints=[dict(fp, strength="supporting" if fp["strength"] != "supporting" else "strong") if k == i else fp
                                       for k, fp in enumerate(data["fingerprints"])])
    assert reproduce_key(Entry.model_validate(changed)) != reproduce_key(e)


def test_every_record_in_the_real_verified_yaml_names_its_entrys_current_reproduction() -> None:
    """A record whose key no longer matches is shown as stale on the entry page; none is."""
    root = Path(__file__).resolve().parent.parent / "entries"
    catalog = load_catalog(root)
    records = yaml.safe_load((root / "verified.yaml").read_text())["verified"]
    stale = [slug for slug, v in records.items() if v["reproduce"] != catalog.records[slug].head.reproduce_key]
    assert stale == []
