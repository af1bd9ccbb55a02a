"""The `failpedia` command: a thin shell over the pipeline's functions.

With the commands package (generator/surfaces/commands/), the only place that prints or exits, and the
only place that turns FailpediaError into an exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from ..core.problems import BuildFailed, FailpediaError, Problem, SetupError, UsageError

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"failpedia: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _at_least_one(text: str) -> int:
    """A count option (--top, --jobs): a whole number from 1 up."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _gh_escape(text: str, prop: bool = False) -> str:
    """Escape a GitHub workflow-command value (and, in a property, ':' and ',')."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def _repo_path(path: str) -> str:
    """Annotations need paths relative to the checkout: make absolute ones under the cwd relative."""
    p = Path(path)
    if p.is_absolute():
        try:
            return p.relative_to(Path.cwd()).as_posix()
        except ValueError:
            return path
    return path


def _github(p: Problem) -> str:
    props = f"file={_gh_escape(_repo_path(p.path), prop=True)}"
    if p.line:
        props += f",line={p.line},col={p.col or 1}"
    return f"::{p.severity} {props}::{_gh_escape(p.message)}"


def _print_problems(problems: Sequence[Problem], fmt: str = "text") -> None:
    for p in sorted(problems):
        print(_github(p) if fmt == "github" else p)


def _print_json(problems: Sequence[Problem], entries: int) -> None:
    items = [{"path": p.path, "line": p.line, "col": p.col, "severity": p.severity, "message": p.message} for p in sorted(problems)]
    errors = sum(p.severity == "error" for p in problems)
    print(json.dumps({"entries": entries, "errors": errors, "warnings": len(problems) - errors, "problems": items}, indent=2))


def cmd_check(args: argparse.Namespace) -> int:
    from ..core.catalog import build_catalog
    from ..core.read import read_source

    source = read_source(Path(args.entries))
    count = len(source.entries)
    try:
        catalog = build_catalog(source)
    except BuildFailed as e:
        if args.format == "json":
            _print_json(e.problems, count)
            return 1
        _print_problems(e.problems, args.format)
        errors = sum(p.severity == "error" for p in e.problems)
        print(f"{count} entries, {errors} error{'s' * (errors != 1)}")
        return 1
    # Link and tag suggestions (a related link not returned, a tag only one entry uses) are about
    # the whole corpus, not the file a contributor edits: listed only when asked for.
    warnings = catalog.warnings if args.strict else ()
    hidden = catalog.warning_count if not args.strict else 0
    if args.format == "json":
        _print_json(warnings, count)
        return 1 if warnings else 0
    _print_problems(warnings, args.format)
    summary = f"{count} entries, 0 errors"
    if args.strict:
        summary += f", {len(warnings)} warning{'s' * (len(warnings) != 1)}"
    elif hidden:
        summary += f" ({hidden} link and tag suggestion{'s' * (hidden != 1)}: 'failpedia check --strict')"
    print(summary)
    return 1 if warnings else 0


def cmd_build(args: argparse.Namespace) -> int:
    from ..site.build import build
    from ..core.config import load_config

    from ..site.build import DEFAULT_CACHE
    from ..core.config import TEMPLATES

    cache_dir = None if args.no_cache else Path(args.cache_dir) if args.cache_dir else Path(args.project) / DEFAULT_CACHE
    if args.stop_server:
        return _stop_server(cache_dir)
    if args.server and cache_dir is None:
        raise UsageError("--server keeps the build cache in memory between builds; it cannot build with --no-cache")
    server = _through_server(args, cache_dir)
    config = load_config(Path(args.project)).with_base_url(args.base_url)
    out = Path(args.out)
    templates = Path(args.templates) if args.templates else TEMPLATES
    from .progress import Progress

    progress = Progress()
    try:
        result = None
        if server:
            assert cache_dir is not None
            from .buildserver import request_build

            def started() -> None:  # said when the server was not asked for by name
                print(f"failpedia: started a build server for {cache_dir}: the next build after an edit takes over what it "
                      f"holds in memory. It exits after {args.server_idle:.0f} s without a build; "
                      "'failpedia build --stop-server' stops it, and --no-server or FAILPEDIA_BUILD_SERVER=0 builds without one",
                      file=sys.stderr)

            try:
                result = request_build(Path(args.entries), out, config, templates, not args.no_search, cache_dir, args.jobs,
                                       idle=args.server_idle, progress=progress, on_start=None if args.server else started)
            except SetupError as e:
                if args.server:
                    raise
                # The automatic choice falls back; the error's advice ("...; build without --server") is what happens.
                print(f"failpedia: note: no build server: {str(e).partition('; ')[0]}; building in this process", file=sys.stderr)
        if result is None:
            result = build(Path(args.entries), out, config, templates, search=not args.no_search, cache_dir=cache_dir, jobs=args.jobs,
                           progress=progress)
    except BuildFailed as e:
        progress.done()
        _print_problems(e.problems)
        errors = sum(p.severity == "error" for p in e.problems)
        print(f"build failed: {errors} error{'s' * (errors != 1)}; {out} was left as it was", file=sys.stderr)
        return 1
    progress.done()
    if result.unchanged:
        print(f"nothing changed since the last build; {out}/ is up to date")
        return 0
    reused = f", {result.reused} reused" if cache_dir else ""
    print(f"built {result.pages} pages ({result.files} files, {result.rendered} rendered{reused}) into {out}/ — "
          f"to read it, run {serve_hint(out)}")
    return 0


AUTO_SERVER_FROM = 2000  # entries from which `build` goes through the build server unless told otherwise


# Set by CI services: CI by most (GitHub, GitLab, CircleCI, Travis, Buildkite, Bitbucket, Drone);
# the others by Jenkins, Azure Pipelines, TeamCity and AWS CodeBuild, which do not set CI.
_CI_VARIABLES = ("CI", "JENKINS_URL", "TF_BUILD", "TEAMCITY_VERSION", "CODEBUILD_BUILD_ID")


def _through_server(args: argparse.Namespace, cache_dir: Path | None) -> bool:
    """Whether this build goes through the build server: as --server or --no-server says; else
    as FAILPEDIA_BUILD_SERVER says (1 or 0); else never in a CI job (a server would outlive it)
    or without a cache, and for a site of AUTO_SERVER_FROM entries or more, where a fresh process
    spends most of a one-entry rebuild loading and planning what a server holds in memory."""
    if args.server is not None:
        return bool(args.server)
    chosen = os.environ.get("FAILPEDIA_BUILD_SERVER", "").strip().lower()
    if chosen not in ("", "1", "true", "yes", "0", "false", "no"):
        raise UsageError(f"FAILPEDIA_BUILD_SERVER={os.environ['FAILPEDIA_BUILD_SERVER']!r}: set it to 1 (through the build server) "
                         "or 0 (in the command's own process), or unset it (through the server from "
                         f"{AUTO_SERVER_FROM:,} entries, outside CI)")
    if chosen in ("1", "true", "yes"):
        return cache_dir is not None
    in_ci = any(os.environ.get(name, "").strip().lower() not in ("", "0", "false") for name in _CI_VARIABLES)
    if chosen in ("0", "false", "no") or cache_dir is None or in_ci:
        return False
    return _count_entry_files(Path(args.entries), AUTO_SERVER_FROM) >= AUTO_SERVER_FROM


def _count_entry_files(root: Path, stop: int) -> int:
    """How many `<category>/<name>.yaml` files `root` holds, counted no further than `stop`: a
    look at the folder's size before anything is imported or read (0 where it cannot be listed).
    Here, not beside read_source: the reader's module imports the entry schema, which a build
    handed to the server never needs."""
    count = 0
    try:
        with os.scandir(root) as children:
            for child in children:
                if child.name.startswith(".") or not child.is_dir(follow_symlinks=False):
                    continue
                with os.scandir(child.path) as files:
                    count += sum(f.name.endswith(".yaml") for f in files)
                if count >= stop:
                    return count
    except OSError:
        pass
    return count


def _stop_server(cache_dir: Path | None) -> int:
    from .buildserver import stop_server

    if cache_dir is None:
        raise UsageError("--stop-server stops the build server of a cache folder; it cannot go with --no-cache")
    stopped = stop_server(cache_dir)
    if stopped is None:
        print(f"no build server runs for {cache_dir}")
    else:
        print(f"stopped the build server for {cache_dir} (pid {stopped['pid']}, {stopped['builds']} builds)")
    return 0


def cmd_build_server(args: argparse.Namespace) -> int:
    from .buildserver import serve_builds

    serve_builds(Path(args.cache_dir), args.idle)
    return 0


def _command() -> str:
    """How to type `failpedia` in the caller's shell: the bare name when PATH finds this very
    installation, else its path (`.venv/bin/failpedia` after `make site`)."""
    import shutil

    script = Path(sys.executable).parent / "failpedia"
    if not script.is_file():
        return f"{sys.executable} -m generator"
    found = shutil.which("failpedia")
    if found and Path(found).resolve() == script.resolve():
        return "failpedia"
    try:
        return script.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(script)


def serve_hint(out: Path) -> str:
    """The command that serves the site just built, as the caller can type it."""
    flags = "" if out == Path("site") else f" --out {out}"
    hint = f"'{_command()} serve{flags}'"
    if not flags and Path("Makefile").is_file():
        hint = f"'make serve' (or {hint})"
    return hint
def _positive(text: str) -> float:
    """--timeout-scale: a number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number above 0, not {text}")
    return value


