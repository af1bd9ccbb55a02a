"""The build server (`failpedia build --server`): builds that take over what the last one held in
memory (site.build.Warm) write what a cold build writes, after every kind of change; and the
server itself, as real processes over its socket: started by the first build, reused, reporting
errors as the CLI does, stopped on request or when idle, replaced when killed."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.core.config import Config
from generator.site.build import Warm, build
from sitecheck import tree_digest
from test_incremental import CHANGES, CONFIG, PAGED, edit_entry, project  # noqa: F401  (the sample project fixture)

DEFAULT = Config()  # the settings of a project with no [tool.failpedia], as the CLI builds it


def _warm_build(p: dict[str, Path], warm: Warm, config=CONFIG):
    result = build(p["entries"], p["site"], config, p["templates"], search=False, cache_dir=p["cache"], jobs=1, warm=warm)
    warm.settle()  # as the server does once it has answered
    return result


def _same_as_cold(p: dict[str, Path], config=CONFIG) -> bool:
    shutil.rmtree(p["cold"], ignore_errors=True)
    build(p["entries"], p["cold"], config, p["templates"], search=False, cache_dir=None, jobs=1)
    return tree_digest(p["site"]) == tree_digest(p["cold"])


@pytest.mark.parametrize("config", [CONFIG, PAGED], ids=["one page per list", "paginated lists"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_warm_build_equals_a_cold_build(project, change: str, config) -> None:
    warm = Warm()
    _warm_build(project, warm, config)
    held = warm.cache
    CHANGES[change](project)
    result = _warm_build(project, warm, config)
    assert not result.unchanged
    assert warm.cache is held  # taken over, not loaded again
    assert _same_as_cold(project, config)
    # and a third build, from what the second one saved in memory, after a second change
    edit_entry(project, "memory/gpu-oom.yaml", title="GPU OOM, once more")
    _warm_build(project, warm, config)
    assert warm.cache is held
    assert _same_as_cold(project, config)


def test_a_plan_made_while_idle_writes_nothing_and_is_taken_over_by_the_next_build(project) -> None:
    _warm_build(project, Warm())  # the site and its cache, made by another process
    warm = Warm()
    assert _warm_build(project, warm).unchanged and warm.reuse is None  # a server's first build: nothing to do
    before = {p: p.stat().st_mtime_ns for p in project["site"].rglob("*")}
    edit_entry(project, "memory/gpu-oom.yaml", title="GPU OOM, edited while the server was idle")
    primed = build(project["entries"], project["site"], CONFIG, project["templates"], search=False, cache_dir=project["cache"], jobs=1,
                   warm=warm, plan_only=True)
    assert primed.unchanged and warm.reuse is not None and warm.pending is None
    assert {p: p.stat().st_mtime_ns for p in project["site"].rglob("*")} == before  # nothing written, the edit included
    result = _warm_build(project, warm)
    assert result.rendered > 0 and warm.reuse.kept > 0  # the plan made while idle was taken over
    assert _same_as_cold(project)


def _git(where: Path, *args: str, day: str = "2026-01-02") -> None:
    """Run git in `where` as a test author, the commit dated `day` (noon UTC), no user config."""
    stamp = f"{day}T12:00:00Z"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    subprocess.run(["git", "-C", str(where), *args], check=True, capture_output=True, env=env)


def test_dates_are_read_from_git_again_when_head_moves_and_only_then(project, monkeypatch) -> None:
    """The last-updated dates come from commits: they are kept (incremental.dates_at, in the
    memo store: the build cache's, or the dev server's) and read again only when git's HEAD moves."""
    import generator.site.incremental as incremental
    from generator.site.resident import ResidentSite

    root = project["entries"].parent

    def commit(day: str, folder: str = "entries") -> None:
        _git(root, "add", folder, day=day)
        _git(root, "commit", "-q", "-m", day, day=day)

    _git(root, "init", "-q")
    commit("2026-01-02")
    reads: list[Path] = []
    real = incremental.git_dates
    monkeypatch.setattr(incremental, "git_dates", lambda entries: reads.append(entries) or real(entries))
    page = project["site"] / "gpu-oom" / "index.html"
    warm = Warm()
    resident = ResidentSite(project["entries"], root / "resident", CONFIG, project["templates"], jobs=1)
    _warm_build(project, warm)
    resident.patch()
    assert len(reads) == 2 and "Last updated <time datetime=\"2026-01-02\">" in page.read_text()
    edit_entry(project, "memory/gpu-oom.yaml", title="GPU OOM, not committed yet")
    _warm_build(project, warm)
    resident.patch()
    assert len(reads) == 2  # HEAD did not move
    assert _same_as_cold(project)  # (a cold build reads them too)
    commit("2026-03-04")
    reads.clear()
    _warm_build(project, warm)
    resident.patch()
    assert len(reads) == 2 and "Last updated <time datetime=\"2026-03-04\">" in page.read_text()
    edit_entry(project, "memory/gpu-oom.yaml", title="GPU OOM, edited again")
    _warm_build(project, Warm())  # a fresh process: the dates come from the build cache
    resident.patch()
    assert len(reads) == 2
    assert _same_as_cold(project)
    assert (root / "resident" / "gpu-oom" / "index.html").read_bytes() == page.read_bytes()
    # Another entries folder of the same checkout, built with the same cache: its own dates.
    shutil.copytree(project["entries"], root / "more")
    commit("2026-05-06", "more")
    reads.clear()
    _warm_build(project, Warm())
    build(root / "more", root / "more-site", CONFIG, project["templates"], search=False, cache_dir=project["cache"], jobs=1)
    assert len(reads) == 2 and "Last updated <time datetime=\"2026-05-06\">" in (root / "more-site" / "gpu-oom" / "index.html").read_text()


