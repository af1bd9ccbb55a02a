"""`failpedia new SLUG`: a new entry file from the scaffold (scaffold.py), and what to do next."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...core.config import load_config
from ..scaffold import create_entry, placeholders

__all__ = ["cmd_new"]


def cmd_new(args: argparse.Namespace) -> int:
    config = load_config(Path(args.project))
    tags = [t.strip() for t in (args.tags or "").split(",") if t.strip()]
    path = create_entry(Path(args.entries), args.slug, args.category, tags, Path(args.project), config.base_url)
    count = placeholders(path.read_text(encoding="utf-8"))
    print(f"created {path} with {count} placeholders to fill in")
    print("next: replace every <fill in ...>, run 'failpedia check', preview with 'failpedia serve' (guide: CONTRIBUTING.md)")
    return 0