def _untrusted(text: str, indent: str = "    | ") -> str:
    """A reproduction's output, quoted line by line: escape sequences are shown, never obeyed."""
    from ..core.load import shown

    return "\n".join(indent + shown(line, 400) for line in text.split("\n"))


def cmd_verify(args: argparse.Namespace) -> int:
    import datetime

    from ..site.build import load_catalog
    from ..core.read import RECORD
    from .verify import InstallError, Options, check_snippets, snippet_packages, update_record, verify_entries

    entries = Path(args.entries)
    try:
        catalog = load_catalog(entries)
    except BuildFailed as e:
        _print_problems(e.problems)
        print("verify: the entries have errors ('failpedia check' lists them); nothing was run", file=sys.stderr)
        return 1
    options = Options(
        venv_dir=Path(args.venv_dir).absolute(), python=args.python or sys.executable, timeout_scale=args.timeout_scale, memory_mb=args.memory,
        find_links=tuple(args.find_links), extra_index_urls=tuple(args.extra_index_url), no_index=args.no_index, allow_source_builds=args.allow_source_builds,
    )
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    outcomes = []
    failed = False
    if not args.snippets_only:
        for o in verify_entries(catalog, args.slugs, options, today):
            outcomes.append(o)
            if args.json:
                continue
            if o.status == "reproduced":
                pkgs = ", ".join(f"{k} {v}" for k, v in o.packages.items()) or "no packages"
                reuse = "" if o.venv_reused else ", new environment"
                print(f"reproduced      {o.path} ({o.seconds:.1f} s; {pkgs}; Python {o.python}{reuse}; "
                      f"fingerprint{'s' * (len(o.matched) != 1)} {', '.join(map(str, o.matched))} matched)", flush=True)
            elif o.status == "not-reproduced":
                print(f"NOT REPRODUCED  {o.path}: {o.reason}; the output ended with:\n{_untrusted(o.output_tail)}", flush=True)
            elif o.status == "skipped":
                print(f"skipped         {o.path}: {o.reason}", flush=True)
            else:
                print(f"ERROR           {o.reason}", flush=True)
        failed = any(o.status in ("not-reproduced", "error") for o in outcomes)
    record_note = ""
    if outcomes and not args.no_record:
        record = Path(args.record) if args.record else entries / RECORD
        changed = update_record(record, outcomes, set(catalog.records))
        record_note = f"; record {record} {'updated' if changed else 'unchanged'}"
    report = None
    if args.snippets or args.snippets_only:
        packages = args.snippet_package or snippet_packages(Path(args.project))
        try:
            report = check_snippets(catalog, args.slugs, packages, options)
        except InstallError as e:
            print(f"failpedia: error: {e}", file=sys.stderr)
            return 1
        failed = failed or bool(report.problems)
    if args.json:
        doc: dict[str, object] = {"outcomes": [o.as_json() for o in outcomes]}
        if report is not None:
            doc["snippets"] = {
                "snippets": report.snippets, "checked": report.checked, "constructed": report.constructed, "notes": report.notes,
                "problems": [{"path": p.path, "line": p.line, "col": p.col, "message": p.message} for p in report.problems],
            }
        print(json.dumps(doc, indent=2))
        return 1 if failed else 0
    if not args.snippets_only:
        counts = {s: sum(o.status == s for o in outcomes) for s in ("reproduced", "not-reproduced", "skipped", "error")}
        if not outcomes:
            print("no entry has a reproduce section" if not args.slugs else "nothing to verify")
        print(f"{counts['reproduced']} reproduced, {counts['not-reproduced']} not reproduced, {counts['skipped']} skipped, "
              f"{counts['error']} error{'s' * (counts['error'] != 1)}{record_note}")
    if report is not None:
        _print_problems(report.problems)
        for note in report.notes:
            print(f"note: {note}")
        print(f"snippets: {report.snippets} checked in {report.checked} calls ({report.constructed} objects constructed), "
              f"{len(report.problems)} problem{'s' * (len(report.problems) != 1)}")
    return 1 if failed else 0


