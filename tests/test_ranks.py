"""Which rank started it: the rules of generator/diagnosis/ranks.py on logs shaped like the public threads."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.diagnosis.matcher import Matcher, rank_hits, matcher_spec
from generator.surfaces.knowledge import Knowledge
from generator.diagnosis.ranks import RankScanner, initiating_rank

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def knowledge() -> Knowledge:
    return Knowledge.load(REPO / "entries")


def watchdog(rank: int, seq: int, op: str = "ALLREDUCE", ts: str = "E626 06:24:44.903881913") -> str:
    return (f"[rank{rank}]:[{ts} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.")


def enqueued(rank: int, at: int, last: int, done: int, pg: str = "PG ID 0 PG GUID 0(default_pg)") -> str:
    return (f"[rank{rank}]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [{pg} Rank {rank}] Exception (either an error or "
            f"timeout) detected by watchdog at work: {at}, last enqueued NCCL work: {last}, last completed NCCL work: {done}.")


def verdict(knowledge: Knowledge, lines: list[str]):
    data = ("\n".join(lines) + "\n").encode()
    m, scan = Matcher(knowledge.spec, "train.log"), RankScanner()
    for i in range(0, len(data), 97):  # chunk boundaries inside lines
        m.feed(data[i : i + 97])
        scan.feed(data[i : i + 97])
    m.close()
    scan.close()
    return rank_hits(knowledge.spec, [m]), initiating_rank(rank_hits(knowledge.spec, [m]), scan)


OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total capacity of 79.15 GiB of which 1.03 GiB is free."


def test_an_oom_on_one_rank_under_the_others_timeouts(knowledge: Knowledge) -> None:
    lines = ["[rank2]: Traceback (most recent call last):", f"[rank2]: {OOM}"]
    lines += [watchdog(r, 808) for r in (0, 1, 3)] + [enqueued(r, 808, 811, 807) for r in (0, 1, 3)]
    lines += [
        "Root Cause (first observed failure):", "[0]:", "  time      : 2025-06-26_06:24:45",
        "  host      : node-1", "  rank      : 0 (local_rank: 0)", "  exitcode  : -6 (pid: 80746)",
    ]
    matches, v = verdict(knowledge, lines)
    assert matches[0].slug == "cuda-out-of-memory" and v is not None
    assert v.rank == 2 and "rank 2 printed CUDA out of memory" in v.reason
    assert v.disagrees is not None and "names rank 0, the first to exit" in v.disagrees


def test_the_rank_whose_last_enqueued_work_is_behind_never_entered_the_collective(knowledge: Knowledge) -> None:
    lines = [watchdog(r, 1580) for r in (0, 1, 3)] + [enqueued(r, 1580, 1582, 1579) for r in (0, 1, 3)]
    lines += [enqueued(2, 1579, 1579, 1578)]  # rank 2 timed out on nothing new: it never enqueued 1580
    matches, v = verdict(knowledge, lines)
    assert matches[0].slug == "nccl-watchdog-timeout" and v is not None
    assert v.rank == 2 and "last enqueued work was 1579" in v.reason and v.lines


def test_a_rank_stuck_in_an_earlier_collective_is_behind(knowledge: Knowledge) -> None:
    lines = [watchdog(r, 2070, "ALLREDUCE") for r in (0, 1, 2, 4, 5, 6, 7)] + [watchdog(3, 2069, "BROADCAST")]
    _, v = verdict(knowledge, lines)
    assert v is not None and v.rank == 3 and "BROADCAST SeqNum 2069" in v.reason and "0-2, 4-7" in v.reason


def test_a_silent_rank_is_named_only_when_nccl_gave_the_world_size(knowledge: Knowledge) -> None:
    init = [f"node-{1 + r // 4}:5211{r}:5281{r} [{r % 4}] NCCL INFO comm 0x55d0c3f0 rank {r} nranks 8 cudaDev {r % 4} busId 1b000 - Init COMPLETE"
            for r in range(8)]
    timeouts = [watchdog(r, 5) for r in range(8) if r != 6]
    _, v = verdict(knowledge, init + timeouts)
    assert v is not None and v.rank == 6 and v.host == "node-2" and "reported no timeout" in v.reason
    _, v = verdict(knowledge, timeouts)  # an excerpt without the world size accuses nobody
    assert v is None


def test_every_rank_in_the_same_collective_names_no_one(knowledge: Knowledge) -> None:
    lines = [watchdog(r, 808) for r in range(4)] + [enqueued(r, 808, 811, 807) for r in range(4)]
    matches, v = verdict(knowledge, lines)
    assert matches[0].slug == "nccl-watchdog-timeout" and v is None


def test_the_first_rank_to_signal_the_flight_recorder_dump_is_not_accused(knowledge: Knowledge) -> None:
    # As in hiyouga/LlamaFactory#8261: the rank whose watchdog fired first waited longest; it is a victim.
    lines = [watchdog(r, 12) for r in range(4)]
    lines += ["[rank1]:[E1130 02:23:19.811412 1234 ProcessGroupNCCL.cpp:1683] [PG ID 0 PG GUID 0(default_pg) Rank 1] First PG on this rank to signal dumping."]
    lines += [f"[rank{r}]:[E1130 02:23:20.1 1234 ProcessGroupNCCL.cpp:1721] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Observed flight recorder dump signal from another rank via TCPStore." for r in (0, 2, 3)]
    _, v = verdict(knowledge, lines)
    assert v is None


def test_process_groups_are_compared_apart(knowledge: Knowledge) -> None:
    # Data-parallel group 1 is stuck at its SeqNum 40; the default group's SeqNum 900 is another count.
    lines = [enqueued(r, 40, 41, 39, pg="PG 1") for r in (0, 1)] + [watchdog(r, 40) for r in (0, 1)]
    lines[-2] = lines[-2].replace("[Rank 0]", "[PG 1 Rank 0]")
    lines[-1] = lines[-1].replace("[Rank 1]", "[PG 1 Rank 1]")
    lines += [enqueued(2, 900, 900, 899, pg="PG 0")]
    _, v = verdict(knowledge, lines)
    assert v is None  # rank 2's 900 is in another group: not "behind" group 1's 40


def test_the_scanner_stays_bounded() -> None:
    scan = RankScanner()
    for start in range(0, 300_000, 1000):
        scan.feed("".join(f"[rank{r}]: [Rank {r}] last enqueued work: 5, last completed work: 4\n" for r in range(start, start + 1000)).encode())
    scan.close()
    assert len(scan.ranks) <= 100_000
    assert all(len(st.lines) <= 4 for st in scan.ranks.values())


def test_ray_prefixes_give_the_global_rank_not_the_group_one(knowledge: Knowledge) -> None:
    # As in TideDra/lmm-r1#67: "(ActorModelRayActor pid=744, ip=...) [rank9]: ... [PG ID 1 PG GUID 2 Rank 1]"
    lines = [
        f"(ActorModelRayActor pid={700 + r}, ip=10.1.59.27) [rank{r}]:[E416 13:21:26.967555843 ProcessGroupNCCL.cpp:1785] "
        f"[PG ID 1 PG GUID 2 Rank {r - 8}] Exception (either an error or timeout) detected by watchdog at work: 876319, "
        f"last enqueued NCCL work: {876319 if r != 11 else 876318}, last completed NCCL work: 876318. [repeated 6x across cluster]"
        for r in range(8, 12)
    ]
    lines += [watchdog(r, 876319, "BROADCAST").replace(f"[rank{r}]:", f"(ActorModelRayActor pid={700 + r}, ip=10.1.59.27) [rank{r}]:") for r in (8, 9, 10)]
    _, v = verdict(knowledge, lines)
    assert v is not None and v.rank == 11 and "last enqueued work was 876318" in v.reason


def test_ranks_without_a_launcher_prefix(knowledge: Knowledge) -> None:
    # As in ai2cm/ace#348: "[E ProcessGroupNCCL.cpp:457] [Rank 3] Watchdog caught ..." and no world size: nobody is named.
    lines = [f"[E ProcessGroupNCCL.cpp:457] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1132079, "
             "OpType=ALLREDUCE, NumelIn=304640, NumelOut=304640, Timeout(ms)=1800000) ran for 1800035 milliseconds before timing out."
             for r in (3, 2, 1)]
    matches, v = verdict(knowledge, lines)
    assert matches[0].slug == "nccl-watchdog-timeout" and v is None


BLAME = ("[rank{w}]: RuntimeError: Rank {w} successfully reached monitoredBarrier, but received errors while waiting for send/recv from "
         "rank 0. Please check rank 0 logs for faulty rank.")


def test_the_barrier_coordinator_naming_ranks_comes_first(knowledge: Knowledge) -> None:
    # As in NVIDIA/nccl#849: rank 0 says a whole node never arrived; the verdict names the first and lists the rest.
    lines = ["RuntimeError: [Rank 0]: Ranks 4, 5, 6, 7 failed to pass monitoredBarrier in 2000000 ms"]
    _, v = verdict(knowledge, lines)
    assert v is not None and v.rank == 4 and "also named: 5-7" in v.reason and v.lines[0][:2] == ("-", 1)


def test_barrier_waiters_blame_the_coordinator_only_when_no_rank_printed_the_failure(knowledge: Knowledge) -> None:
    # As in huggingface/trl#2923: ranks 1-3 wait for rank 0, which printed nothing.
    lines = [BLAME.format(w=w) for w in (3, 2, 1)]
    _, v = verdict(knowledge, lines)
    assert v is not None and v.rank == 0 and "ranks 1-3 reached the barrier and wait for rank 0" in v.reason
    # A rank that printed the failure itself outranks the waiters' blame of the coordinator.
    matches, v = verdict(knowledge, ["[rank2]: Traceback (most recent call last):", f"[rank2]: {OOM}"] + [BLAME.format(w=w) for w in (3, 1)])
    assert matches[0].slug == "cuda-out-of-memory" and v is not None and v.rank == 2


def test_horovod_stall_reports_name_the_missing_rank(knowledge: Knowledge) -> None:
    # Old format (horovod/horovod#1012) and the stall inspector's block (horovod/horovod#1442), behind mpirun's prefix.
    old = ["[1,0]<stderr>:Stalled ops:HorovodBroadcast_dense_1_bias_0 [missing ranks: 1]",
           "[1,0]<stderr>:[2019-04-13 13:57:31.866068: W horovod/common/operations.cc:588] HorovodBroadcast_dense_kernel_0 [missing ranks: 1]"]
    _, v = verdict(knowledge, old)
    assert v is not None and v.rank == 1
    block = ["[1,0]<stderr>:Stalled ranks:", "[1,0]<stderr>:6: [horovod_allreduce.0, horovod_allreduce.1 ...]",
             "[1,0]<stderr>:[2019-10-09 15:39:43.597436: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted"]
    _, v = verdict(knowledge, block)
    assert v is not None and v.rank == 6 and v.lines[0][:2] == ("-", 2)
    # A "N: [" line outside a stall block names nobody.
    _, v = verdict(knowledge, ["[1,0]<stderr>:6: [horovod_allreduce.0]"])
    assert v is None


def test_lightning_member_lines_give_the_world_size(knowledge: Knowledge) -> None:
    # As in IGNF/myria3d#123: rank 0 prepares data, ranks 1 and 2 time out; Lightning said there are 3.
    init = [f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/3" for r in range(3)]
    timeouts = [f"[E ProcessGroupNCCL.cpp:475] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, "
                "NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800008 milliseconds before timing out." for r in (1, 2)]
    _, v = verdict(knowledge, init + timeouts)
    assert v is not None and v.rank == 0 and "reported no timeout" in v.reason
    _, v = verdict(knowledge, timeouts)
    assert v is None


MPIRUN_NCCL_FAILURE = [
    "[1,5]<stdout>:node-6:3072:3085 [2] NCCL INFO comm 0x7f102434d0c0 rank 5 nranks 6 cudaDev 2 nvmlDev 2 - Init COMPLETE",
    "[1,3]<stdout>:node-6:3070:3090 [0] include/shm.h:42 NCCL WARN Cuda failure 'invalid argument'",
    "[1,3]<stdout>:node-6:3070:3090 [0] NCCL INFO transport/shm.cc:101 -> 1",
]


def test_mpirun_prefixes_and_the_rank_own_nccl_line_give_rank_and_host(knowledge: Knowledge) -> None:
    # As in horovod/horovod#1122: "[1,3]<stdout>:" is Open MPI's tag for rank 3; its own NCCL line names its host.
    matches, v = verdict(knowledge, MPIRUN_NCCL_FAILURE)
    assert matches and matches[0].role == "initiating" and v is not None
    assert v.rank == 3 and v.host == "node-6"
    # A coordinator's line naming a rank is not that rank's own: it gives no host.
    _, v = verdict(knowledge, ["[1,0]<stderr>:node-1:7617:7635 [0] NCCL INFO Stalled ops:x [missing ranks: 1]"])
    assert v is not None and v.rank == 1 and v.host is None


def scenario_logs() -> dict[str, str]:
    """Every scenario above as one log text, for the browser engine's parity test."""
    init = [f"node-{1 + r // 4}:5211{r}:5281{r} [{r % 4}] NCCL INFO comm 0x55d0c3f0 rank {r} nranks 8 cudaDev {r % 4} busId 1b000 - Init COMPLETE"
            for r in range(8)]
    root = ["Root Cause (first observed failure):", "[0]:", "  time      : 2025-06-26_06:24:45",
            "  host      : node-1", "  rank      : 0 (local_rank: 0)", "  exitcode  : -6 (pid: 80746)"]
    logs = {
        "oom_under_timeouts": ["[rank2]: Traceback (most recent call last):", f"[rank2]: {OOM}"]
        + [watchdog(r, 808) for r in (0, 1, 3)] + [enqueued(r, 808, 811, 807) for r in (0, 1, 3)] + root,
        "behind": [watchdog(r, 1580) for r in (0, 1, 3)] + [enqueued(r, 1580, 1582, 1579) for r in (0, 1, 3)] + [enqueued(2, 1579, 1579, 1578)],
        "lagging": [watchdog(r, 2070) for r in (0, 1, 2, 4, 5, 6, 7)] + [watchdog(3, 2069, "BROADCAST")],
        "silent_with_world": init + [watchdog(r, 5) for r in range(8) if r != 6],
        "silent_without_world": [watchdog(r, 5) for r in range(8) if r != 6],
        "all_stuck": [watchdog(r, 808) for r in range(4)] + [enqueued(r, 808, 811, 807) for r in range(4)],
        "first_dump": [watchdog(r, 12) for r in range(4)]
        + ["[rank1]:[E1130 02:23:19.811412 1234 ProcessGroupNCCL.cpp:1683] [PG ID 0 PG GUID 0(default_pg) Rank 1] First PG on this rank to signal dumping."],
        "root_cause_agrees": ["\x1b[31m[rank0]: " + OOM + "\x1b[0m\r"] + [watchdog(r, 9) for r in (1, 2, 3)] + root,
        "barrier_coordinator": ["RuntimeError: [Rank 0]: Ranks 4, 5, 6, 7 failed to pass monitoredBarrier in 2000000 ms"],
        "barrier_waiters": [BLAME.format(w=w) for w in (3, 2, 1)] + root,
        "barrier_waiters_and_oom": ["[rank2]: Traceback (most recent call last):", f"[rank2]: {OOM}"] + [BLAME.format(w=w) for w in (3, 1)],
        "horovod_missing": ["[1,0]<stderr>:Stalled ops:HorovodBroadcast_dense_1_bias_0 [missing ranks: 1]"],
        "horovod_stalled_block": ["[1,0]<stderr>:Stalled ranks:", "[1,0]<stderr>:6: [horovod_allreduce.0 ...]", "[1,0]<stderr>:done"],
        "mpirun_nccl_failure": MPIRUN_NCCL_FAILURE,
        "coordinator_line_no_host": ["[1,0]<stderr>:node-1:7617:7635 [0] NCCL INFO Stalled ops:x [missing ranks: 1]"],
        "lightning_world": [f"Initializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/3" for r in range(3)]
        + [watchdog(r, 3) for r in (1, 2)],
    }
    return {name: "\n".join(lines) + "\n" for name, lines in logs.items()}
