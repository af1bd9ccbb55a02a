"""The command as a user gets it: a wheel built by the build backend, installed into a fresh
virtual environment outside the repository, run from another folder with no repository in sight.

The wheel is built the way `pip wheel .` builds it (isolated, from [build-system] requires; pip's
cache and the configured index serve the build dependencies), and installed with this
environment's pip into a venv that has none of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "logs"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the installed `failpedia` script, an empty job folder outside the repository)."""
    base = tmp_path_factory.mktemp("wheel")
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"), str(ROOT)],
                   check=True, capture_output=True, text=True)
    wheel = next((base / "dist").glob("failpedia-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "venv")], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(base / "venv" / "bin" / "python"), "install", "-q", "--no-compile", str(wheel)],
                   check=True, capture_output=True, text=True)
    print(f"wheel built and installed in {time.monotonic() - started:.1f} s", file=sys.stderr)
    job = base / "job"
    job.mkdir()
    return base / "venv" / "bin" / "failpedia", job


def _run(script: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(cwd)  # no user configuration leaks in
    return subprocess.run([str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_wheel_carries_the_encyclopedia(installed: tuple[Path, Path]) -> None:
    script, _job = installed
    wheel = next(script.parent.parent.parent.glob("dist/failpedia-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n for n in names if n.startswith("generator/bundle/entries/") and n.endswith(".yaml")}
    assert len(shipped) == len(list((ROOT / "entries").rglob("*.yaml")))
    assert "generator/bundle/fingerprints.json" in names and "generator/bundle/templates/base.html" in names
    # the compiled metric reader is built into the wheel, and the installed tool loads it
    assert any(n.startswith("generator/core/_scan.") and n.endswith(".so") for n in names), names
    python = script.parent / "python"
    fast = subprocess.run([str(python), "-c", "import generator.core.metrics as m; print(m.FAST)"], capture_output=True, text=True, cwd=_job)
    assert fast.stdout.strip() == "True", fast.stderr


def test_installed_diagnose_works_in_another_folder(installed: tuple[Path, Path]) -> None:
    script, job = installed
    (job / "slurm-1234.out").write_bytes((LOGS / "cuda_oom_single_gpu_mistral_cls.log").read_bytes())
    done = _run(script, job, "diagnose", "slurm-1234.out")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1. CUDA out of memory") and "slurm-1234.out:54" in done.stdout
    # nothing matched: 1; no such entries folder: 3 (a setup error, not "no match")
    (job / "clean.log").write_text("epoch 1 loss 0.5\n")
    assert _run(script, job, "diagnose", "clean.log").returncode == 1
    bad = _run(script, job, "diagnose", "--entries", "nowhere", "clean.log")
    assert bad.returncode == 3 and "nowhere: entries folder not found" in bad.stderr


def test_installed_search_and_version(installed: tuple[Path, Path]) -> None:
    script, job = installed
    done = _run(script, job, "search", "--json", "CUDA out of memory")
    assert done.returncode == 0, done.stderr
    assert '"slug": "cuda-out-of-memory"' in done.stdout
    version = _run(script, job, "--version")
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert version.returncode == 0 and version.stdout.strip() == f"failpedia {expected}"