def cmd_schema(args: argparse.Namespace) -> int:
    from ..core.schema import entry_json_schema

    print(json.dumps(entry_json_schema(), indent=2, sort_keys=True))
    return 0


def _print_run_diagnosis(result: Any, top: int) -> None:
    from ..core.load import shown

    code = result.returncode
    how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
    err = sys.stderr
    print(f"\nfailpedia: the job {how}.", file=err)
    if result.skipped:
        print(f"failpedia: the job printed {result.printed / 2**20:.0f} MiB faster than it could be matched; "
              f"{result.skipped / 2**20:.0f} MiB of it were counted but not read", file=err)
    v = result.verdict
    if not result.matches:
        print("failpedia: no known failure matched its output.", file=err)
        if v:  # the log still said which rank the others waited for
            print(f"  Started on rank {v.rank}" + (f" on {v.host}" if v.host else "") + f": {v.reason}", file=err)
            if v.disagrees:
                print(f"  Note: {v.disagrees}", file=err)
        return
    first, rest = result.matches[0], result.matches[1:top]
    where = f", rank {v.rank}" + (f" on {v.host}" if v.host else "") if v else ""
    print(f"failpedia: diagnosis: {first.title} ({first.role}{where})", file=err)
    if v:
        print(f"  Why rank {v.rank}: {v.reason}", file=err)
        if v.disagrees:
            print(f"  Note: {v.disagrees}", file=err)
    if first.summary:
        print(f"  Quick answer: {first.summary}", file=err)
    if first.fix:
        print(f"  Fix: {first.fix}", file=err)
    print(f"  Entry: {first.url}", file=err)
    for e in first.evidence:
        rank = f" [rank {e.rank}]" if e.rank is not None else ""
        print(f"  {e.file}:{e.line}{rank}  {shown(e.text, 300)}", file=err)
    for m in rest:
        label = "consequence" if m.role == "collateral" else "also matched"
        print(f"  {label}: {m.title} ({m.url})", file=err)


