"""Verify: run entries' reproductions (and check their fix snippets) in a sandbox; say what was seen.

A reproduction (an entry's `reproduce` section) is code from a contributor's pull request. Only
this module runs it, and only when `failpedia verify` is asked to; check, build, serve and the
tests never do. Each run:

1. gets the packages it names in a virtual environment made for that package set and kept
   under `.cache/verify/venvs/<digest>` (digest of the normalised, sorted requirements and the
   interpreter): the next entry or run with the same set reuses it. Packages install as wheels
   only, so installing runs no package's build code, unless `allow_source_builds`;
2. runs in a subprocess with `python -I`, in a scratch folder deleted afterwards, in its own
   process group (killed whole at the time limit), under an address-space limit
   (RLIMIT_AS), a file-size limit and no core dumps, with a minimal environment: PATH, HOME
   and TMPDIR in the scratch folder, LANG, the offline switches of the Hugging Face libraries,
   and nothing of the caller's (no token or credential reaches it). The network is not cut
   off: that needs privileges this tool does not assume (see CONTRIBUTING.md);
3. has its output (stdout and stderr together) matched with diagnose's own Matcher, fingerprint
   by fingerprint, so the rules are exactly those of `failpedia diagnose`. It reproduced the
   failure when every fingerprint that `reproduce.matches` names matched.

The record (`entries/verified.yaml`, see `update_record`) keeps, per entry, the outcome, the day,
the platform, the Python version and the installed version of each package named; the build
shows it on the entry page.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import re
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ..diagnosis.matcher import Matcher, fingerprint_item, matcher_spec
from ..core.load import load_yaml, LoadError
from ..core.problems import FailpediaError, Problem, UsageError

__all__ = [
    "DEFAULT_VENVS", "DEFAULT_MEMORY_MB", "InstallError", "Options", "Outcome", "Run", "SnippetReport", "Venv",
    "check_snippets", "ensure_venv", "gpu_count", "matched_fingerprints", "normalize_requirement", "run_sandboxed",
    "sandbox_env", "snippet_packages", "update_record", "verify_entries",
]

DEFAULT_VENVS = Path(".cache") / "verify" / "venvs"
DEFAULT_MEMORY_MB = 8192  # address space, not resident memory: importing torch maps about 2 GiB
OUTPUT_LIMIT = 16 * 1024 * 1024  # bytes of output kept; a run printing more is stopped
FILE_LIMIT = 1024 * 1024 * 1024  # the largest file a run may write
INSTALL_TIMEOUT = 1800
TAIL_LINES = 40
MARKER = "failpedia-venv.json"  # written last: a folder without it is an unfinished environment
GPU_PLATFORMS = {"cuda": 1, "multi-gpu": 2}  # GPUs each platform needs
# Variables an installation may need to reach the package index (read by pip, a trusted program:
# with wheels only, nothing from the pull request runs while installing).
_INSTALL_PASS = re.compile(r"^(PIP_.*|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY|SSL_CERT_(FILE|DIR)|REQUESTS_CA_BUNDLE|XDG_(CONFIG|CACHE)_HOME|HOME)$")


class InstallError(FailpediaError):
    """A package set did not install: names the packages and pip's own reason."""


@dataclass(frozen=True)
class Options:
    venv_dir: Path = DEFAULT_VENVS  # one environment per package set in here
    python: str = sys.executable  # the interpreter the environments are made from
    timeout_scale: float = 1.0  # multiplies each entry's reproduce.timeout
    memory_mb: int = DEFAULT_MEMORY_MB
    find_links: tuple[str, ...] = ()  # pip --find-links (folders or URLs of wheels)
    extra_index_urls: tuple[str, ...] = ()  # pip --extra-index-url (e.g. PyTorch's CPU wheels)
    no_index: bool = False  # pip --no-index: only find_links
    allow_source_builds: bool = False  # let pip build sdists (runs their build code)
    gpus: int | None = None  # None: count the GPUs this machine has


