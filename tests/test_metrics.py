"""Metrics read from any log format (generator/core/metrics.py), the numeric fingerprints over them,
the series a match carries and the terminal's sparkline. tests/metriclogs/README.md cites the
formats; the browser engine reads the same series (test_diagnose_browser.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from conftest import sample_files, valid_entry, write_tree
from generator.site.build import load_catalog
from generator.diagnosis.matcher import Match, Matcher, matcher_spec, rank_hits
from generator.core.metrics import SERIES_CAP, Series, read, sparkline
from generator.site.pages import fingerprint_data

REPO = Path(__file__).resolve().parent.parent
METRIC_DIR = REPO / "tests" / "metriclogs"
SLUG = {
    "grad_norm": "exploding-gradients", "memory_allocated": "memory-leak-accumulated-graph", "data_time": "dataloader-bottleneck",
    "loss_scale": "loss-scale-collapse", "loss": "nan-loss-fp16-overflow",
}


@pytest.fixture(scope="module")
def spec() -> dict:
    return matcher_spec(fingerprint_data(load_catalog(REPO / "entries")))


@pytest.mark.parametrize("name, line, value", [
    ("grad_norm", " iteration 1210/ 300000 | lm loss: 4.131107E+00 | loss scale: 1.0 | grad norm: 118.302 | number of skipped", 118.302),
    ("loss", " iteration 1210/ 300000 | lm loss: 4.131107E+00 | loss scale: 1.0 | grad norm: 118.302 |", 4.131107),
    ("loss_scale", " iteration 1210/ 300000 | lm loss: 4.131107E+00 | loss scale: 1.0 | grad norm: 118.302 |", 1.0),
    ("grad_norm", "{'loss': '14.02', 'grad_norm': '1.771e+18', 'learning_rate': '2e-05', 'epoch': '0.01'}", 1.771e18),
    ("loss", "{'loss': nan, 'grad_norm': nan, 'learning_rate': 2.0e-05, 'epoch': 0.27}", None),
    ("loss", "| epoch 001 | loss 4.1 | nll_loss 3.9 | gnorm 1.2 | loss_scale 8 |", 4.1),
    ("loss_scale", "| epoch 001 | loss 4.1 | nll_loss 3.9 | gnorm 1.2 | loss_scale 8 |", 8.0),
    # the new scale, not the attempted one (rule 4)
    ("loss_scale", "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 64, reducing to 32", 32.0),
    ("loss_scale", "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 4096.0", 4096.0),
    ("learning_rate", "[Rank 0] step=10, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]", 0.0001),
    ("step_time", "Epoch: [0][ 100/5005]\tTime  3.612 (3.700)\tData  3.329 (3.329)", 3.612),  # current, not average
    ("step_time", "Train: 0 [ 50/1251 (  4%)]  Loss: 6.912 (6.92)  Time: 0.935s,  273.80/s  (0.989s,  258.88/s)", 0.935),
    ("step_time", " iteration 100/ 500 | elapsed time per iteration (ms): 1870.5 | learning rate: 6.000E-05 |", 1.8705),
    ("data_time", "Epoch(train)  [1][ 450/2000]  lr: 1.0000e-03  eta: 3:12:03  time: 1.4415  data_time: 1.2123  memory: 10482", 1.2123),
    ("step_time", "Epoch(train)  [1][ 450/2000]  lr: 1.0000e-03  eta: 3:12:03  time: 1.4415  data_time: 1.2123  memory: 10482", 1.4415),
    ("memory_allocated", "Epoch(train)  [1][ 450/2000]  time: 1.4415  data_time: 1.2123  memory: 10482  loss: 0.8121", 10482.0),
    ("memory_allocated", "[utils.py:803:see_memory_usage] MA 2.5 GB         Max_MA 13.1 GB         CA 14.0 GB", 2560.0),
    ("loss", "Epoch 0:  50%| 50/100 [00:10<00:10, 4.81it/s, loss=0.123, v_num=1, train_loss_step=0.119]", 0.119),
    ("loss", "Time 12:30:01 loss: NAN", None),
    ("loss", '{"train/loss": 2.31, "train/grad_norm": 3.4}', 2.31),
    ("grad_norm", '{"train/loss": 2.31, "train/grad_norm": 3.4}', 3.4),
    ("throughput", "{'train_runtime': 100.0, 'train_samples_per_second': 52.1, 'epoch': 3.0}", 52.1),
])
def test_a_quantity_is_read_from_every_format(name, line, value) -> None:
    got = read(name, line)
    assert got is not None
    assert got.value == (pytest.approx(value) if value is not None else None)


@pytest.mark.parametrize("name, line", [
    ("loss", "{'eval_loss': 2.0, 'epoch': 0.27}"),          # a validation figure is not the training loss
    ("loss", "val loss: 2.0, test loss: 1.9"),
    ("loss", "{'val/loss': 2.0}"),
    ("loss", "loss_scale 8 | nll_loss 3.2"),                 # other quantities whose names contain loss
    ("loss", "loss scale: 65536.0"),
    ("step_time", "Epoch: [0][14/5005] eta: 0:12:03 data_time: 0.3"),  # data_time is not time
    ("step_time", "Time 12:30:01 started"),                 # a clock, not a duration
    ("grad_norm", "grad_norm_clip: none"),
    ("memory_allocated", "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB. Process has 78.2 GiB memory in use."),
])
def test_look_alikes_are_not_read(name, line) -> None:
    assert read(name, line) is None


def test_series_stays_bounded_and_thins_deterministically() -> None:
    s = Series()
    for n in range(1, 100_001):
        s.add(n, float(n))
    assert SERIES_CAP // 2 <= len(s.points) <= SERIES_CAP
    gaps = {b[0] - a[0] for a, b in zip(s.points, s.points[1:])}
    assert gaps == {s.stride}  # evenly spaced
    assert s.points[0] == [1, 1.0]


def test_sparkline_scales_and_falls_back_to_ascii() -> None:
    assert sparkline([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]) == "▁▂▃▄▅▆▇█"
    assert sparkline([1.0, 1.0, None]) == "▁▁!"
    line = sparkline([float(v) for v in range(1000)], width=40)
    assert len(line) == 40 and line[0] == "▁" and line[-1] == "█"
    assert sparkline([1.0, 8.0], ascii_only=True).isascii()


def diagnose_all(spec: dict, paths: list[Path]) -> list[list[Match]]:
    """Each log on its own, from one fresh matcher's snapshot (building a matcher costs more than
    matching these short logs)."""
    fresh = Matcher(spec)
    out = []
    for path in paths:
        m = fresh.snapshot()
        m.file = path.name
        m.feed(path.read_bytes())
        m.close()
        out.append(rank_hits(spec, [m]))
    return out


def _metric_logs() -> list[tuple[Path, dict]]:
    return [(p, yaml.safe_load(p.with_suffix(".yaml").read_text())) for p in sorted(METRIC_DIR.glob("*.log"))]


def test_each_numeric_fingerprint_fires_on_six_formats_and_not_on_healthy_runs(spec) -> None:
    formats: dict[str, set[str]] = {}
    wrong = []
    logs = _metric_logs()
    for (path, meta), got in zip(logs, diagnose_all(spec, [p for p, _ in logs])):
        slug = SLUG[meta["metric"]]
        if meta["fires"]:
            if not got or got[0].slug != slug or not got[0].series:
                wrong.append((path.name, [m.slug for m in got][:3]))
                continue
            series = got[0].series[0]
            assert series["fired"] and all(f[0] in {e.line for e in got[0].evidence} | {f[0]} for f in series["fired"])
            formats.setdefault(meta["metric"], set()).add(meta["format"])
        elif slug in [m.slug for m in got]:
            wrong.append((path.name, [m.slug for m in got][:3]))
    assert wrong == []
    assert set(formats) == set(SLUG) and all(len(f) >= 6 for f in formats.values()), formats


def test_a_nan_loss_names_fp16_overflow_only_with_fp16_nearby(spec, tmp_path: Path) -> None:
    fires = METRIC_DIR / "loss--hf-trainer--fires.log"
    bare = tmp_path / "no-fp16.log"
    bare.write_text("".join(fires.read_text().splitlines(keepends=True)[1:]))  # without its fp16 line
    with_fp16, without = diagnose_all(spec, [fires, bare])
    assert with_fp16[0].slug == "nan-loss-fp16-overflow"
    assert "nan-loss-fp16-overflow" not in [m.slug for m in without]


def _entry_with(tmp_path: Path, **fp) -> Path:
    files = sample_files()
    files["memory/gpu-oom.yaml"] = valid_entry(title="GPU OOM", related=["ddp-oom"], fingerprints=[{"strength": "strong", **fp}])
    return write_tree(tmp_path / "entries", files)


@pytest.mark.parametrize("fp, message", [
    ({"metric": "gradnorm", "rising": True, "examples": ["grad_norm 1.0"]}, "unknown quantity 'gradnorm' (did you mean 'grad_norm'?)"),
    ({"metric": "grad_norm", "examples": ["grad_norm 1.0"]}, "a metric needs a check"),
    ({"metric": "grad_norm", "rising": True, "nonfinite": True, "examples": ["grad_norm 1.0"]}, "exactly one check, not rising and nonfinite"),
    ({"metric": "data_time", "share_above": 0.5, "examples": ["data_time 1.0"]}, "share_above with a metric needs of:"),
    ({"metric": "loss", "nonfinite": True, "times": 3, "examples": ["loss 1.0"]}, "times does not apply to nonfinite"),
    ({"pattern": "grad norm: (\\d+)", "falls_to": 1, "examples": ["grad norm: 1"]}, "falls_to needs a metric"),
    ({"pattern": "grad norm: (\\d+)", "metric": "grad_norm", "rising": True, "examples": ["grad norm: 1"]}, "either a pattern"),
    ({"metric": "grad_norm", "rising": True, "examples": ["the gradient exploded"]}, "examples[0]: no grad_norm value can be read"),
])
def test_metric_fingerprints_are_checked_with_a_position(run_cli, tmp_path: Path, fp, message) -> None:
    root = _entry_with(tmp_path, **fp)
    code, out, _ = run_cli("check", "--entries", str(root))
    assert code == 1
    line = next(x for x in out.splitlines() if message in x)
    assert "gpu-oom.yaml:" in line and line.split(":")[1].isdigit() and line.split(":")[2].isdigit(), line


def test_the_cli_shows_a_sparkline_and_json_carries_the_series(run_cli, tmp_path: Path) -> None:
    log = str(METRIC_DIR / "grad_norm--megatron--fires.log")
    root = _entry_with(tmp_path, metric="grad_norm", rising=True, times=10, examples=["step 1 grad_norm 3.4"])
    code, out, _ = run_cli("diagnose", "--entries", str(root), log)
    assert code == 0
    assert "grad_norm over lines 1-12 (12 readings; rising fired at lines 10, 11, 12):" in out
    spark = next(x for x in out.splitlines() if "first 1, last" in x)
    assert "█" in spark and "max 27.14" in spark
    code, out, _ = run_cli("diagnose", "--json", "--entries", str(root), log)
    series = json.loads(out)["matches"][0]["series"][0]
    assert series["metric"] == "grad_norm" and series["check"] == "rising" and len(series["points"]) == 12
    assert [p[0] for p in series["fired"]] == [10, 11, 12]


def test_the_sparkline_is_ascii_where_stdout_cannot_print_blocks() -> None:
    from generator.surfaces.commands.diagnose import _series_lines
    m = Match("x", "X", "", 6, 0.6, "initiating", (), series=({
        "fingerprint": "x#0", "file": "-", "check": "rising", "metric": "grad_norm", "readings": 3,
        "points": [[1, 1.0], [2, 2.0], [3, 3.0]], "fired": [[3, 3.0]]},))
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    _series_lines(m, "", out, several=False)
    out.flush()
    text = out.buffer.getvalue().decode("ascii")  # type: ignore[attr-defined]
    assert "grad_norm over lines 1-3" in text and "first 1, last 3, max 3" in text


@pytest.mark.parametrize("log, first", [
    ("trainer-worker-0   0/1     OOMKilled   2 (30s ago)   4m12s\n", "host-oom-killer"),  # kubectl get pods
    ('        "reason": "OOMKilled",\n', "host-oom-killer"),  # kubectl get pod -o json
    ("srun: error: gpu-node-12: task 0: Out Of Memory\n", "host-oom-killer"),
    ("step 100 loss 2.31\nKilled\n", None),  # the shell's line alone: any kill -9 prints it (supporting)
    ("Killed\n[1234567.890123] Out of memory: Killed process 48213 (python) total-vm:98303152kB, anon-rss:61530124kB\n", "host-oom-killer"),
])
def test_container_and_scheduler_kills_count_for_the_host_oom_killer(spec, tmp_path: Path, log, first) -> None:
    path = tmp_path / "kill.log"
    path.write_text(log)
    got = [m.slug for m in diagnose_all(spec, [path])[0]]
    assert (got[0] if got else None) == first, got