def cmd_run(args: argparse.Namespace) -> int:
    from ..core.config import load_config
    from .commands.diagnose import load_spec
    from .launcher import RunResult, supervise

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError("give the command to run after --, e.g. failpedia run -- torchrun --nproc-per-node 8 train.py")
    from ..core.locate import locate

    enc = locate(args.entries)
    spec = load_spec(enc)
    base_url = load_config(enc.project).base_url

    def early(matches: list[Any]) -> None:
        print(f"\nfailpedia: {matches[0].title} detected while the job runs ({matches[0].url})", file=sys.stderr, flush=True)

    try:
        result: RunResult = supervise(
            command, spec, sys.stdout.buffer, sys.stderr.buffer,
            on_definitive=None if args.quiet else early, tail_lines=args.tail, base_url=base_url,
        )
    except OSError as e:
        raise UsageError(f"cannot start {command[0]}: {e.strerror or e}") from None
    if result.failed or result.early:
        sys.stdout.flush()
        _print_run_diagnosis(result, args.top)
    if args.json:
        path = Path(args.json)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(result.as_json(command, args.top), indent=2) + "\n")
        tmp.replace(path)
    if result.returncode < 0:  # die the way the child died, so a scheduler sees the same status
        sys.stdout.flush()
        sys.stderr.flush()
        if -result.returncode not in (signal.SIGKILL, signal.SIGSTOP):  # those two cannot be caught anyway
            signal.signal(-result.returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -result.returncode)
        return 128 - result.returncode  # the shell's convention, should the signal not end us
    return result.returncode


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..core.config import load_config
    from .knowledge import Knowledge
    from .mcpserver import make_server

    from ..core.locate import locate

    enc = locate(args.entries)
    knowledge = Knowledge.load(enc.entries, load_config(enc.project).base_url)
    make_server(knowledge).run("stdio")
    return 0