@dataclass(frozen=True)
class Venv:
    path: Path
    python: Path
    version: str  # Python version, e.g. 3.11.7
    installed: dict[str, str]  # normalised distribution name → version
    reused: bool = False


@dataclass(frozen=True)
class Run:
    output: bytes
    returncode: int | None  # None: killed at the time limit
    timed_out: bool
    output_capped: bool
    seconds: float


@dataclass(frozen=True)
class Outcome:
    """What verifying one entry gave. status: reproduced, not-reproduced (both recorded), skipped
    (the platform is not here, or no reproduce section) or error (its packages did not install)."""

    slug: str
    path: str
    status: str
    reason: str = ""
    platform: str = "cpu"
    expected: tuple[int, ...] = ()
    matched: tuple[int, ...] = ()
    packages: dict[str, str] = field(default_factory=dict)  # each named package → its installed version
    python: str = ""
    date: str = ""
    seconds: float = 0.0
    output_tail: str = ""
    key: str = ""  # validate.reproduce_key of the entry
    venv_reused: bool = False

    @property
    def recorded(self) -> bool:
        return self.status in ("reproduced", "not-reproduced")

    def record(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "result": self.status, "date": self.date, "platform": self.platform, "python": self.python,
            "packages": dict(sorted(self.packages.items())), "expected": list(self.expected), "matched": list(self.matched),
            "reproduce": self.key,
        }
        if self.reason and self.status == "not-reproduced":
            item["reason"] = self.reason[:300]
        return item

    def as_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug, "path": self.path, "status": self.status, "reason": self.reason, "platform": self.platform,
            "expected": list(self.expected), "matched": list(self.matched), "packages": self.packages, "python": self.python,
            "date": self.date, "seconds": round(self.seconds, 2), "venv_reused": self.venv_reused,
            "output_tail": self.output_tail if self.status != "reproduced" else "",
        }


# --- Requirements and environments ------------------------------------------------------------

_REQ_RE = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*?)\s*")


