"""Where the encyclopedia is, for the commands that read it (`diagnose`, `search`).

In order: the `--entries` folder asked for; the Failpedia repository the command runs in (the
working folder or one above it); the copy the package carries. A wheel carries the entries,
templates, settings and compiled matcher definition it was built from (in `generator/bundle/`,
written by setup.py at build time); a source checkout or editable install uses its own folders.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .problems import SetupError

__all__ = ["BUNDLE", "HOME", "Encyclopedia", "find_repository", "locate"]

PACKAGE = Path(__file__).resolve().parent.parent  # generator/, above core/
BUNDLE = PACKAGE / "bundle"
# The package's own encyclopedia: the bundled copy in a wheel, else the checkout it lives in.
HOME = BUNDLE if (BUNDLE / "entries").is_dir() else PACKAGE.parent


@dataclass(frozen=True)
class Encyclopedia:
    entries: Path
    project: Path  # the folder whose pyproject.toml holds the [tool.failpedia] settings
    bundled: bool  # the package's own copy, not a folder the user has
    spec: Path | None = None  # a compiled matcher definition (api/fingerprints.json), when shipped

    def page(self, url: str) -> Path | None:
        """The built page for a site-relative URL (`slug/`), when a built site is next to the entries."""
        if self.project == BUNDLE:
            return None
        path = self.project / "site" / url / "index.html"
        return path if path.is_file() else None


def _is_repository(folder: Path) -> bool:
    """A Failpedia repository: entries/ with its registries and [tool.failpedia] in pyproject.toml."""
    try:
        if not (folder / "entries" / "tags.yaml").is_file():
            return False
        data = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
    return "failpedia" in data.get("tool", {})


def find_repository(start: Path | None = None) -> Path | None:
    """The Failpedia repository that holds `start` (default: the working folder), if any."""
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        if _is_repository(folder):
            return folder
    return None


def locate(entries: str | None) -> Encyclopedia:
    """The entries a command reads. Raises SetupError when `--entries` names no folder."""
    if entries is not None:
        path = Path(entries)
        if not path.is_dir():
            raise SetupError(f"{entries}: entries folder not found")
        parent = path.absolute().parent
        return Encyclopedia(path, parent if _is_repository(parent) else HOME, bundled=False)
    repo = find_repository()
    if repo is not None:
        return Encyclopedia(repo / "entries", repo, bundled=False)
    if not (HOME / "entries").is_dir():
        raise SetupError("this installation carries no entries; pass --entries DIR")
    spec = BUNDLE / "fingerprints.json"
    return Encyclopedia(HOME / "entries", HOME, bundled=True, spec=spec if spec.is_file() else None)