def test_a_fetch_that_deepens_a_shallow_clone_brings_the_older_dates(project, tmp_path) -> None:
    """A shallow clone dates every file by the oldest commit it has; a fetch that deepens it keeps
    HEAD, yet the dates move (gitdates.git_head names the shallow boundary too)."""
    origin = project["entries"].parent
    _git(origin, "init", "-q")
    _git(origin, "add", "entries")
    _git(origin, "commit", "-q", "-m", "first")
    (origin / "notes.txt").write_text("not an entry\n")
    _git(origin, "add", "notes.txt", day="2026-02-03")
    _git(origin, "commit", "-q", "-m", "second", day="2026-02-03")
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(clone))
    built = {**project, "entries": clone / "entries"}
    page = built["site"] / "gpu-oom" / "index.html"
    _warm_build(built, Warm())
    assert "Last updated <time datetime=\"2026-02-03\">" in page.read_text()  # the only commit the clone has
    _git(clone, "fetch", "-q", "--deepen", "1")
    _warm_build(built, Warm())
    assert "Last updated <time datetime=\"2026-01-02\">" in page.read_text()
    assert _same_as_cold(built)


def test_what_is_held_is_dropped_when_another_build_saved_to_the_cache(project) -> None:
    warm = Warm()
    _warm_build(project, warm)
    held = warm.cache
    edit_entry(project, "memory/gpu-oom.yaml", title="GPU OOM, built without the server")
    build(project["entries"], project["site"], CONFIG, project["templates"], search=False, cache_dir=project["cache"], jobs=1)
    edit_entry(project, "distributed/nccl-hang.yaml", title="NCCL hang, back with the server")
    _warm_build(project, warm)
    assert warm.cache is not held  # the cache folder moved on without it: read again
    assert _same_as_cold(project)


def test_a_failed_warm_build_drops_what_it_held_and_the_next_one_recovers(project) -> None:
    warm = Warm()
    _warm_build(project, warm)
    good = tree_digest(project["site"])
    path = project["entries"] / "memory/gpu-oom.yaml"
    text = path.read_text()
    path.write_text(text.replace("title:", "titel:", 1))
    with pytest.raises(Exception):
        _warm_build(project, warm)
    assert warm.cache is None and warm.reuse is None
    assert tree_digest(project["site"]) == good  # left as it was
    path.write_text(text.replace("title: ", "title: Fixed ", 1))
    _warm_build(project, warm)
    assert _same_as_cold(project)


# -- the server, as processes -------------------------------------------------------------------


@pytest.fixture
def cli(project) -> Iterator:
    """`failpedia build --server ...` in a subprocess, with its own cache home (the servers'
    sockets, under a short path); every server is stopped afterwards."""
    home = tempfile.mkdtemp(prefix="fpsrv")
    env = {**os.environ, "XDG_CACHE_HOME": home}

    def run(*args: str, timeout: float = 120, **variables: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "generator", "build", "--entries", str(project["entries"]), "--out", str(project["site"]),
             "--templates", str(project["templates"]), "--cache-dir", str(project["cache"]), "--no-search", *args],
            cwd=project["entries"].parent, env={**env, **variables}, capture_output=True, text=True, timeout=timeout,
        )

    run.home = Path(home)  # type: ignore[attr-defined]
    yield run
    run("--stop-server")
    for pid in _servers(Path(home)):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(home, ignore_errors=True)


