"""Diagnosis accuracy on the labelled real-world logs in tests/logs/ (the bar of issue 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.site.build import load_catalog
from generator.diagnosis.matcher import Matcher, matcher_spec, rank_hits
from generator.site.pages import fingerprint_data
from logsets import labelled_logs

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def spec() -> dict:
    return matcher_spec(fingerprint_data(load_catalog(REPO / "entries")))


def diagnose_file(spec: dict, path: Path):
    m = Matcher(spec, path.name)
    with path.open("rb") as f:
        while data := f.read(1 << 20):
            m.feed(data)
    m.close()
    return rank_hits(spec, [m])


def test_the_log_set_is_large_and_labelled_with_real_entries(spec) -> None:
    logs = labelled_logs()
    assert len(logs) >= 25
    for log in logs:
        assert log.expect is None or log.expect in spec["entries"], log.name
        assert all(c in spec["entries"] for c in log.collateral), log.name
        sidecar = log.path.with_suffix(".yaml").read_text()
        assert "sources:" in sidecar and "http" in sidecar, f"{log.name}: cite the public source"
    assert sum(log.expect is None for log in logs) >= 4
    assert len({log.expect for log in logs if log.expect}) >= 20


def test_accuracy(spec) -> None:
    rows = []
    for log in labelled_logs():
        matches = diagnose_file(spec, log.path)
        got = [m.slug for m in matches]
        top1 = got[0] if got else None
        rows.append((log, got, top1 == log.expect, log.expect is None and not got or log.expect in got[:3]))
    positives = [r for r in rows if r[0].expect is not None]
    top1 = sum(r[2] for r in positives) / len(positives)
    top3 = sum(r[3] for r in positives) / len(positives)
    # captured: shown with `pytest -s` (and when the test fails), not in the middle of `make test`'s dots
    print(f"\n{'log':44} {'expected':34} {'top result':34} ok")
    for log, got, ok1, ok3 in rows:
        print(f"{log.name:44} {str(log.expect):34} {str(got[0] if got else None):34} {'yes' if ok1 else 'top3' if ok3 else 'NO'}")
    print(f"top-1 accuracy {top1:.0%} ({sum(r[2] for r in positives)}/{len(positives)}), top-3 {top3:.0%}; "
          f"negatives with no match: {sum(not r[1] for r in rows if r[0].expect is None)}/{sum(r[0].expect is None for r in rows)}")
    misses = [(r[0].name, r[0].expect, r[1][:3]) for r in rows if not r[3]]
    assert not misses, misses
    wrong_negatives = [(r[0].name, r[1]) for r in rows if r[0].expect is None and r[1]]
    assert not wrong_negatives
    assert top1 >= 0.9


def test_collateral_failures_are_not_rivals(spec) -> None:
    for log in labelled_logs():
        if not log.collateral or log.expect is None:
            continue
        matches = diagnose_file(spec, log.path)
        roles = {m.slug: m.role for m in matches}
        assert roles.get(log.expect) == "initiating", (log.name, roles)
        for c in log.collateral:
            assert roles.get(c, "collateral") == "collateral", (log.name, c, roles)
