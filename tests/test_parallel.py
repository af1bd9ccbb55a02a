"""core.parallel.start_parallel: one call run beside the caller, in a forked process."""

from __future__ import annotations

import os

import pytest

from generator.core.parallel import start_parallel, worker_count


def _pid_plus(n: int) -> tuple[int, int]:
    return os.getpid(), n + 1


def _fails(n: int) -> int:
    raise ValueError(f"bad {n}")


def test_start_parallel_runs_the_call_in_another_process_and_returns_or_raises_its_outcome() -> None:
    waiting = start_parallel(_pid_plus, 41)
    pid, value = waiting()
    assert value == 42
    if worker_count() > 1:
        assert pid != os.getpid()  # forked: it ran beside the caller
    assert start_parallel(_pid_plus, 1, jobs=1)() == (os.getpid(), 2)  # one job: in this process, when asked
    with pytest.raises(ValueError, match="bad 3"):
        start_parallel(_fails, 3)()
