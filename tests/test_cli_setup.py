"""The command where a newcomer meets it: from any folder, with exit codes a script can tell
apart, a version, and a closing hint that names a command the caller's shell can run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "logs"


def _failpedia(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "generator", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_diagnose_and_search_work_in_a_job_folder_and_under_the_repository(tmp_path: Path) -> None:
    """Outside any repository the installation's own encyclopedia answers; inside one (even from
    a subfolder such as generator/) that repository's entries do."""
    (tmp_path / "slurm-1234.out").write_bytes((LOGS / "cuda_oom_single_gpu_mistral_cls.log").read_bytes())
    done = _failpedia(tmp_path, "diagnose", "slurm-1234.out")
    assert done.returncode == 0 and done.stdout.startswith("1. CUDA out of memory"), done.stderr
    found = _failpedia(ROOT / "generator", "search", "--json", "#oom")
    assert found.returncode == 0 and '"cuda-out-of-memory"' in found.stdout, found.stderr


def test_exit_codes_tell_match_no_match_and_setup_errors_apart(run_cli, sample: Path, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.\n")
    assert run_cli("diagnose", "--entries", str(sample), str(log))[0] == 0
    log.write_text("epoch 3 loss 0.25\n")
    assert run_cli("diagnose", "--entries", str(sample), str(log))[0] == 1
    assert run_cli("diagnose", "--entries", str(sample), str(tmp_path / "missing.log"))[0] == 2
    code, _, err = run_cli("diagnose", "--entries", str(tmp_path / "nope"), str(log))
    assert code == 3 and "entries folder not found" in err
    (sample / "memory" / "gpu-oom.yaml").write_text("title: [broken\n")
    code, _, err = run_cli("diagnose", "--entries", str(sample), str(log))
    assert code == 3 and "cannot diagnose: the entries in" in err and "run 'failpedia check'" in err
    code, out, _ = run_cli("--help")
    assert code == 0 and "3 cannot work here" in out


def test_version(run_cli) -> None:
    code, out, _ = run_cli("--version")
    assert code == 0 and out.startswith("failpedia ")


def test_the_version_is_looked_up_only_when_asked() -> None:
    """Every command parses its arguments: the installed version (importlib.metadata) is found
    only for --version."""
    script = ("import sys\nfrom generator.surfaces.cli import _parser\n_parser().parse_args(['build', '--server'])\n"
              "print('importlib.metadata' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr


def test_build_hint_names_a_command_this_shell_can_run(sample: Path, tmp_path: Path) -> None:
    """After `make site` the venv is not on PATH: the hint must not say a bare `failpedia`."""
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p).resolve() != Path(sys.executable).parent.resolve())
    (tmp_path / "Makefile").write_text("serve:\n")
    done = subprocess.run([sys.executable, "-m", "generator", "build", "--entries", str(sample), "--no-search", "--no-cache"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), "PATH": path})
    assert done.returncode == 0, done.stderr
    hint = done.stdout.strip().split("to read it, run ")[1]
    assert hint.startswith("'make serve' (or '") and "open site/index.html" not in done.stdout
    command = hint.split("(or '")[1].split(" serve'")[0]
    assert "/" in command and os.access(command, os.X_OK)  # a path that runs, not a name PATH does not find


def test_site_is_created_world_readable(sample: Path, tmp_path: Path) -> None:
    """Under umask 022 the output is 0755 folders and 0644 files, as a web server running as
    another user needs (mkdtemp alone makes the swapped-in folder 0700)."""
    import stat

    from generator.site.build import build
    from generator.core.config import Config

    old = os.umask(0o022)
    try:
        out = tmp_path / "site"
        build(sample, out, Config(), search=False)
    finally:
        os.umask(old)
    modes = {stat.S_IMODE(p.stat().st_mode) for p in [out, *out.rglob("*")] if p.is_dir()}
    files = {stat.S_IMODE(p.stat().st_mode) for p in out.rglob("*") if p.is_file()}
    assert modes == {0o755} and files == {0o644}, (modes, files)


def test_serve_never_writes_the_deployed_site_folder(run_cli, tmp_path: Path) -> None:
    from generator.surfaces.cli import SERVE_OUT, _parser

    args = _parser().parse_args(["serve"])
    assert Path(args.out) == SERVE_OUT and SERVE_OUT.parts[0] == ".cache"
    code, _, err = run_cli("serve", "--out", "site", "--port", "0", "--project", str(tmp_path), "--entries", str(tmp_path))
    assert code == 2 and "serve's pages carry localhost URLs" in err


def test_progress_only_on_a_terminal_and_only_for_long_work() -> None:
    import io

    from generator.surfaces.progress import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, pipe = Terminal(), io.StringIO()
    for stream in (tty, pipe):
        p = Progress(stream, delay=0)
        p("rendering 10 of 20 files")
        p.done()
    assert tty.getvalue() == "\r\x1b[Krendering 10 of 20 files\r\x1b[K" and pipe.getvalue() == ""
    quick = Terminal()
    p = Progress(quick)  # the default delay: a quick job shows nothing
    p("checking 3 entries")
    p.done()
    assert quick.getvalue() == ""


WORKER_SCRIPT = """
import signal
from generator.core.parallel import run_parallel

def handler(_item):
    return repr(signal.getsignal(signal.SIGTERM))

signal.signal(signal.SIGTERM, lambda *_: None)  # like serve's: it only sets a flag
print(sorted(set(run_parallel(handler, list(range(64)), jobs=2, min_items=2))))
"""


def test_build_workers_do_not_inherit_serves_sigterm_handler() -> None:
    """A worker left behind by an interrupted start-up must stop on a plain kill (the pool itself
    stops its workers with SIGTERM: with the inherited handler it would hang)."""
    import signal

    from generator.core.parallel import worker_count

    if worker_count() < 2:
        pytest.skip("one core: run_parallel runs in this process")
    done = subprocess.run([sys.executable, "-c", WORKER_SCRIPT], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and done.stdout.strip() == repr([repr(signal.SIG_DFL)]), done
