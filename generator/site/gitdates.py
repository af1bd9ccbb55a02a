"""Last-updated dates of entry files from git history (the IO edge; no clock is read)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

__all__ = ["date_key", "git_dates", "git_head"]


def git_dates(entries: Path) -> dict[str, str]:
    """Map each file path relative to `entries` ('distributed/x.yaml') → YYYY-MM-DD of its last
    commit. Empty outside a git checkout or without git."""
    try:
        top = subprocess.run(
            ["git", "-C", str(entries), "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=20, check=True
        ).stdout.strip()
        log = subprocess.run(
            ["git", "-C", top, "log", "--format=@%cs", "--name-only", "--no-renames", "--", str(entries.resolve())],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    dates: dict[str, str] = {}
    current = ""
    root = Path(top)
    base = entries.resolve()
    for line in log.splitlines():
        if line.startswith("@"):
            current = line[1:]
        elif line and current:
            path = (root / line).resolve()
            try:
                key = path.relative_to(base).as_posix()
            except ValueError:
                continue
            dates.setdefault(key, current)  # newest first
    return dates


def git_head(path: Path) -> str:
    """The commit checked out around `path` ('' outside git), and in a shallow clone the commits
    its history stops at: the dates change only when one of them does (a fetch that deepens a
    shallow clone keeps HEAD but brings older commits)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD", "--git-path", "shallow"], capture_output=True, text=True, timeout=20, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return ""
    head = out[0].strip() if out else ""
    try:
        shallow = (path / out[1]).read_bytes() if len(out) > 1 else b""
    except OSError:  # not a shallow clone
        shallow = b""
    return f"{head} shallow {hashlib.sha256(shallow).hexdigest()[:16]}" if shallow else head


def date_key(category: str, slug: str) -> str:
    """An entry's key in the `git_dates` map."""
    return f"{category}/{slug}.yaml"