def _servers(home: Path) -> list[int]:
    """The pids of the build servers started with this cache home."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if b"build-server" in cmdline and f"XDG_CACHE_HOME={home}".encode() in environ.split(b"\0"):
            found.append(int(proc.name))
    return found


def _wait_gone(home: Path, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _servers(home):
            return True
        time.sleep(0.05)
    return False


def test_the_server_builds_what_a_cold_build_writes_and_stays_up_between_builds(project, cli) -> None:
    first = cli("--server")
    assert first.returncode == 0, first.stderr
    assert "built " in first.stdout
    servers = _servers(cli.home)
    assert len(servers) == 1  # started by the first build, in the background
    (sock_path,) = (cli.home / "failpedia" / "servers").glob("*.sock")
    assert sock_path.stat().st_mode & 0o777 == 0o600 and sock_path.parent.stat().st_mode & 0o777 == 0o700
    for garbage in (b"not json\n", b"[1, 2]\n", b'{"build": {}}\n', b""):  # answered or dropped; the server stays
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(sock_path))
            conn.sendall(garbage)
            conn.shutdown(socket.SHUT_WR)
            conn.recv(65536)
    edit_entry(project, "distributed/nccl-hang.yaml", title="NCCL hang, edited")
    second = cli("--server")
    assert second.returncode == 0, second.stderr
    assert _servers(cli.home) == servers  # the same process answered
    assert _same_as_cold(project, DEFAULT)
    assert "nothing changed" in cli("--server").stdout
    stopped = cli("--stop-server")
    assert f"(pid {servers[0]}, 4 builds)" in stopped.stdout  # the empty request counts as one
    assert _wait_gone(cli.home)
    assert not list((cli.home / "failpedia" / "servers").glob("*.sock"))
    assert "no build server runs" in cli("--stop-server").stdout


def test_the_server_reports_entry_errors_as_the_cli_does_and_leaves_the_site(project, cli) -> None:
    assert cli("--server").returncode == 0
    good = tree_digest(project["site"])
    path = project["entries"] / "memory/gpu-oom.yaml"
    path.write_text(path.read_text().replace("title:", "titel:", 1))
    served = cli("--server")
    direct = cli()  # the same build, in-process
    assert served.returncode == direct.returncode == 1
    assert (served.stdout, served.stderr) == (direct.stdout, direct.stderr)  # every problem, with its file, line and column
    assert "gpu-oom.yaml:" in served.stdout + served.stderr and "left as it was" in served.stderr
    assert tree_digest(project["site"]) == good
    path.write_text(path.read_text().replace("titel:", "title:", 1))
    assert cli("--server").returncode == 0
    assert _same_as_cold(project, DEFAULT)


def test_an_idle_server_exits_and_a_killed_one_is_replaced(project, cli) -> None:
    assert cli("--server", "--server-idle", "1").returncode == 0
    assert _wait_gone(cli.home)  # no build came for a second
    assert cli("--server").returncode == 0
    (pid,) = _servers(cli.home)
    os.kill(pid, signal.SIGKILL)  # its socket stays behind
    assert _wait_gone(cli.home)
    edit_entry(project, "memory/gpu-oom.yaml", title="GPU OOM, after a crash")
    again = cli("--server")
    assert again.returncode == 0, again.stderr
    assert len(_servers(cli.home)) == 1
    assert _same_as_cold(project, DEFAULT)


def test_server_flags_that_cannot_work_are_usage_errors(cli) -> None:
    done = cli("--server", "--no-cache")
    assert done.returncode == 2 and "--no-cache" in done.stderr


def test_a_build_goes_through_the_server_by_default_where_it_is_chosen_and_never_under_ci(project, cli) -> None:
    """Without --server or --no-server, FAILPEDIA_BUILD_SERVER=1 sends builds to the server (a
    site of AUTO_SERVER_FROM entries does the same, below); CI, --no-server and a small site
    build in their own process. The server's count of builds says which builds it ran."""
    plain = cli(CI="", FAILPEDIA_BUILD_SERVER="")  # 3 entries
    assert plain.returncode == 0 and not _servers(cli.home) and "build server" not in plain.stderr
    chosen = cli(CI="", FAILPEDIA_BUILD_SERVER="1")
    assert chosen.returncode == 0, chosen.stderr
    servers = _servers(cli.home)
    assert len(servers) == 1 and "started a build server" in chosen.stderr and "--stop-server" in chosen.stderr
    edit_entry(project, "distributed/nccl-hang.yaml", title="NCCL hang, edited")
    again = cli(CI="", FAILPEDIA_BUILD_SERVER="1")
    assert again.returncode == 0 and "built " in again.stdout and "build server" not in again.stderr
    assert _servers(cli.home) == servers and _same_as_cold(project, DEFAULT)
    edit_entry(project, "distributed/nccl-hang.yaml", title="NCCL hang, edited again")
    for variables in ({"CI": "true", "FAILPEDIA_BUILD_SERVER": ""}, {"CI": "", "FAILPEDIA_BUILD_SERVER": "0"}):
        assert cli(**variables).returncode == 0
    assert cli("--no-server", CI="", FAILPEDIA_BUILD_SERVER="1").returncode == 0
    assert _same_as_cold(project, DEFAULT)
    assert f"(pid {servers[0]}, 2 builds)" in cli("--stop-server").stdout