def _name(name: str) -> str:
    """A distribution name as PEP 503 normalises it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def normalize_requirement(spec: str) -> str:
    """'Torch >= 2.6, <3' and 'torch<3,>=2.6' are one requirement: 'torch<3,>=2.6'."""
    m = _REQ_RE.fullmatch(spec)
    if m is None:
        raise UsageError(f"{spec!r} is not a pip requirement")
    extras = ""
    if m[2]:
        extras = "[" + ",".join(sorted({_name(x.strip()) for x in m[2][1:-1].split(",") if x.strip()})) + "]"
    specifiers = ",".join(sorted(p.replace(" ", "") for p in m[3].split(",") if p.strip()))
    return _name(m[1]) + extras + specifiers


def requirement_name(spec: str) -> str:
    m = _REQ_RE.fullmatch(spec)
    return _name(m[1]) if m else spec


def _interpreter(python: str) -> tuple[str, str]:
    """The Python version and the real path of the interpreter environments are made from."""
    exe = shutil.which(python) or python
    try:
        out = subprocess.run(
            [exe, "-I", "-c", "import platform, sys; print(platform.python_version()); print(sys.executable)"],
            capture_output=True, text=True, timeout=60, check=True, env=_base_env(),
        ).stdout.split("\n")
    except (OSError, subprocess.SubprocessError) as e:
        raise FailpediaError(f"cannot run the Python interpreter {python!r}: {e}") from None
    return out[0].strip(), os.path.realpath(out[1].strip())


def _base_env() -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def _install_env(venv: Path) -> dict[str, str]:
    env = _base_env()
    env.update({k: v for k, v in os.environ.items() if _INSTALL_PASS.match(k)})
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One process at a time makes a given environment (two verify runs may share a cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_venv(requirements: Sequence[str], options: Options, who: str = "") -> Venv:
    """The virtual environment for this package set: reused when made before, else made now.
    Raises InstallError (naming `who`, the entry, and the packages) when pip cannot install them."""
    version, interpreter = _interpreter(options.python)
    normalised = sorted({normalize_requirement(r) for r in requirements})
    key = hashlib.sha256(json.dumps({"python": version, "interpreter": interpreter, "requirements": normalised}).encode()).hexdigest()
    folder = options.venv_dir / key[:20]
    marker = folder / MARKER
    with _locked(options.venv_dir / f"{key[:20]}.lock"):
        try:
            known = json.loads(marker.read_text(encoding="utf-8"))
            if known.get("key") == key and (folder / "bin" / "python").exists():
                return Venv(folder, folder / "bin" / "python", version, known["installed"], reused=True)
        except (OSError, ValueError, KeyError, TypeError):
            pass
        if folder.exists():
            shutil.rmtree(folder)
        outer_pip = importlib.util.find_spec("pip") is not None and os.path.realpath(sys.executable) == interpreter
        _call([interpreter, "-m", "venv", *(["--without-pip"] if outer_pip else []), str(folder)], folder, who, normalised,
              "making the virtual environment")
        python = folder / "bin" / "python"
        if normalised:
            pip = [sys.executable, "-m", "pip", "--python", str(python)] if outer_pip else [str(python), "-m", "pip"]
            cmd = [*pip, "install", "--no-input", "--quiet", "--disable-pip-version-check"]
            if not options.allow_source_builds:
                cmd.append("--only-binary=:all:")
            if options.no_index:
                cmd.append("--no-index")
            for link in options.find_links:
                cmd += ["--find-links", link]
            for url in options.extra_index_urls:
                cmd += ["--extra-index-url", url]
            _call([*cmd, *normalised], folder, who, normalised, "installing")
        installed = _installed(python)
        _share_files(folder, options.venv_dir)
        marker.write_text(json.dumps({"key": key, "python": version, "requirements": normalised, "installed": installed},
                                     indent=1, sort_keys=True), encoding="utf-8")
        return Venv(folder, python, version, installed)


def _record(path: Path) -> dict[str, str]:
    """A distribution's RECORD (CSV): each installed file (relative to site-packages) → its hash."""
    import csv

    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    return {row[0]: row[1] for row in rows if len(row) >= 2 and row[1].startswith("sha256=") and ".." not in Path(row[0]).parts}


def _share_files(folder: Path, venv_dir: Path) -> int:
    """Hard-link each file of the new environment that an earlier one holds byte for byte (the
    same distribution, path and RECORD hash, as pip checked them on install): torch's several
    GB are stored once, not once per package set. Returns how many files were linked."""
    mine = next(folder.glob("lib/python*/site-packages"), None)
    if mine is None:
        return 0
    others = [next(p.glob(f"lib/{mine.parent.name}/site-packages"), None) for p in sorted(venv_dir.iterdir())
              if p.is_dir() and p != folder and (p / MARKER).is_file()]
    linked = 0
    for record in sorted(mine.glob("*.dist-info/RECORD")):
        source = next((o for o in others if o is not None and (o / record.parent.name / "RECORD").is_file()), None)
        if source is None:
            continue
        theirs = _record(source / record.parent.name / "RECORD")
        for rel, hashed in _record(record).items():
            if theirs.get(rel) != hashed:
                continue
            target, original = mine / rel, source / rel
            try:
                a, b = target.lstat(), original.lstat()
                if not (os.path.isfile(target) and os.path.isfile(original)) or target.is_symlink() or original.is_symlink():
                    continue
                if a.st_ino == b.st_ino or a.st_size != b.st_size or a.st_dev != b.st_dev:
                    continue
                tmp = target.with_name(target.name + ".failpedia-link")
                os.link(original, tmp)
                os.replace(tmp, target)
                linked += 1
            except OSError:
                continue
    return linked


