"""Which rank started it, in the browser engine: the same verdict as generator/diagnosis/ranks.py."""

from __future__ import annotations

from pathlib import Path

from browser import *  # noqa: F403
from generator.diagnosis.matcher import Matcher, rank_hits
from generator.diagnosis.ranks import RankScanner, initiating_rank
from logsets import labelled_logs
from test_ranklogs import python_verdict, rank_logs
from test_ranks import scenario_logs


def test_browser_engine_names_the_same_rank_as_python(browser, site_url: str, real_site: Path) -> None:
    ctx, page, spec = engine_page(browser, site_url, real_site, "diagnose-metrics.js", "diagnose-engine.js", "diagnose-ranks.js")
    logs = [(name, text) for name, text in scenario_logs().items()]
    logs += [(log.name, log.path.read_bytes().decode("utf-8", "replace")) for log in labelled_logs()]
    named = 0
    for name, text in logs:
        data = text.encode()
        m, scan = Matcher(spec, name), RankScanner()
        m.feed(data)
        scan.feed(data)
        m.close()
        scan.close()
        matches = rank_hits(spec, [m])
        py = initiating_rank(matches, scan)
        js = page.evaluate("([t, ms]) => initiatingRank(window.__spec, t, ms)", [text, [x.as_json() for x in matches]])
        assert js == (py.as_json() if py else None), name
        named += py is not None
    assert named >= 8
    ctx.close()


def test_browser_engine_names_every_initiating_rank_of_the_real_logs(browser, site_url: str, real_site: Path) -> None:
    """tests/ranklogs/: the browser engine gives the Python engine's verdict, and both name the right rank."""
    ctx, page, spec = engine_page(browser, site_url, real_site, "diagnose-metrics.js", "diagnose-engine.js", "diagnose-ranks.js")
    rows = []
    for log in rank_logs():
        data = log.path.read_bytes()
        text = data.decode("utf-8", "replace")
        matches, py = python_verdict(spec, log.name, data)
        js = page.evaluate("([t, ms]) => initiatingRank(window.__spec, t, ms)", [text, [x.as_json() for x in matches]])
        assert js == (py.as_json() if py else None), log.name
        rows.append((log.name, log.rank, py.rank if py else None, js["rank"] if js else None))
    print(f"\n{'log':64} {'expect':>6} {'python':>6} {'browser':>7}")
    for name, want, p_rank, j_rank in rows:
        print(f"{name:64} {want:>6} {str(p_rank):>6} {str(j_rank):>7}")
    right = sum(want == p_rank == j_rank for _, want, p_rank, j_rank in rows)
    print(f"initiating rank named right in both engines: {right}/{len(rows)}")
    assert right == len(rows) >= 15
    ctx.close()