def test_a_site_of_enough_entries_builds_through_the_server_by_default(tmp_path, monkeypatch) -> None:
    import argparse

    from generator.core.problems import UsageError
    from generator.surfaces.cli import _CI_VARIABLES, AUTO_SERVER_FROM, _through_server

    for n in range(AUTO_SERVER_FROM - 1):
        (tmp_path / f"c{n % 7}").mkdir(exist_ok=True)
        (tmp_path / f"c{n % 7}" / f"e{n}.yaml").touch()
    (tmp_path / "tags.yaml").touch()  # registries are not entries
    for variable in (*_CI_VARIABLES, "FAILPEDIA_BUILD_SERVER"):  # as on a developer's machine
        monkeypatch.delenv(variable, raising=False)
    args = argparse.Namespace(server=None, entries=str(tmp_path))
    assert not _through_server(args, tmp_path / "cache")
    (tmp_path / "c0" / "one-more.yaml").touch()
    assert _through_server(args, tmp_path / "cache")
    assert not _through_server(args, None)  # --no-cache
    assert not _through_server(argparse.Namespace(server=False, entries=str(tmp_path)), tmp_path / "cache")
    for variable, value in (("CI", "true"), ("JENKINS_URL", "https://ci.example.org/"), ("TF_BUILD", "True")):
        monkeypatch.setenv(variable, value)
        assert not _through_server(args, tmp_path / "cache"), variable
        monkeypatch.delenv(variable)
    monkeypatch.setenv("CI", "false")  # set, and saying no
    assert _through_server(args, tmp_path / "cache")
    monkeypatch.setenv("FAILPEDIA_BUILD_SERVER", "on")  # neither 1 nor 0: said, not guessed
    with pytest.raises(UsageError, match="FAILPEDIA_BUILD_SERVER='on': set it to 1"):
        _through_server(args, tmp_path / "cache")
    monkeypatch.delenv("FAILPEDIA_BUILD_SERVER")
    # The choice is made before the pipeline is imported: a build handed to the server needs none of it.
    script = (f"import argparse, sys\nfrom generator.surfaces.cli import _through_server\nfrom pathlib import Path\n"
              f"print(_through_server(argparse.Namespace(server=None, entries={str(tmp_path)!r}), Path('cache')), "
              "'generator.core.schema' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True,
                          timeout=60, env={**os.environ})
    assert done.stdout.split() == ["True", "False"], done.stdout + done.stderr


def test_a_build_handed_to_the_server_does_not_load_the_pipeline_in_the_client(project, cli) -> None:
    """The client of a running server reads no entry: the entry schema (pydantic models, the
    largest part of the imports) is not imported, by the automatic choice either; a build in
    the command's own process imports it."""
    assert cli("--server").returncode == 0
    args = ["build", "--entries", str(project["entries"]), "--out", str(project["site"]), "--templates", str(project["templates"]),
            "--cache-dir", str(project["cache"]), "--no-search"]
    script = (f"import sys\nfrom generator.surfaces.cli import main\ncode = main({args!r})\n"
              "print(code, 'generator.core.schema' in sys.modules, 'pydantic' in sys.modules)")
    env = {**os.environ, "XDG_CACHE_HOME": str(cli.home), "CI": "", "FAILPEDIA_BUILD_SERVER": ""}
    for variables in ({"FAILPEDIA_BUILD_SERVER": "1"}, {}):
        edit_entry(project, "memory/gpu-oom.yaml", title=f"GPU OOM {len(variables)}")  # a build, not a no-op
        done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parent.parent, env={**env, **variables},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        served = "1" in variables.values()
        assert done.stdout.split()[-3:] == (["0", "False", "False"] if served else ["0", "True", "True"]), (variables, done.stdout)