def cmd_lsp(args: argparse.Namespace) -> int:
    from ..core.config import load_config
    from .lsp import make_server

    from ..core.locate import locate

    enc = locate(args.entries)
    site = Path(args.site).resolve() if args.site else (enc.project / "site").resolve()
    server = make_server(enc.entries.resolve(), load_config(enc.project).base_url, site if site.is_dir() else None)
    server.start_io()
    return 0
SERVE_OUT = Path(".cache") / "serve" / "site"
FOUND_ENTRIES = "entries folder (default: the Failpedia repository you are in, else the entries this installation carries)"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("failpedia")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


class _Version(argparse.Action):
    """--version, looked up only when asked: importlib.metadata and the look-up would otherwise
    slow the start of every command (bench/README.md, "The catalog patched")."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str = "show the version and exit") -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object, option_string: str | None = None) -> None:
        print(f"failpedia {_version()}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="failpedia", description="Build and query the Failpedia encyclopedia of ML-training failures.",
        epilog="exit status: 0 done (diagnose/search: found); 1 diagnose/search: nothing matched, check/build: the entries have errors; "
               "2 bad arguments or unreadable input; 3 cannot work here (no entries, entries with errors, bad settings)",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("check", help="validate every entry and print every problem")
    p.add_argument("--entries", default="entries", metavar="DIR", help="entries folder (default: entries)")
    p.add_argument(
        "--format", choices=("text", "github", "json"), default="text",
        help="text: path:line:col: message; github: workflow annotations (::error file=...); json: one document for tools",
    )
    p.add_argument("--strict", action="store_true",
                   help="also list the corpus-wide warnings (a related link not returned, a tag one entry uses, an entry nothing links to); exit 1 if any")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("serve", help="build, serve on localhost, rebuild on changes and reload the browser")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--entries", default="entries", metavar="DIR", help="entries folder (default: entries)")
    # Not site/: its pages carry localhost URLs, which a deploy of site/ must never publish.
    p.add_argument("--out", default=str(SERVE_OUT), metavar="DIR", help=f"output folder (default: {SERVE_OUT}, never the deployed site/)")
    p.add_argument("--project", default=".", metavar="DIR", help=argparse.SUPPRESS)
    p.add_argument("--templates", default=None, metavar="DIR", help="jinja templates and static files (default: the ones shipped in templates/)")
    p.set_defaults(func=_serve)

    p = sub.add_parser("new", help="start a new entry from a template with every field")
    p.add_argument("slug", help="the entry's slug and file name, e.g. nccl-watchdog-timeout")
    p.add_argument("--category", required=True, metavar="NAME", help="its category (a folder listed in entries/categories.yaml)")
    p.add_argument("--tags", default="", metavar="A,B", help="comma-separated tags from entries/tags.yaml")
    p.add_argument("--entries", default="entries", metavar="DIR", help="entries folder (default: entries)")
    p.add_argument("--project", default=".", metavar="DIR", help=argparse.SUPPRESS)
    p.set_defaults(func=_new)

    p = sub.add_parser("build", help="check the entries, then render the site")
    p.add_argument("--entries", default="entries", metavar="DIR", help="entries folder (default: entries)")
    p.add_argument("--out", default="site", metavar="DIR", help="output folder (default: site)")
    p.add_argument("--base-url", default=None, metavar="URL", help="absolute URL the site is served from (default: [tool.failpedia] base_url)")
    p.add_argument("--no-search", action="store_true", help="leave out the search index, search/ (faster; the search page then finds nothing)")
    p.add_argument("--no-cache", action="store_true", help="cold build: neither read nor write the build cache")
    p.add_argument("--cache-dir", default=None, metavar="DIR", help="where the build cache lives (default: .cache/build)")
    p.add_argument("--jobs", type=_at_least_one, default=None, metavar="N", help="worker processes (default: one per core)")
    p.add_argument("--templates", default=None, metavar="DIR", help="jinja templates and static files (default: the ones shipped in templates/)")
    p.add_argument("--server", action=argparse.BooleanOptionalAction, default=None,
                   help="build in a build server that stays up between builds and keeps the cache, plan and templates in memory "
                   "(started by the first such build; a one-entry rebuild of a large site is twice as fast or more). "
                   f"Default: through the server for a site of {AUTO_SERVER_FROM:,} entries or more, except in a CI job; "
                   "FAILPEDIA_BUILD_SERVER=1 or 0 sets the default")
    p.add_argument("--server-idle", type=_positive, default=900.0, metavar="SECONDS",
                   help="how long a build server this build starts waits for the next build before it exits (default: 900)")
    p.add_argument("--stop-server", action="store_true", help="stop the build server of this cache folder, and build nothing")
    p.add_argument("--project", default=".", metavar="DIR", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("build-server", help="the build server 'build --server' starts and stops (not run by hand)")
    p.add_argument("--cache-dir", required=True)
    p.add_argument("--idle", type=_positive, default=900.0)
    p.set_defaults(func=cmd_build_server)

    p = sub.add_parser(
        "verify", help="run entries' reproduce scripts in a sandbox and record whether they show their fingerprints",
        description="Run each entry's reproduce script (code from the entry's author: only this command runs it) in its own "
        "virtual environment, in a scratch folder with a minimal environment and time and memory limits, and match its "
        "output with diagnose's rules. Records the outcome in the entries folder's verified.yaml, which the entry pages show.",
    )
    p.add_argument("slugs", nargs="*", metavar="SLUG", help="entries to verify (default: every entry with a reproduce section)")
    p.add_argument("--entries", default="entries", metavar="DIR", help="entries folder (default: entries)")
    p.add_argument("--record", default=None, metavar="FILE", help="where to record the outcomes (default: DIR/verified.yaml of --entries)")
    p.add_argument("--no-record", action="store_true", help="record nothing")
    p.add_argument("--venv-dir", default=".cache/verify/venvs", metavar="DIR",
                   help="where the virtual environments are kept, one per package set (default: .cache/verify/venvs)")
    p.add_argument("--python", default=None, metavar="PATH", help="the Python the environments are made from (default: the one running failpedia)")
    p.add_argument("--timeout-scale", type=_positive, default=1.0, metavar="X", help="multiply each entry's reproduce.timeout by X (default: 1)")
    p.add_argument("--memory", type=_at_least_one, default=8192, metavar="MB", help="address-space limit of a run in MiB (default: 8192)")
    p.add_argument("--find-links", action="append", default=[], metavar="DIR|URL", help="pip --find-links: look for wheels here too (repeatable)")
    p.add_argument("--extra-index-url", action="append", default=[], metavar="URL",
                   help="pip --extra-index-url (repeatable), e.g. https://download.pytorch.org/whl/cpu for CPU-only torch")
    p.add_argument("--no-index", action="store_true", help="pip --no-index: install only from --find-links")
    p.add_argument("--allow-source-builds", action="store_true", help="let pip build packages from source (runs their build code; default: wheels only)")
    p.add_argument("--snippets", action="store_true", help="also check the Python fix snippets (imports, attribute paths, arguments)")
    p.add_argument("--snippets-only", action="store_true", help="check the fix snippets only; run no reproduction")
    p.add_argument("--snippet-package", action="append", default=[], metavar="REQ",
                   help="a package for the snippet check (repeatable; default: [tool.failpedia.verify] snippet-packages)")
    p.add_argument("--json", action="store_true", help="print one JSON document for tools")
    p.add_argument("--project", default=".", metavar="DIR", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("schema", help="print the entry JSON Schema")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("diagnose", help="name the failure a training log shows")
    p.add_argument("logs", nargs="+", metavar="LOG", help="log files (.gz works), - for standard input, or a folder of logs; "
                   "several (one per rank or node) are merged in time order")
    p.add_argument("--entries", default=None, metavar="DIR", help=FOUND_ENTRIES)
    p.add_argument("--top", type=_at_least_one, default=5, metavar="N", help="show at most N matches (default: 5)")
    p.add_argument("--json", action="store_true", help="print JSON for tools")
    p.add_argument("--follow", action="store_true", help="watch a growing log (like tail -f) and report as soon as a fingerprint fires")
    p.set_defaults(func=_diagnose)

    p = sub.add_parser("search", help="find entries by words, #tags, identifiers or a pasted error line")
    p.add_argument("query", nargs="+", metavar="QUERY", help="e.g. '#ddp #oom bucket' (quote it: # starts a shell comment)")
    p.add_argument("--entries", default=None, metavar="DIR", help=FOUND_ENTRIES)
    p.add_argument("--top", type=_at_least_one, default=10, metavar="N", help="show at most N results (default: 10)")
    p.add_argument("--json", action="store_true", help='print {"query": ..., "results": [{"slug", "title", "url", "score", "tags"}, ...]}')
    p.add_argument("--project", default=".", metavar="DIR", help=argparse.SUPPRESS)
    p.set_defaults(func=_search)

    p = sub.add_parser(
        "run", help="run a training command, pass its output through, and diagnose it when it fails",
        description="Run CMD with its output passed through unchanged; when it fails (or a definitive "
        "fingerprint fires while it runs) print the diagnosis on stderr. Exits with CMD's status.",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the command, after --")
    p.add_argument("--entries", default=None, metavar="DIR", help=FOUND_ENTRIES)
    p.add_argument("--json", default=None, metavar="FILE", help="also write the diagnosis as JSON to FILE (for schedulers)")
    p.add_argument("--top", type=_at_least_one, default=3, metavar="N", help="show at most N matches (default: 3)")
    p.add_argument("--tail", type=_at_least_one, default=20, metavar="N", help="lines kept per rank for --json (default: 20)")
    p.add_argument("--quiet", action="store_true", help="no notice while the job runs; only the diagnosis at the end")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("mcp", help="serve the encyclopedia to coding agents (Model Context Protocol, stdio)")
    p.add_argument("--entries", default=None, metavar="DIR", help=FOUND_ENTRIES)
    p.add_argument("--project", default=".", metavar="DIR", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("lsp", help="a language server on stdio: diagnostics for logs and entries in your editor")
    p.add_argument("--entries", default=None, metavar="DIR", help=FOUND_ENTRIES)
    p.add_argument("--site", default=None, metavar="DIR", help="built site whose pages code actions open, when present (default: site/ of the repository)")
    p.add_argument("--project", default=".", metavar="DIR", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_lsp)
    return parser


# The commands of their own modules, imported only when they run, so `import generator` stays light.


def _serve(args: argparse.Namespace) -> int:
    from .commands.serve import cmd_serve

    return cmd_serve(args)


def _new(args: argparse.Namespace) -> int:
    from .commands.new import cmd_new

    return cmd_new(args)


def _diagnose(args: argparse.Namespace) -> int:
    from .commands.diagnose import cmd_diagnose

    return cmd_diagnose(args)


def _search(args: argparse.Namespace) -> int:
    from .commands.search import cmd_search

    return cmd_search(args)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.func(args))
    except FailpediaError as e:
        print(f"failpedia: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `failpedia check | head`: the reader left; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def run() -> None:
    """The `failpedia` command: main(), then exit without tearing the interpreter down. Freeing a
    large build's objects one by one, after every file is written and closed, is time the user
    waits for nothing (bench/README.md has the figures)."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader left, or the stream is closed
            pass
    os._exit(code)
