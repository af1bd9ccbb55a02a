"""Diagnosis accuracy on the development set in tests/devlogs/ (issue 17).

The set is sampled from issue threads the way users meet failures, so most of its logs show
failures no entry covers yet (`expect: null`, `covered: false`). The test prints the table and
the figures with `pytest -s` and holds two floors: no negative gets a first answer, and the
top-1 accuracy does not fall below the figure measured when the set was made (minus a margin).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from generator.site.build import load_catalog
from generator.diagnosis.matcher import Matcher, matcher_spec, rank_hits
from generator.site.pages import fingerprint_data
from logsets import DEVLOG_DIR, LabelledLog, labelled_logs

REPO = Path(__file__).resolve().parent.parent
ISSUE_URL = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$")
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

# Measured on the set as committed (168 logs, 49 entries): 159/168 right first over all logs,
# 39/48 over the labelled ones. After the entries of the second round (118 entries) and the
# fingerprint gaps found on this set: 168/168 over all logs, 66/66 over the labelled ones.
# The floors allow losing about one labelled log, no more.
FLOOR_ALL = 0.99
FLOOR_LABELLED = 0.98
# Issue 17's measure: the right entry first over all logs, the 26 negatives not counted as right.
# 20/168 with the 42 entries the set was made for, 109/168 with 181 entries, 141/168 with 213.
FLOOR_NAMED = 0.80


@pytest.fixture(scope="module")
def spec() -> dict:
    return matcher_spec(fingerprint_data(load_catalog(REPO / "entries")))


def diagnose_file(spec: dict, path: Path) -> list[str]:
    m = Matcher(spec, path.name)
    with path.open("rb") as f:
        while data := f.read(1 << 20):
            m.feed(data)
    m.close()
    return [hit.slug for hit in rank_hits(spec, [m])]


@pytest.fixture(scope="module")
def rows(spec) -> list[tuple[LabelledLog, list[str]]]:
    return [(log, diagnose_file(spec, log.path)) for log in labelled_logs(DEVLOG_DIR)]


def test_the_development_set_is_large_and_well_formed(spec) -> None:
    logs = labelled_logs(DEVLOG_DIR)
    assert len(logs) >= 150
    for log in logs:
        meta = yaml.safe_load(log.path.with_suffix(".yaml").read_text(encoding="utf-8"))
        assert log.expect is None or log.expect in spec["entries"], log.name
        assert all(c in spec["entries"] for c in log.collateral), log.name
        assert log.failure and KEBAB.match(log.failure), f"{log.name}: failure must be a kebab-case class name"
        sources = meta.get("sources") or []
        assert sources and all(ISSUE_URL.match(s) for s in sources), f"{log.name}: cite the issue thread(s)"
        assert meta.get("note"), log.name
        # covered says whether an entry exists; a labelled log is covered by definition.
        assert log.covered is (log.expect is not None), log.name
        assert not (log.negative and log.expect), log.name
    assert sum(log.negative for log in logs) >= len(logs) // 20


def top1(got: list[str]) -> str | None:
    return got[0] if got else None


def test_accuracy(rows) -> None:
    """The table and the figures are printed for `pytest -s`."""
    ok = [(log, got, top1(got) == log.expect) for log, got in rows]
    labelled = [r for r in ok if r[0].expect is not None]
    acc_all = sum(r[2] for r in ok) / len(ok)
    acc_lab = sum(r[2] for r in labelled) / len(labelled)
    wrong_negatives = [(r[0].name, r[1][:3]) for r in ok if r[0].negative and r[1]]
    wrong_uncovered = [(r[0].name, r[1][:3]) for r in ok if r[0].expect is None and not r[0].negative and r[1]]
    wrong_labelled = [(r[0].name, r[0].expect, r[1][:3]) for r in labelled if not r[2]]
    hits = sum(r[2] for r in labelled)
    print(f"\n{'log':56} {'expect':34} {'got':34} ok")
    for log, got, good in ok:
        print(f"{log.name:56} {str(log.expect):34} {str(top1(got)):34} {'yes' if good else 'NO'}")
    print(f"top-1 over all {len(ok)} logs: {acc_all:.1%} ({sum(r[2] for r in ok)}/{len(ok)}); "
          f"over the {len(labelled)} labelled: {acc_lab:.1%} ({sum(r[2] for r in labelled)}/{len(labelled)}); "
          f"negatives with a first answer: {len(wrong_negatives)}/{sum(r[0].negative for r in ok)}; "
          f"uncovered logs with a (wrong) first answer: {len(wrong_uncovered)}")
    print(f"coverage: {len(labelled)}/{len(ok)} logs show a failure an entry covers; "
          f"diagnose names it first for {hits}/{len(ok)} ({hits / len(ok):.1%} of all logs)")
    classes = Counter(log.failure for log, _ in rows)
    print("failure classes:", ", ".join(f"{c} {n}" for c, n in classes.most_common()))
    assert not wrong_negatives, wrong_negatives
    assert not wrong_uncovered, wrong_uncovered
    assert acc_all >= FLOOR_ALL, (acc_all, wrong_labelled)
    assert acc_lab >= FLOOR_LABELLED, (acc_lab, wrong_labelled)
    assert hits / len(ok) >= FLOOR_NAMED, (hits, len(ok))
