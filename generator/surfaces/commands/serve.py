"""`failpedia serve`: the dev server (serve.py) on localhost until Ctrl-C or SIGTERM, its log
on standard output."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from ...core.config import TEMPLATES, load_config, require_templates
from ...core.problems import UsageError
from ..serve import DevServer, relative

__all__ = ["cmd_serve"]


def _error(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_serve(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a port number (0-65535)")
    config = load_config(Path(args.project))

    def log(message: str) -> None:
        print(message, flush=True)

    templates = Path(args.templates) if args.templates else TEMPLATES
    require_templates(templates)
    out = Path(args.out)
    if out.resolve() in {Path("site").resolve(), (Path(args.project) / "site").resolve()}:  # what `build` writes by default
        raise UsageError(f"--out {args.out}: serve's pages carry localhost URLs, and {args.out}/ is what 'failpedia build' makes for deploying; "
                         "serve into another folder (the default is .cache/serve/site)")
    server = DevServer(Path(args.entries), out, config, args.host, args.port, log, templates, errors=_error)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # Ctrl-C stops it even when started from a script's background job, which starts with SIGINT
    # ignored (Python then installs no handler of its own).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        server.start()
        log(f"serving {args.out}/ at {server.url} — watching {args.entries}/ and {relative(server.templates)}/ (Ctrl-C to stop)")
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    log("stopped")
    return 0