def test_a_server_waiting_after_a_no_op_readies_what_the_next_edit_reads(project, monkeypatch) -> None:
    """After a first build that found nothing to do, the server plans while it waits (plan_only),
    and makes in memory what the next build's own process would read from the cache: the memos
    of the site-wide files and of the search index, and the search files' keys. The build after
    an edit then reads no memo file, and writes what a cold build writes."""
    from generator.site.cache import MemoFiles

    def run(warm: Warm, **kw):
        result = build(project["entries"], project["site"], CONFIG, project["templates"], cache_dir=project["cache"], jobs=1, warm=warm,
                       **kw)
        warm.settle()
        return result

    run(Warm())  # the cache and the site, as a build before the server started left them
    warm = Warm()
    assert run(warm).unchanged
    run(warm, plan_only=True)
    reads: list[str] = []
    original = MemoFiles._read
    monkeypatch.setattr(MemoFiles, "_read", lambda self, name, shard=None: reads.append(name) or original(self, name, shard))
    edit_entry(project, "memory/gpu-oom.yaml", summary="A new quick answer for the GPU OOM entry, in two sentences.")
    assert not run(warm).unchanged
    assert reads == []
    build(project["entries"], project["cold"], CONFIG, project["templates"], cache_dir=None, jobs=1)
    assert tree_digest(project["site"]) == tree_digest(project["cold"])


def test_a_server_chosen_by_default_that_cannot_start_leaves_the_build_in_process(project, cli, tmp_path) -> None:
    """Where the servers' socket folder cannot be made, a build that chose the server by default
    says why and builds in its own process; one that asked for --server fails with the reason."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    chosen = cli(CI="", FAILPEDIA_BUILD_SERVER="1", XDG_CACHE_HOME=str(blocked))
    assert chosen.returncode == 0, chosen.stderr
    assert "building in this process" in chosen.stderr and "built " in chosen.stdout
    assert _same_as_cold(project, DEFAULT)
    asked = cli("--server", XDG_CACHE_HOME=str(blocked))
    assert asked.returncode != 0 and "build without --server" in asked.stderr and "Traceback" not in asked.stderr


def test_a_server_chosen_by_default_that_dies_at_its_start_leaves_the_build_in_process(project, cli, tmp_path) -> None:
    """A server process that exits at once (here: started by a Python that exits 7 when asked
    to run a build server) is a setup problem: the default choice builds in its own process,
    --server fails (exit 3)."""
    shim = tmp_path / "python-shim"
    shim.write_text(f"#!/bin/sh\ncase \"$*\" in *build-server*) exit 7;; esac\nexec {sys.executable} \"$@\"\n")
    shim.chmod(0o755)
    script = ("import sys\nimport generator.surfaces.buildserver as b\nb.sys.executable = sys.argv.pop(1)\n"
              "from generator.surfaces.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    args = ["build", "--entries", str(project["entries"]), "--out", str(project["site"]), "--templates", str(project["templates"]),
            "--cache-dir", str(project["cache"]), "--no-search"]
    env = {**os.environ, "XDG_CACHE_HOME": str(cli.home), "CI": ""}

    def run(*extra: str, **variables: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", script, str(shim), *args, *extra], cwd=project["entries"].parent,
                              env={**env, **variables}, capture_output=True, text=True, timeout=120)

    chosen = run(FAILPEDIA_BUILD_SERVER="1")
    assert chosen.returncode == 0 and "no build server: the build server did not start" in chosen.stderr, chosen.stderr
    assert _same_as_cold(project, DEFAULT) and not _servers(cli.home)
    asked = run("--server")
    assert asked.returncode == 3 and "did not start" in asked.stderr and "Traceback" not in asked.stderr


def test_ctypes_is_imported_by_a_servers_collection_not_by_every_build() -> None:
    """ctypes (for glibc's malloc_trim) is loaded by the first collection of a process that holds
    builds, not by every build."""
    script = ("import sys\nimport generator.site.build as b\nprint('ctypes' in sys.modules)\n"
              "b.collect_and_set_aside()\nprint('ctypes' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "True"], done.stdout + done.stderr
