"""Several log files (one per rank or node) diagnosed as one story: the merge rules of
generator/diagnosis/logmerge.py, the multi-file cases of tests/ranklogs/multi/ (see tests/ranklogs/README.md)
in the Python engine, and `failpedia diagnose` given several files or a folder. The browser engine
is held to the same answers in tests/test_multifile_browser.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from generator.surfaces.knowledge import Knowledge
from generator.diagnosis.logmerge import diagnose_files, identify, merged_lines, natural_key, stamp
from generator.diagnosis.ranks import _span

REPO = Path(__file__).resolve().parent.parent
MULTI_DIR = Path(__file__).resolve().parent / "ranklogs" / "multi"


@dataclass(frozen=True)
class MultiCase:
    path: Path
    meta: dict

    @property
    def name(self) -> str:
        return self.path.name

    def files(self) -> list[tuple[str, bytes]]:
        """(path relative to the case folder, bytes), in the folder's listing order (not file order)."""
        return [(p.relative_to(self.path).as_posix(), p.read_bytes())
                for p in sorted(self.path.rglob("*"), reverse=True) if p.is_file() and p.name != "case.yaml"]


def multi_cases() -> list[MultiCase]:
    return [MultiCase(d, yaml.safe_load((d / "case.yaml").read_text(encoding="utf-8"))) for d in sorted(MULTI_DIR.iterdir())]


@pytest.fixture(scope="module")
def knowledge() -> Knowledge:
    return Knowledge.load(REPO / "entries")


def verdict_ok(case: MultiCase, v) -> bool:
    meta = case.meta
    if v is None:
        return False
    ok = v.rank == meta["initiating_rank"]
    if meta.get("origin"):
        ok = ok and v.origin is not None and v.origin.startswith(meta["origin"] + " (")
    rc = meta.get("root_cause_rank")
    if rc is not None and rc != v.rank:
        ok = ok and v.disagrees is not None and f"names rank {rc}" in v.disagrees
    if meta.get("also"):
        ok = ok and f"also named: {_span(list(meta['also']))}" in v.reason
    return ok


# --- the rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize("line, fields", [
    ("[rank3]:[E1130 02:23:19.811412913 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught", (11, 30, 2, 23, 19, 811412)),
    ("W0604 06:36:51.115000 3816208 torch/distributed/run.py:766] ****", (6, 4, 6, 36, 51, 115000)),
    ("2024-11-30 02:23:19,811 - INFO - step 10", (11, 30, 2, 23, 19, 811000)),
    ("[2024-11-30 02:23:19,811] [INFO] [comm.py:633:init_distributed] Initializing TorchBackend", (11, 30, 2, 23, 19, 811000)),
    ("gpu1504: [2023-03-24 10:26:51,118] [INFO] [launch.py:142:main] WORLD INFO DICT", (3, 24, 10, 26, 51, 118000)),
    ("slurmstepd: error: *** STEP 88123.0 ON node-3 CANCELLED AT 2024-11-30T02:23:19 ***", (11, 30, 2, 23, 19, 0)),
    ("[2025-02-22 08:19:45 TP26] Load weight begin. avail mem=78.38 GB", (2, 22, 8, 19, 45, 0)),
    ("Sat Nov 30 02:23:19 UTC 2024", (11, 30, 2, 23, 19, 0)),
])
def test_timestamps_of_every_format(line: str, fields: tuple[int, ...]) -> None:
    mon, day, h, m, s, us = fields
    assert stamp(line) == ((((mon - 1) * 31 + day - 1) * 24 + h) * 60 + m) * 60_000_000 + s * 1_000_000 + us


def test_no_timestamp_and_a_year_alone_are_not_times() -> None:
    assert stamp("[rank2]: torch.OutOfMemoryError: CUDA out of memory.") is None
    assert stamp("Epoch 2024: loss 0.1") is None


@pytest.mark.parametrize("path, rank, label", [
    ("rank3.log", 3, "rank 3"), ("logs/train_rank_12.txt", 12, "rank 12"), ("out/global_rank-7.log", 7, "rank 7"),
    ("logs/none_x/attempt_0/3/stderr.log", None, "local rank 3"), ("local_rank3.log", None, "local rank 3"),
    ("slurm-1234_4.out", None, "SLURM array task 4"), ("slurm-1234.out", None, "SLURM job 1234"),
    ("node-6.out", None, "node 6"), ("gpu1504.log", None, "host gpu1504"), ("train.log", None, None),
])
def test_a_files_rank_node_or_host_from_its_path(path: str, rank: int | None, label: str | None) -> None:
    src = identify(path)
    assert (src.rank, src.label) == (rank, label)


NAMES = ["rank10.log", "rank2.log", "rank1.log", "node-1/rank0.log", "rank0.log", "rank02.log",
         "run_20241130023319123456.log", "run_20241130023319123455.log"]  # digit runs past a double's precision


def test_natural_order_of_names() -> None:
    assert sorted(NAMES, key=natural_key) == ["node-1/rank0.log", "rank0.log", "rank1.log", "rank2.log", "rank02.log", "rank10.log",
                                              "run_20241130023319123455.log", "run_20241130023319123456.log"]


