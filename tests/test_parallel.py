"""core.parallel.start_parallel: one call run beside the caller, in a forked process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from generator.core.parallel import start_parallel, worker_count

ROOT = Path(__file__).resolve().parent.parent


def _pid_plus(n: int) -> tuple[int, int]:
    return os.getpid(), n + 1


def _fails(n: int) -> int:
    raise ValueError(f"bad {n}")


def test_start_parallel_returns_or_raises_the_calls_outcome() -> None:
    assert start_parallel(_pid_plus, 41)()[1] == 42
    assert start_parallel(_pid_plus, 1, jobs=1)() == (os.getpid(), 2)  # one job: in this process, when asked
    with pytest.raises(ValueError, match="bad 3"):
        start_parallel(_fails, 3)()


@pytest.mark.skipif(worker_count() < 2, reason="one core: the call runs in the caller")
def test_start_parallel_forks_when_it_can() -> None:
    # In a fresh interpreter: here other tests' threads may be running, and then it does not fork.
    script = (
        "import os\n"
        "from generator.core.parallel import start_parallel\n"
        "def who(): return os.getpid()\n"
        "print(start_parallel(who)() != os.getpid())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
