"""The search query set (tests/queries/queries.yaml) and the accuracy table both engines report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

QUERIES = Path(__file__).resolve().parent / "queries" / "queries.yaml"
SPLITS = ("tuning", "heldout")
SOURCES = {"issue-21", "gh", "symptom", "paste", "typo"}
# First-result accuracy both engines must reach on the whole set (issue 21). The 19 queries
# collected last and never tuned on (the last block of heldout) are at 16/19; they stay in.
FLOOR = 0.95
ISSUE_21 = "issue-21"  # these must all be first


@dataclass(frozen=True)
class Labelled:
    q: str
    slug: str
    src: str
    split: str


def labelled_queries() -> list[Labelled]:
    data = yaml.safe_load(QUERIES.read_text(encoding="utf-8"))
    return [Labelled(str(x["q"]), x["slug"], x["src"], split) for split in SPLITS for x in data[split]]


def accuracy_table(engine: str, firsts: dict[str, str | None], queries: list[Labelled]) -> tuple[str, float, list[Labelled]]:
    """The table `pytest -s` prints (per split: right first, total, %), the accuracy on the whole
    set, and the queries whose first result is wrong."""
    lines = [f"first-result accuracy, {engine}:", f"  {'split':8} {'right':>5} {'of':>4} {'%':>6}"]
    wrong = [x for x in queries if firsts.get(x.q) != x.slug]
    for split in (*SPLITS, "all"):
        part = [x for x in queries if split in (x.split, "all")]
        right = sum(firsts.get(x.q) == x.slug for x in part)
        lines.append(f"  {split:8} {right:>5} {len(part):>4} {100 * right / max(len(part), 1):>6.1f}")
    lines += [f"  wrong: {x.q!r} wants {x.slug}, got {firsts.get(x.q)}" for x in wrong]
    return "\n".join(lines), 1 - len(wrong) / max(len(queries), 1), wrong
