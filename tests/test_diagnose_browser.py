"""The /diagnose/ page and the browser engine, in real headless Chromium."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from browser import *  # noqa: F403
from generator.diagnosis.matcher import Matcher, rank_hits
from logsets import labelled_logs

METRIC_DIR = Path(__file__).resolve().parent / "metriclogs"
OOM_LINE = "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.20 GiB is free."


@pytest.fixture
def diagnose_page(browser, site_url: str):
    ctx = browser.new_context()
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(site_url + "diagnose/")
    wait_until(page, "document.querySelector('#diagnose-form').dataset.ready === 'true'")
    page.wait_for_load_state("networkidle")  # the favicon and the like: loading is over
    yield page
    assert errors == []
    ctx.close()


def wait_done(page, count: int = 1) -> None:
    wait_until(page, f"Number(document.querySelector('#diagnose-form').dataset.done || 0) >= {count}")


def test_pasted_log_is_matched_without_any_network_request(diagnose_page) -> None:
    page = diagnose_page
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    hostile = '<img src=x onerror="document.title=\'pwned\'"> <script>document.title="pwned"</script>'
    page.fill("#log-text", f"step 10 loss 2.1 {hostile}\n{OOM_LINE} {hostile}\n")
    page.click("#diagnose-form button[type=submit]")
    wait_done(page)
    assert requests == []
    first = page.locator(".match").first
    assert first.get_attribute("data-role") == "initiating"
    evidence = first.locator(".evidence").inner_text()
    assert "line 2 [rank 1]" in evidence and "<img src=x" in evidence
    assert page.locator("#diagnose-results img, #diagnose-results script").count() == 0
    assert page.title() != "pwned"
    top = page.locator(".top-match")
    assert "Recommended fix:" in top.inner_text()
    assert top.locator("a").get_attribute("href").endswith("/")


def test_no_match_state(diagnose_page) -> None:
    page = diagnose_page
    page.fill("#log-text", "ModuleNotFoundError: No module named 'wandb'\n")
    page.click("#diagnose-form button[type=submit]")
    wait_until(page, "document.querySelector('#diagnose-status').textContent.startsWith('No known failure')")
    assert page.locator(".match").count() == 0


def test_dropped_gzip_file_and_a_large_log_keep_the_page_responsive(diagnose_page, tmp_path: Path) -> None:
    page = diagnose_page
    gz = tmp_path / "train.log.gz"
    gz.write_bytes(gzip.compress(f"noise\n{OOM_LINE}\n".encode()))
    page.set_input_files("#log-file", str(gz))
    wait_done(page, 1)
    assert page.locator(".match").count() >= 1

    big = tmp_path / "big.log"
    line = "2024-05-01 12:00:00 | INFO | step 123456 | loss 1.2345 | lr 3.0e-4 | tokens/s 12345.6 | grad_norm 0.87\n"
    with big.open("w") as f:
        for _ in range(50 * 1024 * 1024 // len(line)):
            f.write(line)
        f.write(OOM_LINE + "\n")
    page.set_input_files("#log-file", str(big))
    # While the worker matches 50 MB, the page answers immediately.
    started = time.perf_counter()
    for _ in range(5):
        page.evaluate("1 + 1")
    assert time.perf_counter() - started < 2
    wait_done(page, 2)
    assert page.locator(".match").first.get_attribute("data-slug") is not None
    assert "line " in page.locator(".evidence").first.inner_text()


def test_browser_engine_ranks_every_test_log_like_python(browser, site_url: str, real_site: Path) -> None:
    """Parity: one matcher definition, two engines, the same ranking and evidence."""
    ctx, page, spec = engine_page(browser, site_url, real_site, "diagnose-metrics.js", "diagnose-engine.js")
    compared = series = 0
    for path in [log.path for log in labelled_logs()] + sorted(METRIC_DIR.glob("*.log")):
        data = path.read_bytes()
        m = Matcher(spec, path.name)
        m.feed(data)
        m.close()
        py = [x.as_json() for x in rank_hits(spec, [m])]
        js = page.evaluate("([t, n]) => diagnoseText(window.__spec, t, n)", [data.decode("utf-8", "replace"), path.name])
        assert js == py, path.name
        compared += 1
        series += sum(len(x["series"]) for x in py)
    assert compared >= 25 + 70 and series >= 35  # every firing metric log (tests/metriclogs) carries its series
    ctx.close()


def test_a_fired_numeric_fingerprint_is_drawn_as_a_chart_readable_on_a_dark_phone(browser, site_url: str) -> None:
    """The series of a rising grad norm is an inline SVG (role img, labelled, min/max on the axes,
    the fired lines marked) in the site's dark colours and within a 360 px screen; a log whose
    match has no series draws none."""
    ctx = browser.new_context(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True, color_scheme="dark")
    page = ctx.new_page()
    page.goto(site_url + "diagnose/")
    wait_until(page, "document.querySelector('#diagnose-form').dataset.ready === 'true'")
    page.fill("#log-text", (METRIC_DIR / "grad_norm--megatron--fires.log").read_text())
    page.click("#diagnose-form button[type=submit]")
    wait_done(page)
    chart = page.locator(".top-match svg.series-chart")
    assert chart.count() == 1 and chart.get_attribute("role") == "img"
    label = chart.get_attribute("aria-label")
    assert label.startswith("grad_norm over log lines 1 to 12 (12 readings)") and "rising fired at lines 10, 11, 12" in label
    assert chart.locator("title").first.text_content() == label
    texts = chart.locator("text").all_text_contents()
    assert "27.144" in texts and "1" in texts and "line 1" in texts and "line 12" in texts
    assert chart.locator("circle.fired").count() == 3
    box = chart.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 360
    stroke = page.evaluate("getComputedStyle(document.querySelector('.series-chart .series')).stroke")
    assert stroke == page.evaluate("getComputedStyle(document.querySelector('a')).color") or stroke == "rgb(138, 180, 248)", stroke
    page.fill("#log-text", OOM_LINE + "\n")
    page.click("#diagnose-form button[type=submit]")
    wait_done(page, 2)
    assert page.locator(".match").count() >= 1 and page.locator("svg.series-chart").count() == 0
    ctx.close()


def test_the_answer_card_reads_like_the_terminal_and_is_scrolled_to_on_a_phone(browser, site_url: str) -> None:
    """The initiating failure is the answer, with its first steps and the reason it beats a tie;
    the failure it caused is a consequence inside the card; after Diagnose, a phone shows the
    answer (scrolled to, focused), not the form."""
    from test_diagnose import FRAG_LINE, REAL_WATCHDOG

    ctx = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True)
    page = ctx.new_page()
    page.goto(site_url + "diagnose/")
    wait_until(page, "document.querySelector('#diagnose-form').dataset.ready === 'true'")
    page.fill("#log-text", f"[rank3]:     loss.backward()\n{FRAG_LINE}\n{REAL_WATCHDOG}\n")
    page.click("#diagnose-form button[type=submit]")
    wait_done(page)
    card = page.locator(".top-match")
    assert card.get_attribute("data-slug") == "cuda-memory-fragmentation" and card.get_attribute("data-role") == "initiating"
    text = card.inner_text()
    assert "The answer · strong: the log shows this failure's usual error text" in text and "0.60" not in text
    assert card.locator(".first-steps li").count() == 3
    assert "Why not CUDA out of memory?" in text and "2.31 GiB is reserved by PyTorch but unallocated" in card.locator(".tie").inner_text()
    assert card.locator(".consequences .match").first.get_attribute("data-slug") == "nccl-watchdog-timeout"
    assert "2.31 GiB is reserved by PyTorch but unallocated" in card.locator(".evidence").first.inner_text()
    assert page.locator(".others .match").first.get_attribute("data-slug") == "cuda-out-of-memory"
    assert page.evaluate("document.activeElement.classList.contains('top-match')")
    top = page.evaluate("document.querySelector('.top-match').getBoundingClientRect().top")
    assert -2 <= top < 200, top
    ctx.close()


def test_opened_from_a_file_the_page_says_to_serve_it(browser, real_site: Path) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto((real_site / "diagnose" / "index.html").as_uri())
    message = page.locator("#diagnose-nojs").inner_text()
    assert "needs JavaScript" not in message and "make serve" in message and "failpedia diagnose train.log" in message
    ctx.close()


def test_a_log_no_entry_matches_still_shows_the_rank_it_names(diagnose_page) -> None:
    # tests/ranklogs/horovod_bert_stalled_rank6.log: no entry covers Horovod's stall report, but it names rank 6.
    page = diagnose_page
    log = (Path(__file__).resolve().parent / "ranklogs" / "horovod_bert_stalled_rank6.log").read_text()
    page.fill("#log-text", log)
    page.click("#diagnose-form button[type=submit]")
    wait_until(page, "document.querySelector('#diagnose-status').textContent.startsWith('No known failure')")
    assert page.locator(".match").count() == 0
    assert page.locator(".started-rank").inner_text().startswith("Started on rank 6: the log names rank 6")


# Lines where a reader's shortcuts could go wrong: look-alike keys before the real one (a match
# that is not a whole key, then one that is), several readings on a line (the last counts), every
# non-finite spelling, numbers ending in "." or an exponent, units with a scaled key, quotes and
# brackets, validation prefixes, a clock and a fraction that are not readings, non-ASCII before
# the key. Real shapes: HF Trainer, Megatron, DeepSpeed, mmengine, Lightning (tests/metriclogs).
READER_CASES = [
    ("loss", "{'eval_loss': 2.0, 'loss': 1.5, 'epoch': 0.27}"),
    ("loss", "val loss: 2.0 | loss: 1.25 | test loss 9"),
    ("loss", "eval loss 3 loss 4 Eval loss 5"),
    ("loss", "nll_loss 3.9 loss_scale 8 loss 3."),
    ("loss", "loss: -inf"), ("loss", "loss=+Infinity"), ("loss", "loss: NaN, loss: 1e-3"), ("loss", "'loss': '-.5e+2'"),
    ("loss", "Train Loss: 0.5 train_loss_epoch=0.25 loss 7x"),
    ("loss", "épochs · loss 0.75 — ok"),
    ("loss_scale", "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768"),
    ("loss_scale", "reducing loss scale to 4096.0 loss scale 2048"),
    ("step_time", " iteration 100/ 500 | elapsed time per iteration (ms): 1870.5 | learning rate: 6.000E-05 |"),
    ("step_time", "Time 12:30:01 time 0.5s (0.6s) Time: 250 ms"),
    ("data_time", "Epoch: [0][14/5005]\tTime  3.612 (3.700)\tData  3.329 (3.329)"),
    ("memory_allocated", "MA 2.5 GB         Max_MA 13.1 GB         CA 14.0 GB memory: 10482"),
    ("memory_allocated", "memory_allocated(): 8.27 GiB allocated 512 KiB"),
    ("grad_norm", "lr=[0.0001] grad_norm=[ 1.77e+18] train/grad_norm 3"),
    ("grad_norm", "grad_norm_clip: none grad-norm: 2 gnorm 1.5/2"),
    ("learning_rate", "lr: 1.0000e-03  eta: 3:12:03"),
    ("throughput", "{'train_samples_per_second': 52.1, 'samples/s': 3}"),
]


def test_both_engines_read_the_same_quantities_on_look_alikes(browser, site_url: str, real_site: Path) -> None:
    """metrics.read and the browser's metricReader: the same value, start and end on every case."""
    from generator.core.metrics import read

    ctx, page, _ = engine_page(browser, site_url, real_site, "diagnose-metrics.js")
    js = page.evaluate("cases => { var read = metricReader(window.__spec.rules.metrics);"
                       " return cases.map(c => read(c[0], c[1])); }", READER_CASES)
    py = [None if (r := read(name, line)) is None else {"value": r.value, "start": r.start, "end": r.end} for name, line in READER_CASES]
    assert js == py
    assert sum(r is not None for r in py) >= 20 and any(r is not None and r["value"] is None for r in py)
    ctx.close()
