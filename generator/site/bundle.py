"""What a wheel carries: the encyclopedia it was built from, checked and compiled (setup.py
calls `write_bundle` at build time). `locate` finds it at run time."""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["write_bundle"]


def write_bundle(project: Path, target: Path) -> int:
    """Check `project/entries` (raising BuildFailed on any error: no wheel from a broken corpus)
    and write into `target`: the entries, the templates, the [tool.failpedia] settings and the
    compiled matcher definition `fingerprints.json`. Returns the number of entries."""
    from .build import load_catalog
    from .pages import fingerprints_file

    catalog = load_catalog(project / "entries")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    shutil.copytree(project / "entries", target / "entries", ignore=shutil.ignore_patterns("*~", ".*"))
    shutil.copytree(project / "templates", target / "templates", ignore=shutil.ignore_patterns("*~", ".*", "__pycache__"))
    shutil.copy2(project / "pyproject.toml", target / "pyproject.toml")
    (target / "fingerprints.json").write_bytes(fingerprints_file(catalog))
    return len(catalog.records)