def test_merge_orders_by_time_keeps_each_files_order_and_line_numbers() -> None:
    a = b"preamble a\n[E1130 02:00:01.000000 x] a1\n  a1 traceback\n[E1130 02:00:03.000000 x] a3\n"
    b = b"[E1130 02:00:02.000000 x] b2\nb2 cont\n[E1130 02:00:00.000000 x] b0 out of order\n"
    chunks = lambda d: [d[i : i + 7] for i in range(0, len(d), 7)]  # chunk boundaries inside lines
    got = [(i, n, line.decode()) for i, n, line in merged_lines([chunks(a), chunks(b)])]
    assert got == [
        (0, 1, "preamble a"), (0, 2, "[E1130 02:00:01.000000 x] a1"), (0, 3, "  a1 traceback"),
        (1, 1, "[E1130 02:00:02.000000 x] b2"), (1, 2, "b2 cont"),
        (1, 3, "[E1130 02:00:00.000000 x] b0 out of order"),  # never moved before its file's earlier lines
        (0, 4, "[E1130 02:00:03.000000 x] a3"),
    ]


def test_files_without_timestamps_are_concatenated_in_file_order() -> None:
    got = [(i, n) for i, n, _ in merged_lines([[b"x\ny\n"], [b""], [b"z"]])]
    assert got == [(0, 1), (0, 2), (2, 1)]


# --- the cases ---------------------------------------------------------------------------------


def test_the_multi_file_set_is_real_and_adversarial() -> None:
    cases = multi_cases()
    real = [c for c in cases if not c.name.startswith("adv_")]
    assert len(real) >= 6 and len(cases) - len(real) >= 4
    assert all(c.meta["sources"] and all(s.startswith("https://github.com/") for s in c.meta["sources"]) for c in cases)
    assert all(len(c.files()) >= 2 for c in cases)


def test_the_python_engine_names_every_initiating_rank_of_the_multi_file_cases(knowledge: Knowledge) -> None:
    rows, wrong = [], []
    for case in multi_cases():
        files = case.files()
        texts = dict(files)
        matches, v, _ = diagnose_files(knowledge.spec, files, chunk=4093)
        ok = verdict_ok(case, v)
        # every evidence line is its own file's line, at its own number
        for m in matches:
            for e in m.evidence:
                line = texts[e.file].decode("utf-8", "replace").split("\n")[e.line - 1]
                ok = ok and e.matched in line and all(part in line for part in e.text.split("\u2026"))  # elided: each piece
        for file, line, text in v.lines if v else ():
            ok = ok and text.strip()[:60] in texts[file].decode("utf-8", "replace").split("\n")[line - 1]
        rows.append((case.name, case.meta["initiating_rank"], v.rank if v else None, v.origin if v else None, ok))
        if not ok:
            wrong.append(case.name)
    print(f"\n{'case':48} {'expect':>6} {'got':>5}  ok")
    for name, want, got, origin, ok in rows:
        print(f"{name:48} {str(want):>6} {str(got if got is not None else origin):>5}  {'yes' if ok else 'NO'}")
    print(f"initiating rank named right: {len(rows) - len(wrong)}/{len(rows)}")
    assert not wrong, wrong


# --- the command -------------------------------------------------------------------------------


def test_cli_diagnoses_a_folder_with_file_and_line_evidence(run_cli, sample: Path) -> None:
    case = MULTI_DIR / "msswift_6301_slurm_array_per_node"
    code, out, err = run_cli("diagnose", "--entries", str(sample), str(case))
    assert code == 0 and "Traceback" not in err
    assert out.startswith("Merged 4 files in time order: ")
    assert "Started on rank 11: rank 11 printed GPU OOM" in out
    assert f"{case / 'slurm-88123_2.out'}:9 [rank 11]" in out  # evidence: file:line, the line's own rank
    assert f"Note: torchrun's Root Cause ({case / 'slurm-88123_0.out'}:27) names rank 0" in out


def test_cli_json_names_the_files_and_a_local_rank_honestly(run_cli, sample: Path) -> None:
    import json

    case = MULTI_DIR / "llamafactory_7967_torchrun_log_dir"
    code, out, _ = run_cli("diagnose", "--json", "--entries", str(sample), str(case))
    data = json.loads(out)
    v = data["initiating_rank"]
    assert code == 0 and v["rank"] is None and v["origin"].startswith("local rank 0 (")
    assert v["lines"][0]["file"].endswith("attempt_0/0/stderr.log")
    assert {f["label"] for f in data["files"]} >= {"local rank 0", "local rank 1"}