def _call(cmd: list[str], folder: Path, who: str, requirements: list[str], doing: str) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=_install_env(folder), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        shutil.rmtree(folder, ignore_errors=True)
        raise InstallError(f"{who}{': ' if who else ''}{doing} {', '.join(requirements)} took longer than {INSTALL_TIMEOUT} s") from None
    except OSError as e:
        raise InstallError(f"{who}{': ' if who else ''}{doing} failed: {e}") from None
    if done.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        text = done.stderr + done.stdout
        missing = re.findall(r"No matching distribution found for (\S+)", text)
        errors = [line.strip() for line in text.splitlines() if line.startswith("ERROR:")]
        why = errors[-1] if errors else (text.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        what = ", ".join(missing) if missing else ", ".join(requirements)
        raise InstallError(f"{who}{': ' if who else ''}{doing} {what} failed: {why}")


_INSTALLED = (
    "import importlib.metadata as m, json, re\n"
    "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name'] or '').lower(): d.version for d in m.distributions()}))\n"
)


def _installed(python: Path) -> dict[str, str]:
    """Each distribution in the environment → its version (importlib.metadata, in the environment)."""
    done = subprocess.run([str(python), "-I", "-c", _INSTALLED], capture_output=True, text=True, timeout=120, env=_base_env())
    try:
        data = json.loads(done.stdout)
    except ValueError:
        raise InstallError(f"cannot list the packages in {python.parent.parent}: {done.stderr.strip()[-300:]}") from None
    return {str(k): str(v) for k, v in sorted(data.items()) if k}


# --- The sandbox ----------------------------------------------------------------------------


def sandbox_env(venv: Path, scratch: Path, platform: str) -> dict[str, str]:
    """Everything a reproduction's process sees of the environment: nothing of the caller's."""
    env = _base_env()
    env.update({
        "PATH": f"{venv / 'bin'}:{env['PATH']}",
        "VIRTUAL_ENV": str(venv),
        "HOME": str(scratch),
        "TMPDIR": str(scratch / "tmp"),
        "XDG_CACHE_HOME": str(scratch / ".cache"),
        "PYTHONHASHSEED": "0",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "DO_NOT_TRACK": "1",
        "WANDB_MODE": "disabled",
        "TOKENIZERS_PARALLELISM": "false",
        "MPLBACKEND": "Agg",
    })
    if platform == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""  # a CPU reproduction means CPU, also on a machine with GPUs
    return env


def _limits(memory_bytes: int) -> Callable[[], None]:
    def apply() -> None:  # in the child, before exec
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_sandboxed(
    venv: Path, python: Path, script: str, *, timeout: float, memory_mb: int, platform: str = "cpu",
    files: Mapping[str, bytes] | None = None, args: Sequence[str] = (),
) -> Run:
    """Run `script` with the environment's Python in a fresh scratch folder (deleted after), with
    the limits and the environment described in the module's docstring. `files` are written
    into the scratch folder first (name → bytes); `args` follow the script's path."""
    scratch = Path(tempfile.mkdtemp(prefix="failpedia-verify-"))
    try:
        (scratch / "tmp").mkdir()
        for name, data in (files or {}).items():
            (scratch / name).write_bytes(data)
        (scratch / "reproduce.py").write_text(script, encoding="utf-8")
        started = time.monotonic()
        proc = subprocess.Popen(
            [str(python), "-I", "-u", "reproduce.py", *args], cwd=scratch, env=sandbox_env(venv, scratch, platform),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_limits(memory_mb * 1024 * 1024),
        )
        assert proc.stdout is not None
        chunks: list[bytes] = []
        size = 0
        timed_out = capped = False
        deadline = started + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            exited_at: float | None = None
            while True:
                now = time.monotonic()
                if now >= deadline:
                    timed_out = proc.poll() is None
                    break
                if proc.poll() is not None:
                    # the script is done; a child it left behind may hold the pipe open
                    exited_at = exited_at or now
                    if now - exited_at > 0.5:
                        break
                if not sel.select(min(0.2, deadline - now)):
                    continue
                data = os.read(proc.stdout.fileno(), 65536)
                if not data:
                    break
                chunks.append(data)
                size += len(data)
                if size > OUTPUT_LIMIT:
                    capped = True
                    break
        _kill_group(proc.pid)  # the whole group: what the script started goes with it
        proc.stdout.close()
        returncode = proc.wait()
        seconds = time.monotonic() - started
        return Run(b"".join(chunks)[:OUTPUT_LIMIT], None if timed_out else returncode, timed_out, capped, seconds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def gpu_count() -> int:
    """NVIDIA GPUs this machine has, by their device files (no driver library loaded)."""
    try:
        return sum(1 for name in os.listdir("/dev") if re.fullmatch(r"nvidia\d+", name))
    except OSError:
        return 0


_TORCH_GPUS = "import torch\nprint(torch.cuda.device_count())\n"


def _torch_gpus(venv: Venv, options: Options) -> int:
    run = run_sandboxed(venv.path, venv.python, _TORCH_GPUS, timeout=120, memory_mb=options.memory_mb, platform="cuda")
    try:
        return int(run.output.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 0


# --- Matching and the whole run -------------------------------------------------------------


def matched_fingerprints(slug: str, fingerprints: Sequence[Any], output: bytes) -> tuple[int, ...]:
    """Indexes of the fingerprints (validate.FingerprintHead) that fire on `output`, by the
    Matcher of `failpedia diagnose`: the same literals, segments, near windows and numbers."""
    spec = matcher_spec({
        "version": 1, "flags": "", "fingerprints": [fingerprint_item(slug, i, fp) for i, fp in enumerate(fingerprints)],
        "entries": {slug: {"title": slug, "url": "", "summary": "", "fix": "", "often_causes": []}},
    })
    m = Matcher(spec, "reproduce")
    m.feed(output)
    m.close()
    return tuple(i for i, st in enumerate(m.state) if st.count)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown"


def _tail(output: bytes, lines: int = TAIL_LINES) -> str:
    text = output[-65536:].decode("utf-8", "replace")
    return "\n".join(text.rstrip("\n").split("\n")[-lines:])


def _select(catalog: Any, slugs: Sequence[str]) -> list[Any]:
    from ..core.validate import suggest

    if not slugs:
        return [rec for rec in catalog.records.values() if rec.head.reproduce_key]
    out = []
    for slug in slugs:
        if slug not in catalog.records:
            raise UsageError(f"no entry '{slug}'{suggest(slug, set(catalog.records))}")
        out.append(catalog.records[slug])
    return out


def verify_entries(catalog: Any, slugs: Sequence[str], options: Options, today: str) -> Iterator[Outcome]:
    """Verify the named entries of the catalog (build.load_catalog; every entry with a reproduce
    section when none is named), one Outcome after another; `today` is the date recorded."""
    available = options.gpus if options.gpus is not None else gpu_count()
    for rec in _select(catalog, slugs):
        e = rec.entry
        if e.reproduce is None:
            yield Outcome(rec.slug, rec.path, "skipped", "has no reproduce section")
            continue
        r = e.reproduce
        platform = r.platform.value
        base = Outcome(rec.slug, rec.path, "pending", platform=platform, expected=tuple(r.matches), key=rec.head.reproduce_key, date=today)
        need = GPU_PLATFORMS.get(platform, 0)
        if need and available < need:
            yield replace(base, status="skipped", reason=f"needs {need} CUDA GPU{'s' * (need > 1)}; this machine has {available}")
            continue
        try:
            venv = ensure_venv(r.packages, options, who=rec.path)
        except InstallError as err:
            yield replace(base, status="error", reason=str(err))
            continue
        packages = {requirement_name(p): venv.installed.get(requirement_name(p), "?") for p in r.packages}
        base = replace(base, python=venv.version, packages=packages, venv_reused=venv.reused)
        if need and (seen := _torch_gpus(venv, options)) < need:
            yield replace(base, status="skipped", reason=f"needs {need} CUDA GPU{'s' * (need > 1)}; torch sees {seen}")
            continue
        limit = r.timeout * options.timeout_scale
        run = run_sandboxed(venv.path, venv.python, r.script, timeout=limit, memory_mb=options.memory_mb, platform=platform)
        matched = matched_fingerprints(rec.slug, rec.head.fingerprints, run.output)
        missing = [i for i in r.matches if i not in matched]
        if run.timed_out:
            how = f"timed out after {limit:g} s"
        elif run.output_capped:
            how = f"stopped: printed more than {OUTPUT_LIMIT // 2**20} MiB"
        elif run.returncode is not None and run.returncode < 0:
            how = f"killed by signal {-run.returncode} ({_signal_name(-run.returncode)})"
        else:
            how = f"exit code {run.returncode}"
        if missing:
            reason = f"fingerprint{'s' * (len(missing) > 1)} {', '.join(map(str, missing))} did not match the output ({how})"
            status = "not-reproduced"
        else:
            reason, status = how, "reproduced"
        yield replace(base, status=status, reason=reason, matched=matched, seconds=run.seconds, output_tail=_tail(run.output))


# --- The record -------------------------------------------------------------------------------

HEADER = (
    "# What `failpedia verify` ran and saw, one item per entry with a reproduce section; the entry\n"
    "# pages show it. Written by `failpedia verify --record`, not by hand.\n"
)


def update_record(path: Path, outcomes: Sequence[Outcome], slugs: set[str]) -> bool:
    """Write the outcomes that ran into the record at `path` (kept items of other entries stay;
    items of entries no longer in `slugs` go). Deterministic: sorted by slug, keys sorted.
    Returns whether the file changed."""
    items: dict[str, Any] = {}
    try:
        old = path.read_bytes()
    except FileNotFoundError:
        old = b""
    except OSError as e:
        raise FailpediaError(f"{path}: cannot read: {e.strerror}") from None
    if old:
        try:
            data = load_yaml(old).data
        except LoadError as e:
            raise FailpediaError(f"{path}:{e.line}:{e.col}: {e.message}") from None
        if isinstance(data, dict) and isinstance(data.get("verified"), dict):
            items = {str(k): v for k, v in data["verified"].items()}
    for o in outcomes:
        if o.recorded:
            items[o.slug] = o.record()
    items = {k: v for k, v in sorted(items.items()) if k in slugs}
    text = HEADER + yaml.safe_dump({"verified": items}, sort_keys=True, allow_unicode=True, default_flow_style=None, width=120)
    if text.encode("utf-8") == old:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return True


# --- Fix snippets ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SnippetReport:
    """The snippet check: problems placed at entry file:line:col, how many calls were checked
    and constructed, and notes (a module not installed, an object that needs a GPU)."""

    problems: list[Problem]
    snippets: int
    checked: int
    constructed: int
    notes: list[str]


def snippet_packages(project: Path) -> list[str]:
    """`[tool.failpedia.verify] snippet-packages` of pyproject.toml: the current releases the
    fix snippets must be right for."""
    import tomllib

    path = project / "pyproject.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise FailpediaError(f"{path}: {e}") from None
    value = data.get("tool", {}).get("failpedia", {}).get("verify", {}).get("snippet-packages", [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FailpediaError(f"{path}: [tool.failpedia.verify] snippet-packages must be a list of pip requirements")
    return value


def _snippets(rec: Any, raw: bytes) -> list[tuple[str, int, int, str]]:
    """(where in the entry, YAML line and column of the snippet's first line, code) of each
    Python snippet in fix.code and fix.verify."""
    from ..core.validate import parse_entry

    parsed, _ = parse_entry(raw, rec.path)
    if parsed is None:
        return []
    e = rec.entry
    lines = raw.decode("utf-8", "replace").split("\n")
    found: list[tuple[tuple[Any, ...], str, str]] = [
        (("fix", "code", i, "code"), f"fix.code[{i}]", c.code) for i, c in enumerate(e.fix.code) if c.language.value == "python"
    ]
    if e.fix.verify.language.value == "python":
        found.append((("fix", "verify", "code"), "fix.verify", e.fix.verify.code))
    out = []
    for loc, label, code in found:
        line, col = parsed.loaded.where(loc)
        text = lines[line - 1][col - 1:] if 0 < line <= len(lines) else ""
        block = text[:1] in ("|", ">")  # a block scalar: the code starts on the next line
        if block and line < len(lines):
            line, col = line + 1, len(lines[line]) - len(lines[line].lstrip()) + 1
        out.append((label, line, col, code))
    return out


def check_snippets(catalog: Any, slugs: Sequence[str], packages: Sequence[str], options: Options) -> SnippetReport:
    """Check every Python fix snippet (fix.code, fix.verify) in one environment of `packages`, in
    the sandbox: each import runs; each call of an imported name has its attribute path
    resolved and its arguments bound to the real signature; a class called with literal
    arguments only (a config object such as TrainingArguments(...)) is constructed. See
    snippetcheck.py. Nothing else of a snippet runs."""
    jobs: list[dict[str, Any]] = []
    where: dict[str, tuple[str, int, int, str]] = {}
    for rec in _select_all(catalog, slugs):
        try:
            raw = Path(rec.path).read_bytes()  # for the snippets' places in the file
        except OSError as e:
            raise FailpediaError(f"{rec.path}: cannot read: {e.strerror}") from None
        for label, line, col, code in _snippets(rec, raw):
            ident = f"{rec.slug}:{label}"
            jobs.append({"id": ident, "code": code})
            where[ident] = (rec.path, line, col, label)
    if not jobs:
        return SnippetReport([], 0, 0, 0, [])
    venv = ensure_venv(packages, options, who="snippet check")
    checker = (Path(__file__).resolve().parent / "snippetcheck.py").read_text(encoding="utf-8")
    run = run_sandboxed(
        venv.path, venv.python, checker, timeout=600 * options.timeout_scale, memory_mb=options.memory_mb,
        files={"snippets.json": json.dumps(jobs).encode("utf-8")}, args=("snippets.json",),
    )
    results: dict[str, Any] = {}
    for text in run.output.decode("utf-8", "replace").split("\n"):  # not splitlines(): it splits at the marker's \x1e
        if text.startswith("\x1efailpedia-snippet "):
            try:
                item = json.loads(text.split(" ", 1)[1])
                results[item["id"]] = item
            except (ValueError, KeyError, TypeError):
                continue
    problems: list[Problem] = []
    notes: list[str] = []
    checked = constructed = 0
    for job in jobs:
        path, line, col, label = where[job["id"]]
        item = results.get(job["id"])
        if item is None:
            how = f"timed out after {600 * options.timeout_scale:g} s" if run.timed_out else f"exit code {run.returncode}"
            problems.append(Problem(path, line, col, f"{label}: the snippet check stopped before reaching it ({how}):\n{_tail(run.output, 15)}"))
            continue
        checked += item.get("checked", 0)
        constructed += item.get("constructed", 0)
        if item.get("notes"):
            notes.append(f"{path}:{line}: {label}: {item['notes']}")
        for p in item.get("problems", []):
            at_line = line + max(0, int(p.get("line", 1)) - 1)
            at_col = col + int(p.get("col", 0))
            problems.append(Problem(path, at_line, at_col, f"{label}, line {p.get('line', 1)}: {p.get('message', '')}"))
    return SnippetReport(sorted(problems), len(jobs), checked, constructed, notes)


def _select_all(catalog: Any, slugs: Sequence[str]) -> list[Any]:
    if not slugs:
        return list(catalog.records.values())
    return _select(catalog, slugs)
