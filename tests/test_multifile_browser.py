"""Several log files in the browser: diagnose-merge.js merges them by the rules of
generator/diagnosis/logmerge.py, and the page's file input takes several files at once."""

from __future__ import annotations

from pathlib import Path

from browser import *  # noqa: F403
from generator.diagnosis.logmerge import diagnose_files, natural_key
from test_diagnose_browser import diagnose_page, wait_done  # noqa: F401 (a fixture)
from test_multifile import MULTI_DIR, NAMES, multi_cases, pdsh_files, series_files, verdict_ok

MERGE_AND_DIAGNOSE = """([files]) => {
  const spec = window.__spec;
  const merged = mergeLogs(spec, files);
  const matches = remapEvidence(merged, diagnoseText(spec, merged.text, "merged"));
  return { matches: matches, rank: initiatingRank(spec, merged.text, matches, "merged", merged) };
}"""


def test_browser_engine_merges_and_names_the_same_rank_as_python(browser, site_url: str, real_site: Path) -> None:
    """tests/ranklogs/multi/: the same matches, evidence files and lines, and verdict in both engines."""
    ctx, page, spec = engine_page(browser, site_url, real_site, "diagnose-metrics.js", "diagnose-engine.js", "diagnose-ranks.js", "diagnose-merge.js")
    def same(name: str, files: list[tuple[str, bytes]]):
        matches, py, _ = diagnose_files(spec, files)
        js = page.evaluate(MERGE_AND_DIAGNOSE, [[{"name": n, "text": d.decode("utf-8", "replace")} for n, d in files]])
        assert js["matches"] == [m.as_json() for m in matches], name
        assert js["rank"] == (py.as_json() if py else None), name
        return py

    assert same("pdsh host prefixes", pdsh_files()).host == "gpu1505"
    same("a series in one file", series_files())
    assert page.evaluate("names => names.slice().sort(naturalCompare)", NAMES) == sorted(NAMES, key=natural_key)
    rows = [(case.name, verdict_ok(case, same(case.name, case.files()))) for case in multi_cases()]
    print(f"\ninitiating rank named right in both engines: {sum(ok for _, ok in rows)}/{len(rows)}")
    assert all(ok for _, ok in rows), [name for name, ok in rows if not ok]
    ctx.close()


def test_the_page_takes_several_files_and_shows_file_and_line(diagnose_page) -> None:
    page = diagnose_page
    case = MULTI_DIR / "msswift_6301_slurm_array_per_node"
    page.set_input_files("#log-file", [str(p) for p in sorted(case.glob("slurm-*.out"))])
    wait_done(page)
    assert "of 4 files merged in time order" in page.locator("#diagnose-status").inner_text()
    top = page.locator(".top-match")
    assert "Started on rank 11: rank 11 printed" in top.locator(".started-rank").inner_text()
    assert top.locator(".rank-lines").count() == 0  # the line that shows it is the evidence's first, shown once
    assert "slurm-88123_2.out:9 [rank 11]" in top.locator(".evidence").first.inner_text()
    assert "Root Cause (slurm-88123_0.out:27) names rank 0" in top.locator(".root-cause-note").inner_text()


def test_dropping_several_files_merges_them(diagnose_page) -> None:
    page = diagnose_page
    case = MULTI_DIR / "adv_vllm_6042_culprit_file_empty"
    files = [[p.name, p.read_text()] for p in sorted(case.glob("rank*.log"))]
    page.evaluate("""files => {
      const dt = new DataTransfer();
      files.forEach(([name, text]) => dt.items.add(new File([text], name)));
      document.querySelector("#drop-zone").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
    }""", files)
    wait_done(page)
    assert "of 4 files merged in time order" in page.locator("#diagnose-status").inner_text()
    assert "its log file rank3.log is empty" in page.locator(".started-rank").inner_text()
