"""Which rank started it, on real multi-rank logs (`tests/ranklogs/`, see its README): the Python
engine names the initiating rank of every log; `pytest -s` prints the table. The browser engine is
held to the same answers in tests/test_ranks_browser.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from generator.diagnosis.matcher import Matcher, rank_hits
from generator.surfaces.knowledge import Knowledge
from generator.diagnosis.ranks import RankScanner, RankVerdict, _span, initiating_rank

REPO = Path(__file__).resolve().parent.parent
RANKLOG_DIR = Path(__file__).resolve().parent / "ranklogs"


@dataclass(frozen=True)
class RankLog:
    path: Path
    rank: int
    root_cause_rank: int | None
    also: tuple[int, ...]
    sources: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.path.name


def rank_logs() -> list[RankLog]:
    out = []
    for log in sorted(RANKLOG_DIR.glob("*.log")):
        meta = yaml.safe_load(log.with_suffix(".yaml").read_text(encoding="utf-8"))
        out.append(RankLog(log, int(meta["initiating_rank"]), meta.get("root_cause_rank"), tuple(meta.get("also") or ()),
                           tuple(meta["sources"])))
    return out


def python_verdict(spec: dict, name: str, data: bytes) -> tuple[list, RankVerdict | None]:
    m, scan = Matcher(spec, name), RankScanner()
    for i in range(0, len(data), 4093):  # chunk boundaries inside lines
        m.feed(data[i : i + 4093])
        scan.feed(data[i : i + 4093])
    m.close()
    scan.close()
    matches = rank_hits(spec, [m])
    return matches, initiating_rank(matches, scan)


@pytest.fixture(scope="module")
def knowledge() -> Knowledge:
    return Knowledge.load(REPO / "entries")


def test_the_set_is_at_least_fifteen_logs_from_public_threads() -> None:
    logs = rank_logs()
    assert len(logs) >= 15
    assert all(log.sources and all(s.startswith("https://github.com/") for s in log.sources) for log in logs)
    assert sum(log.root_cause_rank is not None and log.root_cause_rank != log.rank for log in logs) >= 2


def test_the_python_engine_names_every_initiating_rank(knowledge: Knowledge) -> None:
    rows, wrong = [], []
    for log in rank_logs():
        _, v = python_verdict(knowledge.spec, log.name, log.path.read_bytes())
        got = v.rank if v else None
        ok = got == log.rank
        if v is not None and log.root_cause_rank is not None and log.root_cause_rank != log.rank:
            ok = ok and v.disagrees is not None and f"names rank {log.root_cause_rank}" in v.disagrees
        if v is not None and log.root_cause_rank == log.rank:
            ok = ok and v.disagrees is None
        if v is not None and log.also:
            ok = ok and f"also named: {_span(list(log.also))}" in v.reason
        rows.append((log.name, log.rank, got, ok))
        if not ok:
            wrong.append(log.name)
    print(f"\n{'log':64} {'expect':>6} {'got':>5}  ok")
    for name, want, got, ok in rows:
        print(f"{name:64} {want:>6} {str(got):>5}  {'yes' if ok else 'NO'}")
    print(f"initiating rank named right: {len(rows) - len(wrong)}/{len(rows)}")
    assert not wrong, wrong


def test_the_cli_shows_the_rank_even_when_no_entry_matches() -> None:
    import subprocess
    import sys

    log = RANKLOG_DIR / "roboorchard_monitored_barrier_root_cause_names_rank1.log"
    out = subprocess.run([sys.executable, "-m", "generator", "diagnose", str(log)], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 1 and out.stdout.startswith("No known failure matched this log.")
    assert "Started on rank 0: rank 1 reached the barrier and waits for rank 0" in out.stdout
    assert "Note: torchrun's Root Cause (line 31) names rank 1" in out.stdout