def test_cli_bad_paths_say_what_to_do(run_cli, sample: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "model.log").write_bytes(b"\x00\x01binary")
    many = tmp_path / "many"
    many.mkdir()
    for k in range(1025):
        (many / f"rank{k}.log").write_text("x\n")
    binary = tmp_path / "core.log"
    binary.write_bytes(b"\x7fELF\x00\x00")
    ok = tmp_path / "rank0.log"
    ok.write_text("fine\n")
    for args, message in [
        ([str(ok), str(tmp_path / "rank*.log")], "rank*.log: cannot read: No such file or directory; check the path"),
        ([str(empty)], f"{empty}: no log files in this folder or below it; pass the log files themselves"),
        ([str(tmp_path / "bin")], "no log files in this folder or below it (1 binary files passed over)"),
        ([str(many)], f"{many}: more than 1,024 log files in this folder and below it; pass the files of one job"),
        ([str(ok), str(binary)], f"{binary}: looks like a binary file, not a text log"),
        (["--follow", str(ok), str(ok)], "--follow takes exactly one log file"),
    ]:
        code, _, err = run_cli("diagnose", "--entries", str(sample), *args)
        assert code == 2 and message in err and "Traceback" not in err, (args, err)


def test_cli_shows_the_line_that_names_the_rank_when_no_entry_matches(run_cli, sample: Path) -> None:
    case = MULTI_DIR / "nccl_849_second_node_printed_nothing"
    code, out, _ = run_cli("diagnose", "--entries", str(sample), str(case / "node0.log"), str(case / "node1.log"))
    assert code == 1 and "No known failure matched this log." in out
    assert "Started on rank 4: the log names rank 4 as the one that never reached the collective" in out
    assert f"  {case / 'node0.log'}:13  RuntimeError: [Rank 0]: Ranks 4, 5, 6, 7 failed to pass monitoredBarrier" in out


def test_evidence_keeps_its_file_and_line_across_matcher_batches(knowledge: Knowledge, monkeypatch: pytest.MonkeyPatch) -> None:
    """The merged lines reach the matcher in batches; evidence found in one batch (or waiting for
    `near` into the next) keeps the file and line it came from."""
    import generator.diagnosis.logmerge as logmerge

    cases = [c for c in multi_cases() if c.name.startswith(("msswift", "funasr", "llamafactory"))]
    whole = {c.name: diagnose_files(knowledge.spec, c.files())[:2] for c in cases}
    monkeypatch.setattr(logmerge, "BATCH_LINES", 4)
    for case in cases:
        assert diagnose_files(knowledge.spec, case.files())[:2] == whole[case.name], case.name


def series_files() -> list[tuple[str, bytes]]:
    """A grad norm that climbs in rank 1's log, while rank 0's holds other lines in between."""
    climb = (REPO / "tests" / "metriclogs" / "grad_norm--hf-trainer--fires.log").read_bytes()
    stamped = b"".join(b"[2024-11-30 02:23:%02d,000] " % (2 * k + 1) + line + b"\n" for k, line in enumerate(climb.splitlines()))
    other = b"".join(b"[2024-11-30 02:23:%02d,000] step done\n" % (2 * k) for k in range(len(climb.splitlines())))
    return [("rank0.log", other), ("rank1.log", stamped)]


def test_a_series_from_one_file_is_told_in_that_files_lines(knowledge: Knowledge) -> None:
    """Numeric evidence is placed like any other: a series read from one file carries that file
    and its line numbers; one whose readings come from several files keeps the merged log's."""
    files = series_files()
    matches, _, _ = diagnose_files(knowledge.spec, files)
    series = [s for m in matches for s in m.series]
    assert series and all(s["file"] == "rank1.log" for s in series)
    lines = files[1][1].decode().split("\n")
    assert all(str(p[1]).rstrip("0").rstrip(".") in lines[p[0] - 1] or p[1] is None for s in series for p in s["points"])
    assert [p[0] for p in series[0]["points"]] == list(range(1, len(series[0]["points"]) + 1))
    both = [files[1], ("rank2.log", files[1][1].replace(b"02:23:", b"02:24:"))]  # the climb again, later
    matches, _, _ = diagnose_files(knowledge.spec, both)
    assert [s["file"] for m in matches for s in m.series] and all(s["file"] == "merged" for m in matches for s in m.series)


def pdsh_files() -> list[tuple[str, bytes]]:
    """DeepSpeed's multi-node runner (pdsh) prefixes each line with its host; one file per node."""
    from test_ranks import enqueued, watchdog

    a = [f"gpu1504: {watchdog(r, 1580)}" for r in (0, 1)] + [f"gpu1504: {enqueued(r, 1580, 1582, 1579)}" for r in (0, 1)]
    b = [f"gpu1505: {watchdog(3, 1580)}", f"gpu1505: {enqueued(3, 1580, 1582, 1579)}", f"gpu1505: {enqueued(2, 1579, 1579, 1578)}"]
    return [("out/launcher-node0.txt", ("\n".join(a) + "\n").encode()), ("out/launcher-node1.txt", ("\n".join(b) + "\n").encode())]


def test_a_host_prefix_says_where_the_rank_runs(knowledge: Knowledge) -> None:
    _, v, sources = diagnose_files(knowledge.spec, pdsh_files())
    assert v is not None and (v.rank, v.host) == (2, "gpu1505") and "last enqueued work was 1579" in v.reason
    assert v.lines[0][:2] == ("out/launcher-node1.txt", 3)
    assert [s.label for s in sources] == ["node 0", "node 1"]
